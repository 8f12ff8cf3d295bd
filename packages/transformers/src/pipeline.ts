import {
  InferSignalConfigError,
  QueueFullError,
  type Monitor,
  type Outcome,
  type QueueTracker,
  type StreamOutcome,
  type Ticket,
} from '@infersignal/core';
import {
  fieldOrDefault,
  ModelHost,
  checkOptionKeys,
  checkQueueOption,
  resolveQueue,
  type ModelRuntime,
} from '@infersignal/core/signals';
import { TRANSFORMERS_ATTR } from './attributes';
import { PipelineLoadError, PipelineReleasedError, RUNTIME_NAME, classifyPipelineError } from './errors';
import {
  type Streamer,
  type Tally,
  type Tap,
  abortCriterion,
  observingStreamer,
  tapTokenizer,
  withCriterion,
} from './observe';
import type {
  AllTasks,
  CreatePipelineOptions,
  MonitoredPipeline,
  PipelineInput,
  PipelineKwargs,
  PipelineLoadInfo,
  PipelineOutput,
  PipelineType,
  RunOptions,
  TransformersRuntime,
} from './types';

/** The parts of a transformers.js pipeline this wrapper touches. */
interface Pipe {
  (input: unknown, kwargs?: unknown): Promise<unknown>;
  tokenizer?: unknown;
  model?: { sessions?: Record<string, { config?: { device?: unknown; dtype?: unknown } }> };
  dispose?(): Promise<void>;
}

/** One loaded pipeline; the host disposes a retired one after its last call. */
interface Slot {
  pipe: Pipe;
  info: PipelineLoadInfo;
  tap: Tap;
}

/** Tasks whose pipelines call `generate()`, which takes a streamer and stopping criteria. */
const GENERATING = new Set(['text-generation', 'text2text-generation', 'summarization', 'translation']);

/**
 * Loads a transformers.js pipeline through `monitor.modelLoad` (kind `load`)
 * and returns one whose calls go through a core queue. A load failure is
 * recorded as an `error` outcome and thrown as PipelineLoadError (the
 * library's error as `cause`).
 */
export async function createPipeline<T extends PipelineType>(
  monitor: Monitor,
  name: string,
  task: T,
  modelId: string,
  options: CreatePipelineOptions = {},
): Promise<MonitoredPipeline<T>> {
  validate(name, task, modelId, options);
  const runtime = pipelineRuntime(monitor, options.runtime ?? (await importRuntime()), task, modelId, options);
  const host = await ModelHost.load(monitor, name, runtime, modelId);
  let queue: QueueTracker;
  try {
    // After the load, so a model that fails to load leaves no queue behind.
    queue = resolveQueue(monitor, options.queue, `transformers:${name}`, 'options.queue', { concurrency: 1 });
  } catch (error) {
    await host.release();
    throw error;
  }
  return new Monitored<T>(monitor, host, task, options, queue);
}

/**
 * How transformers.js builds and frees a pipeline; the load, swap and release lifecycle is core's ModelHost.
 * A load's source is a model id or local folder; undefined (`reload()`) is the one serving when the load starts.
 */
function pipelineRuntime(
  monitor: Monitor,
  runtime: TransformersRuntime,
  task: string,
  modelId: string,
  options: CreatePipelineOptions,
): ModelRuntime<Slot, string | undefined> {
  // Reloads run one at a time: a `reload()` reads the id the reload before it left serving.
  let serving = modelId;
  return {
    name: RUNTIME_NAME,
    closeErrorSource: 'transformers.dispose',
    attributes: () => ({ [TRANSFORMERS_ATTR.runtime]: 'transformers.js', [TRANSFORMERS_ATTR.task]: task }),
    async open(source, { kind, generation }) {
      const startedAt = performance.now();
      const id = source ?? serving;
      const pipe = (await runtime.pipeline(task, id, options.pipelineOptions)) as Pipe;
      const tap: Tap = { current: null };
      tapTokenizer(pipe.tokenizer, tap, (error) => monitor.internalError('transformers.tokens', error));
      const { device, dtype, sessions } = resolved(pipe);
      const seconds = (performance.now() - startedAt) / 1000;
      const info: PipelineLoadInfo = { kind, generation, task, modelId: id, device, dtype, sessions, seconds };
      return { pipe, info, tap };
    },
    resultAttributes: ({ info }) => ({
      [TRANSFORMERS_ATTR.device]: info.device,
      [TRANSFORMERS_ATTR.dtype]: info.dtype,
    }),
    close: (slot) => slot.pipe.dispose?.(),
    loadError: (error, { model, kind }) =>
      new PipelineLoadError(model, kind, classifyPipelineError(error), { cause: error }),
    releasedError: (model) => new PipelineReleasedError(model),
    swapped(next) {
      serving = next.info.modelId;
    },
  };
}

