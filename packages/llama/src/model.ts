import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel } from 'node-llama-cpp';
import { generate, type GenerationHooks } from './complete';
import { LlamaModelReleasedError } from './errors';
import {
  ATTR,
  ModelHost,
  QueueFullError,
  configError,
  llamaInstruments,
  outcomeOf,
  sequenceQueue,
  watchKvCache,
  type DeviceMemoryHandle,
  type LlamaInstruments,
  type Monitor,
  type QueueTracker,
  type Ticket,
} from './glue';
import { type Slot, llamaRuntime } from './slot';
import { watchVram } from './vram';
import type {
  CompleteOptions,
  CompletionInput,
  CompletionResult,
  GgufSource,
  KvCacheSnapshot,
  LlamaLoadInfo,
  LlamaMonitorOptions,
  MonitoredLlamaModel,
} from './types';

/**
 * Loads a GGUF model and its context through `monitor.modelLoad` (kind `load`) and serves generations on
 * the context's sequences through a core queue. A load failure is recorded as an `error` outcome and
 * thrown as LlamaLoadError with llama.cpp's reason.
 */
export async function createLlamaModel(
  monitor: Monitor,
  name: string,
  source: GgufSource,
  options: LlamaMonitorOptions = {},
): Promise<MonitoredLlamaModel> {
  validate(name, source, options);
  const owned = options.llama === undefined;
  const llama = options.llama ?? (await defaultLlama(options));
  const sequences = options.sequences ?? 1;
  const queue = sequenceQueue(
    monitor,
    {
      name: options.queueName ?? `llama:${name}`,
      concurrency: sequences,
      capacity: options.capacity,
      maxWaiting: options.maxWaiting,
    },
    options.queue,
  );
  let host: ModelHost<Slot, GgufSource> | undefined;
  try {
    host = await ModelHost.load(monitor, name, llamaRuntime(llama, options), source);
    return new MonitoredModel(monitor, llama, owned, options, queue, host);
  } catch (error) {
    await host?.release();
    if (owned) await disposeLlama(llama, monitor);
    throw error;
  }
}

class MonitoredModel implements MonitoredLlamaModel {
  readonly name: string;
  private readonly label: string;
  private readonly instruments: LlamaInstruments;
  private readonly unobserve: () => void;
  private readonly shifts = { generation: 0, prompt: 0 };
  private readonly hooks: GenerationHooks;
  readonly kvCacheMemory: DeviceMemoryHandle | null;
  readonly vramMemory: DeviceMemoryHandle | null;

  constructor(
    monitor: Monitor,
    readonly llama: Llama,
    ownsLlama: boolean,
    private readonly options: LlamaMonitorOptions,
    readonly queue: QueueTracker,
    private readonly host: ModelHost<Slot, GgufSource>,
  ) {
    const name = host.model;
    this.name = name;
    this.label = monitor.label('model', name);
    this.instruments = llamaInstruments(monitor);
    this.unobserve = this.instruments.watch({
      attributes: { [ATTR.model]: this.label },
      tokens: () => this.host.current.tokens(),
      capacity: () => this.host.current.capacity(),
      activeTokens: () => this.host.current.activeTokens(),
    });
    this.hooks = {
      done: ({ contextShifts, promptTruncated }) => {
        if (contextShifts > 0) {
          this.shifts.generation += contextShifts;
          this.instruments.shift(this.label, 'generation', contextShifts);
        }
        if (promptTruncated) {
          this.shifts.prompt++;
          this.instruments.shift(this.label, 'prompt', 1);
        }
      },
      internalError: (source, error) => monitor.internalError(source, error),
    };
    const kv = options.kvCache;
    this.kvCacheMemory =
      kv === false
        ? null
        : watchKvCache(
            monitor,
            {
              tokens: () => this.host.current.tokens(),
              capacity: () => this.host.current.capacity(),
              bytesPerToken: () => (this.host.current.used ? this.host.current.info.kvBytesPerToken : null),
            },
            { source: kv?.source ?? `llama-kv:${name}`, intervalMs: kv?.intervalMs },
          );
    this.vramMemory = options.vram === false || llama.gpu === false ? null : watchVram(monitor, llama, options.vram);
    host.onReleased(async () => {
      this.kvCacheMemory?.stop();
      this.vramMemory?.stop();
      this.unobserve();
      if (ownsLlama) await disposeLlama(llama, monitor);
    });
  }

  get model(): LlamaModel {
    return this.host.current.model;
  }
  get context(): LlamaContext {
    return this.host.current.context;
  }
  get loadInfo(): LlamaLoadInfo {
    return this.host.current.info;
  }
  get pending(): number {
    return this.host.pending;
  }
  get released(): boolean {
    return this.host.released;
  }

  async complete(input: CompletionInput, options: CompleteOptions = {}): Promise<CompletionResult> {
    const ticket = this.admit();
    this.tokenCost(ticket, input, options.maxTokens);
    const signal = options.signal;
    try {
      return await this.host.use(
        (slot) => generate(slot, ticket, input, options, this.hooks),
        (task) => this.queue.run(task, { ticket, signal }),
      );
    } catch (error) {
      // Ends a request that never reached the generation (queue full, aborted while waiting, released); a no-op otherwise.
      ticket.end(error instanceof LlamaModelReleasedError ? 'unavailable' : outcomeOf(error, signal));
      throw error;
    }
  }

