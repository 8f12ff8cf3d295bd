import type {
  Llama,
  LlamaCompletionGenerationOptions,
  LlamaCompletionResponse,
  LlamaContext,
  LlamaContextOptions,
  LlamaContextSequence,
  LlamaModel,
  LlamaModelOptions,
  LlamaOptions,
  LlamaText,
  Token,
} from 'node-llama-cpp';
import type { DeviceMemoryHandle, QueueTracker } from './glue';

/** A GGUF file path, or a function returning one (called inside the timed load: a download shows in its duration). */
export type GgufSource = string | (() => Promise<string> | string);

interface KvCacheWatchOptions {
  /** Sampling period (default core's 1000 ms; 0: sampled on `monitor.tick()` only). */
  intervalMs?: number;
  /** Source label (default `llama-kv:<model>`). */
  source?: string;
}

export interface VramWatchOptions {
  /** Refresh period of `getVramState()` / `getLlamaMemoryUsage()` (default 1000 ms). */
  intervalMs?: number;
  /** Source label (default `llama-vram`). */
  source?: string;
  /**
   * Reserved bytes from elsewhere, e.g. `@infersignal/gpu`'s per-process figure: `getVramState().used`
   * counts every process on the device.
   */
  reserved?: () => number | undefined;
}

export interface LlamaMonitorOptions {
  /** A Llama instance from `getLlama()`; when omitted one is made with `getLlama({ build: 'never', ...llamaOptions })`. */
  llama?: Llama;
  /** Options for the `getLlama()` call made when `llama` is omitted (e.g. `gpu`, `maxThreads`, `logLevel`). */
  llamaOptions?: LlamaOptions;
  /** Passed to `llama.loadModel()` on load and every reload (`gpuLayers`, `useMmap`, `onLoadProgress` …). */
  loadOptions?: Omit<LlamaModelOptions, 'modelPath'>;
  /** Passed to `model.createContext()` (`contextSize` per sequence, `threads`, `batchSize` …). */
  contextOptions?: Omit<LlamaContextOptions, 'sequences'>;
  /** Sequences of the context: generations that run at once (default 1). Each holds `contextSize` tokens. */
  sequences?: number;
  /** Requests (waiting + generating) the queue is sized for; occupancy = depth / capacity. Default core's. */
  capacity?: number;
  /** Generations waiting for a sequence before `complete()` rejects with core's QueueFullError. Default core's. */
  maxWaiting?: number;
  /** Refuse a generation with QueueFullError (and count it `rejected`) while the queue's level is critical (default false). */
  shed?: boolean;
  /** Queue name (default `llama:<model>`). */
  queueName?: string;
  /** Use this tracker instead of creating one; its concurrency must not exceed `sequences`. */
  queue?: QueueTracker;
  /** The KV cache as a device-memory source (default on; `false` to leave it out). */
  kvCache?: false | KvCacheWatchOptions;
  /** VRAM as a device-memory source when llama.cpp runs on a GPU (default on there; never on CPU). */
  vram?: false | VramWatchOptions;
}

/** What a load found out. */
export interface LlamaLoadInfo {
  kind: 'load' | 'reload';
  /** 1 for the first load, +1 per successful reload. */
  generation: number;
  path: string;
  /** Bytes of the GGUF file (null when it could not be stat'ed). */
  fileBytes: number | null;
  /** Seconds in `loadModel()` and in `createContext()`. */
  modelSeconds: number;
  contextSeconds: number;
  /** The last load progress node-llama-cpp reported (0–1), null when it reported none. */
  progress: number | null;
  /** llama.cpp's GPU type, `false` on CPU. */
  gpu: Llama['gpu'];
  gpuLayers: number;
  contextSize: number;
  sequences: number;
  /** KV-cache bytes per token (estimated from the model's metadata), null when unknown. */
  kvBytesPerToken: number | null;
}

interface SequenceKvCache {
  /** Tokens the sequence holds (`nextTokenIndex`); a finished generation's tokens stay for prefix reuse. */
  tokens: number;
  capacity: number;
  /** A generation runs on it now. */
  busy: boolean;
}

export interface KvCacheSnapshot {
  /** Tokens held, summed over the sequences. */
  tokens: number;
  /** Context size × sequences. */
  capacity: number;
  /** tokens / capacity. */
  usage: number;
  bytesPerToken: number | null;
  sequences: SequenceKvCache[];
  /** Context shifts during generation and prompts cut to fit, since this model was loaded. */
  shifts: { generation: number; prompt: number };
}

export type CompletionInput = string | Token[] | LlamaText;

export interface CompleteOptions extends LlamaCompletionGenerationOptions {
  /** Aborting (client gone, deadline) stops the wait or the generation and frees the sequence. */
  signal?: AbortSignal;
}

export interface CompletionResult extends LlamaCompletionResponse {
  /**
   * The sequence's token meter over this generation: prompt tokens evaluated (the prompt minus the prefix
   * the sequence already held from an earlier generation, plus re-evaluations after a context shift; the
   * meter counts the prompt's last token with the output) and tokens generated.
   */
  usage: { evaluatedTokens: number; outputTokens: number };
  /** Context shifts during this generation. */
  contextShifts: number;
  /** The prompt was longer than the context allows and lost its start. */
  promptTruncated: boolean;
}

export interface MonitoredLlamaModel {
  readonly name: string;
  readonly llama: Llama;
  /** The model and context serving now (they change on reload; do not dispose them yourself). */
  readonly model: LlamaModel;
  readonly context: LlamaContext;
  readonly queue: QueueTracker;
  readonly loadInfo: LlamaLoadInfo;
  /** Generations accepted and not finished (waiting + running). */
  readonly pending: number;
  readonly released: boolean;
  /** The KV-cache and VRAM device-memory handles (null when not registered). */
  readonly kvCacheMemory: DeviceMemoryHandle | null;
  readonly vramMemory: DeviceMemoryHandle | null;
  /**
   * A text completion on a free sequence: waits in the queue for one (queue wait), then streams tokens
   * (TTFT, time per output token, token count), counts context shifts, ends the request by outcome. The
   * runtime's errors are rethrown unchanged; an abort rejects with the signal's reason (as node-llama-cpp does).
   */
  complete(input: CompletionInput, options?: CompleteOptions): Promise<CompletionResult>;
  /** Any work on a free sequence (a `LlamaChat`, an evaluation), queued and timed like `complete()` without token accounting. */
  withSequence<T>(
    fn: (sequence: LlamaContextSequence) => Promise<T> | T,
    options?: { signal?: AbortSignal },
  ): Promise<T>;
  /** The KV cache of the serving context now. */
  kvCache(): KvCacheSnapshot;
  /**
   * Loads a new model and context while the current ones keep serving, then swaps; the old ones are
   * disposed after their last generation. On failure the old model keeps serving and LlamaLoadError is thrown.
   */
  reload(source: GgufSource): Promise<LlamaLoadInfo>;
  /** Stops taking work, waits for accepted generations, disposes context and model (and the Llama it made). Idempotent. */
  release(): Promise<void>;
}
