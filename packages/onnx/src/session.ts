import { stat } from 'node:fs/promises';
import { InferSignalConfigError, type DeviceMemoryHandle, type Monitor, type QueueTracker } from '@infersignal/core';
import {
  ModelHost,
  checkOptionKeys,
  checkQueueOption,
  resolveQueue,
  type ModelRuntime,
} from '@infersignal/core/signals';
import { ONNX_ATTR } from './attributes';
import { ModelLoadError, SessionReleasedError, classifyLoadError } from './errors';
import { requestedProviders, usedProviders } from './providers';
import { resolveSource, sourceKind } from './source';
import type {
  CreateSessionOptions,
  FeedsType,
  FetchesType,
  InferenceSession,
  LoadInfo,
  ModelSource,
  MonitoredSession,
  OrtRuntime,
  ReturnType,
  RunOptions,
} from './types';

/** One loaded session; the host releases a retired one after its last run. */
interface Slot {
  session: InferenceSession;
  info: LoadInfo;
}

/**
 * Loads an ONNX model through `monitor.modelLoad` (kind `load`) and returns
 * a session whose runs go through a core queue. Load failures are recorded
 * as an `error` outcome and thrown as ModelLoadError (runtime error as `cause`).
 */
export async function createSession(
  monitor: Monitor,
  model: string,
  source: ModelSource,
  options: CreateSessionOptions = {},
): Promise<MonitoredSession> {
  validate(options);
  const host = await ModelHost.load(
    monitor,
    model,
    onnxRuntime(options.runtime ?? (await importRuntime()), options),
    source,
  );
  const queue = resolveQueue(monitor, options.queue, `onnx:${model}`, 'options.queue', { concurrency: 1 });
  const memory = options.deviceMemory;
  let handle: DeviceMemoryHandle | null = null;
  if (memory && (memory.allocated || memory.reserved)) {
    handle = monitor.deviceMemory({
      allocated: memory.allocated ?? noMeasure,
      reserved: memory.reserved ?? noMeasure,
      intervalMs: memory.intervalMs,
      source: memory.source ?? `onnx:${model}`,
    });
    host.onReleased(() => handle?.stop());
  }
  return new Session(host, queue, handle);
}

const noMeasure = (): undefined => undefined;

class Session implements MonitoredSession {
  readonly model: string;

  constructor(
    private readonly host: ModelHost<Slot, ModelSource>,
    readonly queue: QueueTracker,
    readonly deviceMemory: DeviceMemoryHandle | null,
  ) {
    this.model = host.model;
  }

  get session(): InferenceSession {
    return this.host.current.session;
  }
  get loadInfo(): LoadInfo {
    return this.host.current.info;
  }
  get inputNames(): readonly string[] {
    return this.host.current.session.inputNames;
  }
  get outputNames(): readonly string[] {
    return this.host.current.session.outputNames;
  }
  get pending(): number {
    return this.host.pending;
  }
  get released(): boolean {
    return this.host.released;
  }

  /** Runs on whichever session serves when the queue lets this run start: a run queued before a swap uses the new one. */
  run(feeds: FeedsType, fetches?: FetchesType | null, runOptions?: RunOptions): Promise<ReturnType> {
    return this.host.use(
      (slot) => (fetches ? slot.session.run(feeds, fetches, runOptions) : slot.session.run(feeds, runOptions)),
      (task) => this.queue.run(task, { model: this.model, attributes: batchAttributes(feeds) }),
    );
  }

  async reload(source: ModelSource): Promise<LoadInfo> {
    return (await this.host.reload(source)).info;
  }

  release(): Promise<void> {
    return this.host.release();
  }
}

