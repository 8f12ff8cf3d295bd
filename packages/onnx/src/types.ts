import type * as ort from 'onnxruntime-node';
import type { DeviceMemoryHandle, QueueTracker } from '@infersignal/core';
import type { QueueOption } from '@infersignal/core/signals';

export type InferenceSession = ort.InferenceSession;
export type SessionOptions = ort.InferenceSession.SessionOptions;
export type RunOptions = ort.InferenceSession.RunOptions;
export type FeedsType = ort.InferenceSession.FeedsType;
export type FetchesType = ort.InferenceSession.FetchesType;
export type ReturnType = ort.InferenceSession.ReturnType;

/** The part of the `onnxruntime-node` module this package uses. */
export interface OrtRuntime {
  InferenceSession: {
    create(uri: string, options?: SessionOptions): Promise<InferenceSession>;
    create(buffer: Uint8Array, options?: SessionOptions): Promise<InferenceSession>;
  };
}

/**
 * Where a model comes from: a file path, the bytes, or a loader that
 * returns either (called inside the timed load, so slow storage shows up in
 * the load duration).
 */
export type ModelSource =
  | string
  | Uint8Array
  | ArrayBuffer
  | (() => Promise<string | Uint8Array | ArrayBuffer> | string | Uint8Array | ArrayBuffer);

/** Device memory sources (from `@infersignal/gpu` or your own). Omit on CPU: nothing is measured then. */
interface SessionMemoryOptions {
  /** Bytes in live allocations on the device; undefined when not measurable. */
  allocated?: () => number | undefined;
  /** Bytes this process holds on the device; undefined when not measurable. */
  reserved?: () => number | undefined;
  /** Sampling period (default core's 1000 ms). */
  intervalMs?: number;
  /** Source label (default `onnx:<model>`). */
  source?: string;
}

/**
 * The runtime wrappers' options dialect: `queue` as in every adapter; the
 * model is named by `createSession`'s argument.
 */
export interface CreateSessionOptions {
  /** The `onnxruntime-node` module; imported on first use when omitted. */
  runtime?: OrtRuntime;
  /** Passed to `InferenceSession.create` (execution providers, threads …), on load and reload. */
  sessionOptions?: SessionOptions;
  /**
   * The queue runs go through: a name, a tracker (e.g. one queue shared by
   * several sessions), or `{ name, capacity, concurrency, maxWaiting }`.
   * Default `onnx:<model>` with concurrency 1 (concurrent runs on one
   * session contend for the same threads) and core's capacity; `run()`
   * rejects with core's QueueFullError past `maxWaiting`.
   */
  queue?: QueueOption;
  /** Device memory sources; without them no device memory is reported. */
  deviceMemory?: SessionMemoryOptions;
}

/** What a load found out. No tensor data, ever. */
export interface LoadInfo {
  kind: 'load' | 'reload';
  /** 1 for the first load, +1 per successful reload. */
  generation: number;
  /** Bytes of the model file or buffer (null when a path could not be stat'ed). */
  fileBytes: number | null;
  source: 'path' | 'buffer' | 'loader';
  providersRequested: string[];
  /**
   * Providers the session was built with. onnxruntime-node has no API that
   * says which provider each node runs on; it throws when a requested
   * provider cannot be appended, so a successful create means every
   * requested provider was appended, with CPU as the fallback for the rest.
   */
  providersUsed: string[];
  /** Wall time of the load as seen by this wrapper. */
  seconds: number;
  inputNames: readonly string[];
  outputNames: readonly string[];
}

export interface MonitoredSession {
  readonly model: string;
  /** The session serving now (changes on reload; do not release it yourself). */
  readonly session: InferenceSession;
  readonly queue: QueueTracker;
  readonly loadInfo: LoadInfo;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  /** The device memory handle, or null when no source was given (CPU: nothing measured). */
  readonly deviceMemory: DeviceMemoryHandle | null;
  /** Runs accepted and not finished (waiting + running). */
  readonly pending: number;
  readonly released: boolean;
  /** Queued run: queue wait, inference duration, spans, backpressure. Errors from the runtime are rethrown unchanged. */
  run(feeds: FeedsType, fetches?: FetchesType | null, runOptions?: RunOptions): Promise<ReturnType>;
  /**
   * Loads a new model while the current one keeps serving, then swaps;
   * the old session is released once its running requests finish. On
   * failure the old session keeps serving and a ModelLoadError is thrown.
   */
  reload(source: ModelSource): Promise<LoadInfo>;
  /** Stops taking runs, waits for accepted ones, releases the sessions. Idempotent. */
  release(): Promise<void>;
}
