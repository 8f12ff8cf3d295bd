import { stat } from 'node:fs/promises';
import type { Llama, LlamaCompletion, LlamaContext, LlamaContextSequence, LlamaModel } from 'node-llama-cpp';
import { LlamaLoadError, LlamaModelReleasedError, RUNTIME, classifyLoadFailure } from './errors';
import type { ModelRuntime } from './glue';
import { kvBytesPerToken } from './kv-cache';
import { LoadFailure, loadLogOf } from './load-log';
import { LLAMA_ATTR } from './definition';
import type { GgufSource, LlamaLoadInfo, LlamaMonitorOptions } from './types';

/** One context sequence with the completion object bound to it; a generation holds it from start to end. */
export interface SequenceEntry {
  readonly sequence: LlamaContextSequence;
  readonly completion: LlamaCompletion;
  busy: boolean;
}

/** A loaded model, its context and that context's sequences; the host disposes a retired one after its last generation. */
export class Slot {
  private readonly free: SequenceEntry[];
  /** A generation has run on this context: until then its KV cache has no usage to judge. */
  used = false;

  constructor(
    readonly model: LlamaModel,
    readonly context: LlamaContext,
    readonly entries: readonly SequenceEntry[],
    readonly info: LlamaLoadInfo,
  ) {
    this.free = entries.slice();
  }

  /** The queue runs at most `sequences` generations at once, so a started one always finds a free sequence. */
  acquire(): SequenceEntry {
    const entry = this.free.pop();
    if (!entry)
      throw new Error(
        `llama: no free sequence in the context of "${this.info.path}" (queue concurrency above sequences?)`,
      );
    entry.busy = true;
    this.used = true;
    return entry;
  }

  giveBack(entry: SequenceEntry): void {
    entry.busy = false;
    this.free.push(entry);
  }

  /** Tokens held in the KV cache, summed over the sequences. */
  tokens(): number {
    let sum = 0;
    for (const entry of this.entries) sum += entry.sequence.nextTokenIndex;
    return sum;
  }

  /** Tokens held by the sequences a generation is running on (an idle sequence's prefix is not in use). */
  activeTokens(): number {
    let sum = 0;
    for (const entry of this.entries) if (entry.busy) sum += entry.sequence.nextTokenIndex;
    return sum;
  }

  capacity(): number {
    return this.context.contextSize * this.entries.length;
  }

  async dispose(): Promise<void> {
    await this.context.dispose();
    await this.model.dispose();
  }
}

/**
 * How node-llama-cpp opens and frees a model: the model and its context are made inside one timed
 * `model_load` (the model serves only once both exist). The load, swap and release lifecycle is core's
 * ModelHost.
 */
export function llamaRuntime(llama: Llama, options: LlamaMonitorOptions): ModelRuntime<Slot, GgufSource> {
  const sequences = options.sequences ?? 1;
  return {
    name: RUNTIME,
    closeErrorSource: 'llama.dispose',
    async attributes(source) {
      const attributes: Record<string, string | number | boolean> = {
        [LLAMA_ATTR.runtime]: 'node-llama-cpp',
        [LLAMA_ATTR.gpu]: String(llama.gpu),
        [LLAMA_ATTR.sequences]: sequences,
      };
      if (typeof source === 'string') {
        const size = await fileSize(source);
        if (size !== null) attributes[LLAMA_ATTR.fileSize] = size;
      }
      return attributes;
    },
    async open(source, { model: name, kind, generation }) {
      const path = typeof source === 'function' ? await source() : source;
      let progress: number | null = null;
      const onLoadProgress = options.loadOptions?.onLoadProgress;
      const startedAt = performance.now();
      let model: LlamaModel;
      try {
        model = await loadLogOf(llama).run(
          () =>
            llama.loadModel({
              ...options.loadOptions,
              modelPath: path,
              onLoadProgress(fraction) {
                progress = fraction;
                onLoadProgress?.(fraction);
              },
            }),
          (error) => classifyLoadFailure(error, null) === 'unknown',
        );
      } catch (failure) {
        const { error, detail } = failure instanceof LoadFailure ? failure : { error: failure, detail: null };
        throw new LlamaLoadError(name, kind, classifyLoadFailure(error, detail), detail, { cause: error });
      }
      const loadedAt = performance.now();
      let context: LlamaContext;
      try {
        context = await model.createContext({ ...options.contextOptions, sequences });
      } catch (error) {
        await model.dispose().catch(() => undefined);
        throw new LlamaLoadError(name, kind, 'context', null, { cause: error });
      }
      const entries: SequenceEntry[] = [];
      for (let i = 0; i < sequences; i++) {
        const sequence = context.getSequence();
        entries.push({
          sequence,
          completion: new llama.classes.LlamaCompletion({ contextSequence: sequence }),
          busy: false,
        });
      }
      const info: LlamaLoadInfo = {
        kind,
        generation,
        path,
        fileBytes: await fileSize(path),
        modelSeconds: (loadedAt - startedAt) / 1000,
        contextSeconds: (performance.now() - loadedAt) / 1000,
        progress,
        gpu: llama.gpu,
        gpuLayers: model.gpuLayers,
        contextSize: context.contextSize,
        sequences,
        kvBytesPerToken: kvBytesPerToken(model, context),
      };
      return new Slot(model, context, entries, info);
    },
    close: (slot) => slot.dispose(),
    loadError: (error, { model, kind }) =>
      new LlamaLoadError(model, kind, classifyLoadFailure(error, null), null, { cause: error }),
    releasedError: (model) => new LlamaModelReleasedError(model),
  };
}

function fileSize(path: string): Promise<number | null> {
  return stat(path).then(
    (s) => s.size,
    () => null,
  );
}