class Monitored<T extends PipelineType> implements MonitoredPipeline<T> {
  readonly name: string;
  private readonly label: string;
  private readonly generating: boolean;

  constructor(
    private readonly monitor: Monitor,
    private readonly host: ModelHost<Slot, string | undefined>,
    readonly task: T,
    private readonly options: CreatePipelineOptions,
    readonly queue: QueueTracker,
  ) {
    this.name = host.model;
    this.label = monitor.label('model', host.model);
    this.generating = GENERATING.has(task);
  }

  get pipeline(): AllTasks[T] {
    return this.host.current.pipe as unknown as AllTasks[T];
  }
  get loadInfo(): PipelineLoadInfo {
    return this.host.current.info;
  }
  get pending(): number {
    return this.host.pending;
  }
  get released(): boolean {
    return this.host.released;
  }

  async run(input: PipelineInput<T>, kwargs?: PipelineKwargs<T>, options?: RunOptions): Promise<PipelineOutput<T>> {
    const signal = options?.signal;
    if (this.options.shed) {
      const admission = this.queue.admit();
      if (!admission.admit) {
        this.queue.reject(this.label);
        throw new QueueFullError(this.queue.name, admission.retryAfterSeconds);
      }
    }
    const ticket = this.queue.enqueue(this.label);
    try {
      const result = await this.host.use(
        (slot) =>
          this.call(slot, ticket, input, kwargs as Record<string, unknown> | undefined, signal, options?.onUsage),
        (task) => this.queue.run(task, { ticket, signal }),
      );
      ticket.end('completed');
      return result as PipelineOutput<T>;
    } catch (error) {
      // A no-op where call() already ended the ticket.
      ticket.end(error instanceof PipelineReleasedError ? 'unavailable' : outcomeOf(error, signal));
      throw error;
    }
  }

  private async call(
    slot: Slot,
    ticket: Ticket,
    input: unknown,
    kwargs: Record<string, unknown> | undefined,
    signal: AbortSignal | undefined,
    onUsage: RunOptions['onUsage'],
  ): Promise<unknown> {
    // Aborted before it started: no stream was opened, so none is counted as interrupted.
    if (signal?.aborted) {
      ticket.end(outcomeOf(signal.reason, signal));
      throw signal.reason;
    }
    const tally: Tally = { batch: 0, inputTokens: 0, outputTokens: 0 };
    const stream = this.generating ? ticket.stream() : null;
    let args = kwargs;
    if (stream) {
      args = {
        ...kwargs,
        streamer: observingStreamer(stream, tally, kwargs?.streamer as Streamer | undefined),
      };
      if (signal) args.stopping_criteria = withCriterion(kwargs?.stopping_criteria, abortCriterion(signal));
    }
    let outcome: Outcome = 'error';
    try {
      // The tokenizer runs in the synchronous part of the call (see tapTokenizer).
      slot.tap.current = tally;
      let pending: Promise<unknown>;
      try {
        pending = slot.pipe(input, args);
      } finally {
        slot.tap.current = null;
      }
      const result = await pending;
      // A generation stopped by the signal returns what it had; the caller asked for it to end, so it rejects.
      if (signal?.aborted) throw signal.reason;
      outcome = 'completed';
      return result;
    } catch (error) {
      outcome = outcomeOf(error, signal);
      throw error;
    } finally {
      if (tally.batch > 0)
        ticket.setAttributes({
          [TRANSFORMERS_ATTR.batchSize]: tally.batch,
          [TRANSFORMERS_ATTR.inputTokens]: tally.inputTokens,
        });
      if (stream) {
        ticket.setAttributes({ [TRANSFORMERS_ATTR.outputTokens]: tally.outputTokens });
        stream.end(outcome === 'completed' ? 'completed' : (outcome as StreamOutcome));
      }
      ticket.end(outcome);
      if (onUsage) {
        try {
          onUsage(tally);
        } catch (error) {
          this.monitor.internalError('transformers.onUsage', error);
        }
      }
    }
  }

