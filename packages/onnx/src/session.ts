import { stat } from 'node:fs/promises';
import type { DeviceMemoryHandle, Monitor, QueueTracker } from '@infersignal/core';
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

/** One loaded session and the runs using it, so a retired one is released after its last run. */
interface Slot {
  session: InferenceSession;
  info: LoadInfo;
  inFlight: number;
  retired: boolean;
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
  const runtime = options.runtime ?? (await importRuntime());
  const slot = await loadSlot(monitor, runtime, model, 'load', source, options, 1);
  const queue =
    options.queue ??
    monitor.queue(options.queueName ?? `onnx:${model}`, {
      concurrency: options.concurrency ?? 1,
      capacity: options.capacity,
      maxWaiting: options.maxWaiting,
    });
  const memory = options.deviceMemory;
  let handle: DeviceMemoryHandle | null = null;
  if (memory && (memory.allocated || memory.reserved)) {
    handle = monitor.deviceMemory({
      allocated: memory.allocated ?? noMeasure,
      reserved: memory.reserved ?? noMeasure,
      intervalMs: memory.intervalMs,
      source: memory.source ?? `onnx:${model}`,
    });
  }
  return new Session(monitor, runtime, model, options, queue, slot, handle);
}

const noMeasure = (): undefined => undefined;

class Session implements MonitoredSession {
  private current: Slot;
  private accepted = 0;
  private closing = false;
  private releasing: Promise<void> | null = null;
  private onDrained: (() => void) | null = null;
  private reloads: Promise<unknown> = Promise.resolve();
  private readonly releases = new Set<Promise<void>>();

  constructor(
    private readonly monitor: Monitor,
    private readonly runtime: OrtRuntime,
    readonly model: string,
    private readonly options: CreateSessionOptions,
    readonly queue: QueueTracker,
    slot: Slot,
    readonly deviceMemory: DeviceMemoryHandle | null,
  ) {
    this.current = slot;
  }

  get session(): InferenceSession {
    return this.current.session;
  }
  get loadInfo(): LoadInfo {
    return this.current.info;
  }
  get inputNames(): readonly string[] {
    return this.current.session.inputNames;
  }
  get outputNames(): readonly string[] {
    return this.current.session.outputNames;
  }
  get pending(): number {
    return this.accepted;
  }
  get released(): boolean {
    return this.closing;
  }

  run(feeds: FeedsType, fetches?: FetchesType | null, runOptions?: RunOptions): Promise<ReturnType> {
    if (this.closing) return Promise.reject(new SessionReleasedError(this.model));
    this.accepted++;
    let result: Promise<ReturnType>;
    try {
      result = this.queue.run(() => this.runOnCurrent(feeds, fetches, runOptions), { model: this.model, attributes: batchAttributes(feeds) });
    } catch (err) {
      this.settled();
      return Promise.reject(err);
    }
    return result.finally(() => this.settled());
  }

  /** Runs on whichever session serves when the queue lets this run start: a run queued before a swap uses the new one. */
  private async runOnCurrent(feeds: FeedsType, fetches: FetchesType | null | undefined, runOptions: RunOptions | undefined): Promise<ReturnType> {
    const slot = this.current;
    slot.inFlight++;
    try {
      return fetches ? await slot.session.run(feeds, fetches, runOptions) : await slot.session.run(feeds, runOptions);
    } finally {
      slot.inFlight--;
      if (slot.retired && slot.inFlight === 0) this.releaseSlot(slot);
    }
  }

  private settled(): void {
    this.accepted--;
    if (this.accepted === 0 && this.onDrained) this.onDrained();
  }

  reload(source: ModelSource): Promise<LoadInfo> {
    if (this.closing) return Promise.reject(new SessionReleasedError(this.model));
    // Reloads run one at a time so generations stay ordered.
    const next = this.reloads.then(() => this.swapIn(source));
    this.reloads = next.catch(() => undefined);
    return next;
  }

