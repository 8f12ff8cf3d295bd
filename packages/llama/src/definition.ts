/**
 * The llama signal's definition: the metric and attribute names this package adds, in one place. The
 * signal (glue.ts) records through these specs; docs/metrics.md lists them from this definition.
 */
import { ATTR } from '@infersignal/core';
import { defineSignal } from '@infersignal/core/signals';

export const LLAMA_ATTR = {
  /** Why tokens left a sequence's context: `generation` (the context filled while generating) or `prompt` (the prompt did not fit). */
  shiftReason: 'infersignal.kv_cache.shift.reason',
  /** Request span: prompt tokens llama.cpp evaluated, i.e. the prompt minus the prefix the sequence already held. */
  evaluatedTokens: 'infersignal.llama.input_tokens.evaluated',
  /** OTel GenAI semconv span attribute: tokens generated. */
  outputTokens: 'gen_ai.usage.output_tokens',
  /** Load span: the runtime, the GGUF file size, llama.cpp's GPU type (`false` on CPU), context shape. */
  runtime: 'infersignal.model.runtime',
  fileSize: 'infersignal.model.file.size',
  gpu: 'infersignal.llama.gpu',
  sequences: 'infersignal.llama.sequences',
  contextSize: 'infersignal.llama.context.size',
} as const;

const metrics = {
  kvCacheShifts: {
    name: 'infersignal.kv_cache.shifts',
    type: 'counter',
    unit: '{shift}',
    description:
      'Times tokens were dropped from a sequence to make room: the context filled during generation (reason generation) or the prompt was longer than the context allows (reason prompt). Silent truncation: the answer no longer sees the start of its input.',
    attributes: [ATTR.model, LLAMA_ATTR.shiftReason],
  },
  kvCacheTokens: {
    name: 'infersignal.kv_cache.tokens',
    type: 'gauge',
    unit: '{token}',
    description: 'Tokens held in the KV cache of the serving context, summed over its sequences.',
    attributes: [ATTR.model],
  },
  kvCacheCapacity: {
    name: 'infersignal.kv_cache.capacity',
    type: 'gauge',
    unit: '{token}',
    description: 'Tokens the serving context can hold: context size per sequence × sequences.',
    attributes: [ATTR.model],
  },
} as const;

/** The KV-cache gauges and the context-shift counter of a llama.cpp model (`LlamaSignal` in glue.ts). */
export const llamaSignal = defineSignal({ name: 'llama', metrics });

export const LLAMA_METRICS = llamaSignal.metrics;
