import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { getLlama, type Llama } from 'node-llama-cpp';
import type { MonitorOptions } from '@infersignal/core';
import { createLlamaModel, type LlamaMonitorOptions, type MonitoredLlamaModel } from '@infersignal/llama';
import { afterAll, beforeAll } from 'vitest';
import { writeGguf, type GgufOptions } from '../../../scripts/make-gguf';
import { testMonitor } from '../../../test/support/monitor';

export { gate, until } from '../../../test/support/async';

/** Context settings of every test: 256 tokens per sequence, one thread (on 2 cores, 1 thread is ~300× faster than 4). */
export const CONTEXT = { contextSize: 256, threads: 1 } as const;

/** KV bytes per token of the generated model: 2 layers × (K + V) × 64 values × 2 bytes (llama.cpp's F16 cache). */
export const KV_BYTES_PER_TOKEN = 2 * 2 * 64 * 2;

/** A temporary folder of generated models, removed by `cleanup()`. */
export function models() {
  const dir = mkdtempSync(join(tmpdir(), 'infersignal-llama-'));
  let n = 0;
  return {
    dir,
    write(options: GgufOptions = {}): string {
      return writeGguf(join(dir, `model-${n++}.gguf`), options);
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The CPU build on one thread; llama.cpp's log kept for the test to read. */
export async function cpuLlama(): Promise<{ llama: Llama; log: string[] }> {
  const log: string[] = [];
  const llama = await getLlama({
    gpu: false,
    build: 'never',
    maxThreads: 1,
    logger: (level, message) => log.push(`${level}: ${message}`),
  });
  return { llama, log };
}

/**
 * `llama.dispose()`, bounded: node-llama-cpp 3.21.1 never settles it once a model whose load llama.cpp
 * rejected has been garbage-collected (a prevent-disposal handle is left behind; see packages/llama/README.md).
 */
export async function disposeLlama(llama: Llama): Promise<void> {
  await Promise.race([llama.dispose(), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
}

/** A garbage collection now (the flag set at run time: no `--expose-gc` on the test runner needed). */
export function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Core's test monitor (manual clock, manual tick) unless options say otherwise. */
export function monitorFor(options: MonitorOptions = {}) {
  return testMonitor(options);
}

export const QUEUE_WAIT = 'infersignal.queue.wait.duration';
export const REQUESTS = 'infersignal.requests';
export const STREAMS = 'infersignal.streams';
export const STREAM_TOKENS = 'infersignal.stream.tokens';
export const TTFT = 'gen_ai.server.time_to_first_token';
export const TPOT = 'gen_ai.server.time_per_output_token';
export const MODEL = 'gen_ai.request.model';

/**
 * One Llama and one generated printable model for a test file (made in beforeAll, disposed in afterAll),
 * and `open()`, which serves it on a test monitor with 2 sequences; `defaults` are the file's own options.
 */
export function servedModel(defaults: Partial<LlamaMonitorOptions>) {
  const dir = models();
  const state = { llama: undefined as unknown as Llama, path: '' };
  beforeAll(async () => {
    ({ llama: state.llama } = await cpuLlama());
    state.path = dir.write({ printable: true });
  });
  afterAll(async () => {
    await state.llama.dispose();
    dir.cleanup();
  });
  const open = (t: ReturnType<typeof monitorFor>, options = {}): Promise<MonitoredLlamaModel> =>
    createLlamaModel(t.monitor, 'tiny', state.path, {
      llama: state.llama,
      sequences: 2,
      contextOptions: CONTEXT,
      ...defaults,
      ...options,
    });
  return { open, state };
}