/** How onnxruntime-node opens and frees a session; the load, swap and release lifecycle is core's ModelHost. */
function onnxRuntime(runtime: OrtRuntime, options: CreateSessionOptions): ModelRuntime<Slot, ModelSource> {
  const requested = requestedProviders(options.sessionOptions);
  return {
    name: 'ONNX',
    closeErrorSource: 'onnx.release',
    async attributes(source) {
      const attributes: Record<string, string | number | boolean> = {
        [ONNX_ATTR.runtime]: 'onnxruntime-node',
        [ONNX_ATTR.sourceKind]: sourceKind(source),
        [ONNX_ATTR.providersRequested]: requested.join(','),
        // Core copies these when the load span starts; what was used is only meaningful with outcome=success.
        [ONNX_ATTR.providersUsed]: usedProviders(requested).join(','),
      };
      if (typeof source === 'string') {
        const size = await stat(source).then(
          (s) => s.size,
          () => null,
        );
        if (size !== null) attributes[ONNX_ATTR.fileSize] = size;
      } else if (typeof source !== 'function') {
        attributes[ONNX_ATTR.fileSize] = source.byteLength;
      }
      return attributes;
    },
    async open(source, { kind, generation }) {
      const startedAt = performance.now();
      const resolved = await resolveSource(source);
      const session = await createFrom(runtime, resolved.input, options);
      const info: LoadInfo = {
        kind,
        generation,
        fileBytes: resolved.fileBytes,
        source: sourceKind(source),
        providersRequested: requested,
        providersUsed: usedProviders(requested),
        seconds: (performance.now() - startedAt) / 1000,
        inputNames: session.inputNames,
        outputNames: session.outputNames,
      };
      return { session, info };
    },
    close: (slot) => slot.session.release(),
    loadError: (error, { model, kind }) => new ModelLoadError(model, kind, classifyLoadError(error), { cause: error }),
    releasedError: (model) => new SessionReleasedError(model),
  };
}

function createFrom(
  runtime: OrtRuntime,
  input: string | Uint8Array,
  options: CreateSessionOptions,
): Promise<InferenceSession> {
  return typeof input === 'string'
    ? runtime.InferenceSession.create(input, options.sessionOptions)
    : runtime.InferenceSession.create(input, options.sessionOptions);
}

async function importRuntime(): Promise<OrtRuntime> {
  const mod = (await import('onnxruntime-node')) as unknown as OrtRuntime & { default?: OrtRuntime };
  return mod.InferenceSession ? mod : (mod.default as OrtRuntime);
}

const OPTION_KEYS = ['runtime', 'sessionOptions', 'queue', 'deviceMemory'];
const MEMORY_KEYS = ['allocated', 'reserved', 'intervalMs', 'source'];

/** Everything checked before the load, so a bad option does not cost one. */
function validate(options: CreateSessionOptions): void {
  checkOptionKeys(options, OPTION_KEYS);
  if (options.runtime !== undefined && typeof options.runtime?.InferenceSession?.create !== 'function') {
    throw new InferSignalConfigError(
      'options.runtime',
      'must be the onnxruntime-node module (InferenceSession.create missing)',
    );
  }
  if (
    options.sessionOptions !== undefined &&
    (typeof options.sessionOptions !== 'object' || options.sessionOptions === null)
  )
    throw new InferSignalConfigError('options.sessionOptions', 'must be an object (InferenceSession.SessionOptions)');
  checkQueueOption(options.queue);
  const memory = options.deviceMemory;
  if (memory !== undefined) {
    checkOptionKeys(memory, MEMORY_KEYS, 'options.deviceMemory');
    for (const key of ['allocated', 'reserved'] as const) {
      if (memory[key] !== undefined && typeof memory[key] !== 'function')
        throw new InferSignalConfigError(
          `options.deviceMemory.${key}`,
          'must be a function returning bytes (or undefined)',
        );
    }
  }
}

/** Batch size (first dimension of the first input) as a span attribute; shapes only, never tensor data. */
function batchAttributes(feeds: FeedsType): { 'infersignal.batch.size': number } | undefined {
  for (const name in feeds) {
    const dims = (feeds[name] as { dims?: readonly number[] }).dims;
    return dims && dims.length > 0 ? { 'infersignal.batch.size': dims[0] } : undefined;
  }
  return undefined;
}