  async withSequence<T>(
    fn: (sequence: LlamaContextSequence) => Promise<T> | T,
    options: { signal?: AbortSignal } = {},
  ): Promise<T> {
    const ticket = this.admit();
    const signal = options.signal;
    try {
      const result = await this.host.use(
        async (slot) => {
          const entry = slot.acquire();
          try {
            return await fn(entry.sequence);
          } finally {
            slot.giveBack(entry);
          }
        },
        (task) => this.queue.run(task, { ticket, signal }),
      );
      ticket.end('completed');
      return result;
    } catch (error) {
      ticket.end(error instanceof LlamaModelReleasedError ? 'unavailable' : outcomeOf(error, signal));
      throw error;
    }
  }

  /**
   * The request's prompt tokens (the serving model's tokenizer) and its max_tokens, for the queue's token
   * backlog; a failure to tokenize is counted, never thrown (the generation reports its own).
   */
  private tokenCost(ticket: Ticket, input: CompletionInput, maxTokens: number | undefined): void {
    try {
      const model = this.host.current.model;
      const prompt =
        typeof input === 'string'
          ? model.tokenize(input).length
          : Array.isArray(input)
            ? input.length
            : input.tokenize(model.tokenizer).length;
      ticket.setTokens(prompt, maxTokens);
    } catch (error) {
      this.hooks.internalError('llama.promptTokens', error);
    }
  }

  /** A ticket for a new request, or QueueFullError (counted `rejected`) when shedding at a critical level. */
  private admit(): Ticket {
    if (this.options.shed) {
      const admission = this.queue.admit();
      if (!admission.admit) {
        this.queue.reject(this.label);
        throw new QueueFullError(this.queue.name, admission.retryAfterSeconds);
      }
    }
    return this.queue.enqueue(this.label);
  }

  kvCache(): KvCacheSnapshot {
    const slot = this.host.current;
    const sequences = slot.entries.map((entry) => ({
      tokens: entry.sequence.nextTokenIndex,
      capacity: entry.sequence.contextSize,
      busy: entry.busy,
    }));
    const tokens = slot.tokens();
    const capacity = slot.capacity();
    return {
      tokens,
      capacity,
      usage: capacity > 0 ? tokens / capacity : 0,
      bytesPerToken: slot.info.kvBytesPerToken,
      sequences,
      shifts: { ...this.shifts },
    };
  }

  async reload(source: GgufSource): Promise<LlamaLoadInfo> {
    if (typeof source !== 'string' && typeof source !== 'function')
      throw new TypeError('@infersignal/llama: reload(source) needs a GGUF path or a function returning one');
    return (await this.host.reload(source)).info;
  }

  release(): Promise<void> {
    return this.host.release();
  }
}

/** How long `release()` waits for the Llama it made to dispose. */
const LLAMA_DISPOSE_MS = 2000;

/**
 * Disposes a Llama this package made, bounded: in node-llama-cpp 3.21.1 a load that llama.cpp rejects
 * (a missing tensor, a bad shape) leaves a prevent-disposal handle on the Llama, and once the failed
 * model object is garbage-collected `llama.dispose()` never settles. Past the bound it is counted as an
 * internal error and left to process exit.
 */
async function disposeLlama(llama: Llama, monitor: Monitor): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<true>((resolve) => {
    timer = setTimeout(() => resolve(true), LLAMA_DISPOSE_MS);
    timer.unref();
  });
  try {
    if (await Promise.race([llama.dispose().then(() => false), timedOut]))
      monitor.internalError(
        'llama.dispose',
        new Error(`llama.dispose() did not settle within ${LLAMA_DISPOSE_MS} ms (after a failed model load?)`),
      );
  } catch (error) {
    monitor.internalError('llama.dispose', error);
  } finally {
    clearTimeout(timer);
  }
}

async function defaultLlama(options: LlamaMonitorOptions): Promise<Llama> {
  const { getLlama } = await import('node-llama-cpp');
  // build: 'never': use the prebuilt binary; never compile llama.cpp (and fetch its sources) at run time.
  return getLlama({ build: 'never', ...options.llamaOptions });
}

function validate(name: string, source: GgufSource, options: LlamaMonitorOptions): void {
  if (typeof name !== 'string' || name === '') throw configError('llama.name', 'must be a non-empty string');
  if (typeof source !== 'string' && typeof source !== 'function')
    throw configError('llama.source', 'must be a GGUF file path or a function returning one');
  const { sequences } = options;
  if (sequences !== undefined && (!Number.isInteger(sequences) || sequences < 1))
    throw configError('llama.sequences', `must be an integer >= 1, got ${JSON.stringify(sequences)}`);
  if (options.llama !== undefined && typeof options.llama?.loadModel !== 'function')
    throw configError('llama.llama', 'must be a Llama instance from getLlama() (loadModel missing)');
  if (options.shed !== undefined && typeof options.shed !== 'boolean')
    throw configError('llama.shed', `must be a boolean, got ${JSON.stringify(options.shed)}`);
  for (const field of ['kvCache', 'vram'] as const) {
    const value = options[field];
    if (value !== undefined && value !== false && (typeof value !== 'object' || value === null))
      throw configError(`llama.${field}`, 'must be false or an options object');
  }
}
