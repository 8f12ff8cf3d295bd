import type { MemoryInfo, NamedTensorMap, Tensor, io } from '@tensorflow/tfjs-core';
import type { QueueTracker } from '@infersignal/core';
import type { QueueOption } from '@infersignal/core/signals';
import type { LeakDetectorOptions, TensorLeakDetector } from './leak';

export type ModelInput = Tensor | Tensor[] | NamedTensorMap;
export type ModelOutput = Tensor | Tensor[] | NamedTensorMap;

/**
 * The model surface this package calls: both `LayersModel` and `GraphModel`
 * fit it, and so does any object with `predict` and `dispose`.
 */
export interface TfModelLike {
  predict(inputs: unknown, config?: unknown): ModelOutput;
  dispose(): unknown;
  execute?(inputs: unknown, outputs?: string | string[]): Tensor | Tensor[];
  executeAsync?(inputs: unknown, outputs?: string | string[]): Promise<Tensor | Tensor[]>;
}

/**
 * The part of the TensorFlow.js module this package uses (`@tensorflow/tfjs`,
 * `@tensorflow/tfjs-node`, `@tensorflow/tfjs-node-gpu`, or tfjs-core plus
 * the converter/layers packages).
 */
export interface TfRuntime {
  memory(): MemoryInfo;
  getBackend(): string;
  loadLayersModel?(source: string | io.IOHandler, options?: io.LoadOptions): Promise<TfModelLike>;
  loadGraphModel?(source: string | io.IOHandler, options?: io.LoadOptions): Promise<TfModelLike>;
}

/** A URL (`file://`, `http://`, `indexeddb://` …) or an IOHandler (e.g. `fileSystemHandler(path)`). */
export type TfModelSource = string | io.IOHandler;

/**
 * The runtime wrappers' options dialect: `queue` as in every adapter; the
 * model is named by the loader's argument.
 */
export interface TfModelOptions {
  /**
   * The queue calls go through: a name, a tracker to share, or
   * `{ name, capacity, concurrency, maxWaiting }`. Default `tfjs:<name>`
   * with concurrency 1 and core's capacity; calls reject with core's
   * QueueFullError past `maxWaiting`.
   */
  queue?: QueueOption;
  /** Passed to `tf.loadLayersModel` / `tf.loadGraphModel`. */
  loadOptions?: io.LoadOptions;
  /** Tensor-leak detector options, or false to switch it off (default on). */
  leak?: false | Omit<LeakDetectorOptions, 'model'>;
}

export interface MonitoredTfModel<M extends TfModelLike = TfModelLike> {
  readonly name: string;
  /** The model serving now (changes on reload; do not dispose it yourself). */
  readonly model: M;
  readonly queue: QueueTracker;
  readonly leak: TensorLeakDetector | null;
  /** 1 for the first load, +1 per successful reload. */
  readonly generation: number;
  readonly pending: number;
  readonly released: boolean;
  /** `model.predict` through the queue. The caller owns (and disposes) the result. */
  predict(inputs: ModelInput, config?: unknown): Promise<ModelOutput>;
  /** `model.execute` (graph models) through the queue. */
  execute(inputs: ModelInput, outputs?: string | string[]): Promise<Tensor | Tensor[]>;
  /** `model.executeAsync` (graph models with control flow) through the queue. */
  executeAsync(inputs: ModelInput, outputs?: string | string[]): Promise<Tensor | Tensor[]>;
  /** Loads the new model while the current one serves, swaps, disposes the old one after its running calls. */
  reload(source: TfModelSource): Promise<void>;
  /** Stops taking calls, waits for accepted ones, disposes the model. Idempotent. */
  release(): Promise<void>;
}