  async reload(modelId?: string): Promise<PipelineLoadInfo> {
    if (modelId !== undefined && (typeof modelId !== 'string' || modelId === ''))
      throw new TypeError('@infersignal/transformers: reload(modelId) needs a non-empty model id or folder');
    return (await this.host.reload(modelId)).info;
  }

  release(): Promise<void> {
    return this.host.release();
  }
}

/** The device and dtype transformers.js put on each ONNX session it created (`session.config`). */
function resolved(pipe: Pipe): { device: string; dtype: string; sessions: string[] } {
  const sessions = pipe?.model?.sessions ?? {};
  const names = Object.keys(sessions);
  const devices = new Set<string>();
  const dtypes = new Set<string>();
  for (const key of names) {
    const config = sessions[key]?.config;
    if (config?.device !== undefined) devices.add(String(config.device));
    if (config?.dtype !== undefined) dtypes.add(String(config.dtype));
  }
  return {
    device: devices.size > 0 ? [...devices].join(',') : 'unknown',
    dtype: dtypes.size > 0 ? [...dtypes].join(',') : 'unknown',
    sessions: names,
  };
}

function outcomeOf(error: unknown, signal: AbortSignal | undefined): Outcome {
  if (error instanceof QueueFullError) return 'rejected';
  if (signal?.aborted)
    return (signal.reason as { name?: unknown } | null)?.name === 'TimeoutError' ? 'deadline_exceeded' : 'cancelled';
  return 'error';
}

async function importRuntime(): Promise<TransformersRuntime> {
  const mod = (await import('@huggingface/transformers')) as unknown as TransformersRuntime & {
    default?: TransformersRuntime;
  };
  return typeof mod.pipeline === 'function' ? mod : (mod.default as TransformersRuntime);
}

const OPTION_KEYS = ['runtime', 'pipelineOptions', 'queue', 'shed'];

/** Everything checked before the load, so a bad option does not cost one. */
function validate(name: unknown, task: unknown, modelId: unknown, options: CreatePipelineOptions): void {
  if (typeof name !== 'string' || name === '')
    throw new InferSignalConfigError('transformers.name', `must be a non-empty string, got ${JSON.stringify(name)}`);
  if (typeof task !== 'string' || task === '')
    throw new InferSignalConfigError(
      'transformers.task',
      `must be a pipeline task such as "feature-extraction", got ${JSON.stringify(task)}`,
    );
  if (typeof modelId !== 'string' || modelId === '')
    throw new InferSignalConfigError(
      'transformers.modelId',
      `must be a model id or local folder, got ${JSON.stringify(modelId)}`,
    );
  checkOptionKeys(options, OPTION_KEYS);
  if (options.runtime !== undefined && typeof options.runtime?.pipeline !== 'function')
    throw new InferSignalConfigError(
      'options.runtime',
      'must be the @huggingface/transformers module (pipeline missing)',
    );
  if (
    options.pipelineOptions !== undefined &&
    (typeof options.pipelineOptions !== 'object' || options.pipelineOptions === null)
  )
    throw new InferSignalConfigError('options.pipelineOptions', "must be an object (pipeline()'s options)");
  checkQueueOption(options.queue);
  if (options.shed !== undefined) fieldOrDefault('options.shed', options.shed, { type: 'boolean' }, false);
}