  private async swapIn(source: ModelSource): Promise<LoadInfo> {
    const generation = this.current.info.generation + 1;
    const slot = await loadSlot(this.monitor, this.runtime, this.model, 'reload', source, this.options, generation);
    if (this.closing) {
      this.releaseSlot(slot);
      throw new SessionReleasedError(this.model);
    }
    const old = this.current;
    this.current = slot;
    old.retired = true;
    if (old.inFlight === 0) this.releaseSlot(old);
    return slot.info;
  }

  private releaseSlot(slot: Slot): void {
    const done = Promise.resolve()
      .then(() => slot.session.release())
      .catch((err: unknown) => this.monitor.internalError('onnx.release', err))
      .finally(() => this.releases.delete(done));
    this.releases.add(done);
  }

  release(): Promise<void> {
    this.releasing ??= this.drainAndRelease();
    return this.releasing;
  }

  private async drainAndRelease(): Promise<void> {
    this.closing = true;
    await this.reloads;
    if (this.accepted > 0) await new Promise<void>((resolve) => (this.onDrained = resolve));
    const slot = this.current;
    slot.retired = true;
    if (slot.inFlight === 0) this.releaseSlot(slot);
    this.deviceMemory?.stop();
    await Promise.all([...this.releases]);
  }
}

async function loadSlot(
  monitor: Monitor,
  runtime: OrtRuntime,
  model: string,
  kind: 'load' | 'reload',
  source: ModelSource,
  options: CreateSessionOptions,
  generation: number,
): Promise<Slot> {
  const requested = requestedProviders(options.sessionOptions);
  const attributes: Record<string, string | number | boolean> = {
    [ONNX_ATTR.runtime]: 'onnxruntime-node',
    [ONNX_ATTR.sourceKind]: sourceKind(source),
    [ONNX_ATTR.providersRequested]: requested.join(','),
    // Core copies these when the load span starts; what was used is only meaningful with outcome=success.
    [ONNX_ATTR.providersUsed]: usedProviders(requested).join(','),
  };
  if (typeof source === 'string') {
    const size = await stat(source).then((s) => s.size, () => null);
    if (size !== null) attributes[ONNX_ATTR.fileSize] = size;
  } else if (typeof source !== 'function') {
    attributes[ONNX_ATTR.fileSize] = source.byteLength;
  }
  const startedAt = performance.now();
  let fileBytes: number | null = null;
  const session = await monitor.modelLoad(
    model,
    kind,
    async () => {
      try {
        const resolved = await resolveSource(source);
        fileBytes = resolved.fileBytes;
        return await createFrom(runtime, resolved.input, options);
      } catch (err) {
        // Thrown inside the timed loader so core records the `error` outcome with error.type = ModelLoadError.
        throw new ModelLoadError(model, kind, classifyLoadError(err), { cause: err });
      }
    },
    { attributes },
  );
  const info: LoadInfo = {
    kind,
    generation,
    fileBytes,
    source: sourceKind(source),
    providersRequested: requested,
    providersUsed: usedProviders(requested),
    seconds: (performance.now() - startedAt) / 1000,
    inputNames: session.inputNames,
    outputNames: session.outputNames,
  };
  return { session, info, inFlight: 0, retired: false };
}

function createFrom(runtime: OrtRuntime, input: string | Uint8Array, options: CreateSessionOptions): Promise<InferenceSession> {
  return typeof input === 'string'
    ? runtime.InferenceSession.create(input, options.sessionOptions)
    : runtime.InferenceSession.create(input, options.sessionOptions);
}

async function importRuntime(): Promise<OrtRuntime> {
  const mod = (await import('onnxruntime-node')) as unknown as OrtRuntime & { default?: OrtRuntime };
  return mod.InferenceSession ? mod : (mod.default as OrtRuntime);
}

function validate(options: CreateSessionOptions): void {
  const { concurrency } = options;
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) {
    throw new TypeError(`@infersignal/onnx: options.concurrency must be an integer ≥ 1, got ${String(concurrency)}`);
  }
  if (options.runtime !== undefined && typeof options.runtime?.InferenceSession?.create !== 'function') {
    throw new TypeError('@infersignal/onnx: options.runtime must be the onnxruntime-node module (InferenceSession.create missing)');
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
