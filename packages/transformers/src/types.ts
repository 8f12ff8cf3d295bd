import type { AllTasks, PipelineType, PretrainedModelOptions } from '@huggingface/transformers';
import type { QueueTracker } from '@infersignal/core';
import type { QueueOption } from '@infersignal/core/signals';

export type { AllTasks, PipelineType };

/** The part of the `@huggingface/transformers` module this package uses. */
export interface TransformersRuntime {
  pipeline(task: string, model?: string, options?: PretrainedModelOptions): Promise<unknown>;
}

/**
 * The runtime wrappers' options dialect: `queue` and `shed` as in every
 * adapter; the model is named by `createPipeline`'s argument.
 */
export interface CreatePipelineOptions {
  /** The `@huggingface/transformers` module; imported on first use when omitted. */
  runtime?: TransformersRuntime;
  /**
   * Passed to `pipeline()` on load and reload: `device`, `dtype`,
   * `local_files_only`, `session_options` … Where models come from is the
   * library's `env` (set `env.allowRemoteModels = false` and
   * `env.localModelPath` to serve local folders only).
   */
  pipelineOptions?: PretrainedModelOptions;
  /**
   * The queue calls go through: a name, a tracker, or `{ name, capacity,
   * concurrency, maxWaiting }`. Default `transformers:<name>` with
   * concurrency 1 (concurrent calls on one pipeline contend for the same
   * onnxruntime threads) and core's capacity; `run()` rejects with core's
   * QueueFullError past `maxWaiting`.
   */
  queue?: QueueOption;
  /** Refuse a call (QueueFullError, counted `rejected`) while the queue's level is CRITICAL (default false). */
  shed?: boolean;
}

/** What a load found out. No tensor data, ever. */
export interface PipelineLoadInfo {
  kind: 'load' | 'reload';
  /** 1 for the first load, +1 per successful reload. */
  generation: number;
  task: string;
  /** The model id or local folder the pipeline was loaded from. */
  modelId: string;
  /** Device each ONNX session resolved to (`cpu`, `cuda`, `webgpu` …), as transformers.js chose it. */
  device: string;
  /** Data type each ONNX session resolved to (`fp32`, `q8`, `fp16` …). */
  dtype: string;
  /** ONNX sessions of the model (`model`, or `encoder_model` and `decoder_model_merged` …). */
  sessions: string[];
  /** Wall time of the load as seen by this wrapper. */
  seconds: number;
}

/** Per-call options of `run()`, apart from the pipeline's own. */
export interface RunOptions {
  /**
   * Cancels the call: while it waits in the queue, or, for a generating
   * pipeline, between two generated tokens (the generation stops and the
   * call rejects with the signal's reason; the stream counts as interrupted,
   * `cancelled`, or `deadline_exceeded` for an `AbortSignal.timeout`). Tie it
   * to the client's connection to count a closed client.
   */
  signal?: AbortSignal;
  /**
   * Called once when the call ends (also on failure), with what its
   * tokenizer output held and what it generated: for an API's `usage`
   * field, without tokenizing again. An error it throws is counted as an
   * internal error, never thrown into the call.
   */
  onUsage?(usage: CallUsage): void;
}

/** Rows and tokens of one call, read from the tokenizer output the pipeline computed. */
interface CallUsage {
  /** Rows of the tokenized input (0 when the pipeline ran no tokenizer in its synchronous part). */
  readonly batch: number;
  /** Tokens of the input, padding excluded. */
  readonly inputTokens: number;
  /** Tokens generated, summed over rows (0 for a pipeline that does not generate). */
  readonly outputTokens: number;
}

type Call<P> = P extends (...args: infer A) => infer R ? { args: A; result: R } : never;
/** The pipeline's input (texts …). */
export type PipelineInput<T extends PipelineType> = Call<AllTasks[T]>['args'][0];
/** The pipeline's own options (`pooling`, `top_k`, generation options with `streamer` …). */
export type PipelineKwargs<T extends PipelineType> = Call<AllTasks[T]>['args'][1];
export type PipelineOutput<T extends PipelineType> = Awaited<Call<AllTasks[T]>['result']>;

export interface MonitoredPipeline<T extends PipelineType = PipelineType> {
  /** The name the metrics carry (`gen_ai.request.model`). */
  readonly name: string;
  readonly task: T;
  /** The pipeline serving now (changes on reload; do not dispose it yourself). */
  readonly pipeline: AllTasks[T];
  readonly queue: QueueTracker;
  readonly loadInfo: PipelineLoadInfo;
  /** Calls accepted and not finished (waiting + running). */
  readonly pending: number;
  readonly released: boolean;
  /**
   * Queued call of the pipeline: queue wait, run time and outcome, batch
   * size and input tokens (from the tokenizer output the pipeline computed)
   * on the request's span; for a generating pipeline a stream with time to
   * first token and time per output token. Errors from the library are
   * rethrown unchanged.
   */
  run(input: PipelineInput<T>, kwargs?: PipelineKwargs<T>, options?: RunOptions): Promise<PipelineOutput<T>>;
  /**
   * Loads `modelId` (default: the current one) while the current pipeline
   * keeps serving, then swaps; the old one is disposed once its running
   * calls finish. On failure the old one keeps serving and a
   * PipelineLoadError is thrown. transformers.js memoizes a model id's
   * config and file list for the process: to serve changed files, reload
   * from a new folder.
   */
  reload(modelId?: string): Promise<PipelineLoadInfo>;
  /** Stops taking calls, waits for accepted ones, disposes the pipelines. Idempotent. */
  release(): Promise<void>;
}
