import { createNoopMeter, metrics, trace, type Attributes, type Meter } from '@opentelemetry/api';
import { LabelTable } from './aggregates/label-table';
import { AlertHub } from './alerts/hub';
import { WebhookDelivery } from './alerts/webhook';
import { InferSignalConfigError, resolveThresholds, type Thresholds } from './config';
import type { MonitorContext } from './context';
import { levelRank, worstLevel } from './detectors/threshold';
import { CoreMetricProducer, AggregateCounter, AggregateHistogram } from './export/producer';
import { createInstruments, type Instruments } from './instruments';
import { ATTR } from './names';
import { SCOPE } from './version';
import { GlitchAttributor } from './signals/attribution';
import { DeviceMemory } from './signals/device-memory';
import { EventLoopSignal } from './signals/event-loop';
import { ModelLoads } from './signals/model-load';
import { Queue } from './signals/queue';
import { Stream, StreamModel } from './signals/stream';
import type {
  AlertListener,
  DeviceMemoryHandle,
  DeviceMemoryOptions,
  Level,
  LoadOptions,
  Logger,
  Monitor,
  MonitorOptions,
  QueueOptions,
  QueueTracker,
  SignalName,
  Snapshot,
  StreamHandle,
  WebhookOptions,
  WebhookSink,
} from './types';

const OPTION_KEYS = new Set([
  'serviceName',
  'meterProvider',
  'tracerProvider',
  'thresholds',
  'onAlert',
  'maxModels',
  'maxQueues',
  'detectorIntervalMs',
  'traces',
  'clock',
  'logger',
  'eventLoop',
  'runtimeMetrics',
  'exportMode',
]);
const LEVEL_VALUE: Record<Level, number> = { ok: 0, warn: 1, critical: 2 };
/** Alert label keys → OTel attribute keys on the signal-level gauge. */
const LABEL_ATTRIBUTE: Record<string, string> = {
  queue: ATTR.queue,
  model: ATTR.model,
  source: ATTR.memorySource,
  server: ATTR.server,
};
const MAX_ERROR_SOURCES = 64;

function positiveInteger(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw new InferSignalConfigError(field, `must be an integer >= 1, got ${JSON.stringify(value)}`);
  return value;
}

function validateOptions(options: MonitorOptions): void {
  if (typeof options !== 'object' || options === null) throw new InferSignalConfigError('options', 'must be an object');
  for (const key of Object.keys(options))
    if (!OPTION_KEYS.has(key))
      throw new InferSignalConfigError(key, `unknown option (expected one of ${[...OPTION_KEYS].join(', ')})`);
  if (options.serviceName !== undefined && (typeof options.serviceName !== 'string' || options.serviceName === ''))
    throw new InferSignalConfigError('serviceName', 'must be a non-empty string');
  if (options.onAlert !== undefined && typeof options.onAlert !== 'function')
    throw new InferSignalConfigError('onAlert', 'must be a function');
  if (options.clock !== undefined && typeof options.clock !== 'function')
    throw new InferSignalConfigError('clock', 'must be a function returning milliseconds');
  if (
    options.detectorIntervalMs !== undefined &&
    (typeof options.detectorIntervalMs !== 'number' || !(options.detectorIntervalMs >= 0))
  ) {
    throw new InferSignalConfigError(
      'detectorIntervalMs',
      `must be a number >= 0, got ${JSON.stringify(options.detectorIntervalMs)}`,
    );
  }
  if (options.exportMode !== undefined && options.exportMode !== 'api' && options.exportMode !== 'producer') {
    throw new InferSignalConfigError(
      'exportMode',
      `must be 'api' or 'producer', got ${JSON.stringify(options.exportMode)}`,
    );
  }
  if (options.logger !== undefined && typeof options.logger?.warn !== 'function')
    throw new InferSignalConfigError('logger', 'must have a warn(message) method');
}

class MonitorImpl implements Monitor {
  readonly serviceName: string;
  readonly thresholds: Thresholds;
  readonly meter: Meter;
  private readonly ctx: MonitorContext;
  private readonly instruments: Instruments;
  private readonly hub: AlertHub;
  private readonly queues = new Map<string, Queue>();
  private readonly maxQueues: number;
  private readonly streamModels: LabelTable<StreamModel>;
  private readonly loads: LabelTable<ModelLoads>;
  private readonly routes: LabelTable<true>;
  private readonly modelLabels: LabelTable<true>;
  private readonly memories = new Set<DeviceMemory>();
  private readonly webhooks = new Set<WebhookDelivery>();
  private readonly logger: Logger;
  private readonly errorAttributes = new Map<string, Attributes>();
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly eventLoop: EventLoopSignal | undefined;
  private readonly runtimeMetrics: boolean;
  private readonly attributor = new GlitchAttributor();
  private lastTick = Number.NaN;
  internalErrors = 0;
  badDurations = 0;
  readonly exportMode: 'api' | 'producer';
  private producer: CoreMetricProducer | undefined;
  private readonly alertCounterAttributes = new Map<string, Attributes>();
  private readonly warned = new Set<string>();

  constructor(options: MonitorOptions) {
    validateOptions(options);
    this.thresholds = resolveThresholds(options.thresholds);
    this.serviceName = options.serviceName ?? process.env.OTEL_SERVICE_NAME ?? 'inference';
    const maxModels = positiveInteger('maxModels', options.maxModels, 50);
    this.maxQueues = positiveInteger('maxQueues', options.maxQueues, 20);
    // timeOrigin is fixed for the process, and reading it is a getter call: read it once.
    const origin = performance.timeOrigin;
    this.clock = options.clock ?? (() => origin + performance.now());
    this.logger = options.logger ?? { warn: (message) => console.warn(message) };
    this.meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE.name, SCOPE.version);
    // The metrics API has no proxy provider: a meter taken before an SDK registers stays a no-op for good.
    if (this.meter === createNoopMeter())
      this.warnOnce(
        'noop-meter',
        "infersignal: no OpenTelemetry MeterProvider was registered when the monitor was created (before sdk.start()?), so its metrics go nowhere; detectors and alerts still run. Create it after sdk.start(), pass { meterProvider }, or add @infersignal/node's InferSignalInstrumentation to NodeSDK's instrumentations.",
      );
    this.exportMode = options.exportMode ?? 'api';
    if (options.runtimeMetrics !== undefined && typeof options.runtimeMetrics !== 'boolean')
      throw new InferSignalConfigError('runtimeMetrics', 'must be a boolean');
    this.runtimeMetrics = options.runtimeMetrics ?? true;
    this.instruments = createInstruments(this.meter, this.exportMode, this.runtimeMetrics);
    const tracer =
      options.traces === false
        ? undefined
        : (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE.name, SCOPE.version);
    this.hub = new AlertHub(
      this.clock,
      (error) => this.internalError('onAlert', error),
      (event) => this.onEmit(event.signal, event.level),
    );
    this.ctx = {
      clock: this.clock,
      thresholds: this.thresholds,
      instruments: this.instruments,
      hub: this.hub,
      tracer,
      maxModels,
      modelLabel: (value) => this.modelLabels.intern(value),
      internalError: (source, error) => this.internalError(source, error),
      badDuration: () => this.badDuration(),
      attributeGlitch: (now, windowMs) => this.attributor.attribute(this.loadsWithin(now, windowMs)),
    };
    this.modelLabels = new LabelTable(maxModels, () => true as const);
    this.streamModels = new LabelTable(maxModels + 1, (model) => new StreamModel(model, this.ctx));
    this.loads = new LabelTable(maxModels + 1, (model) => new ModelLoads(model, this.ctx));
    this.routes = new LabelTable(maxModels, () => true as const);
    if (options.onAlert) this.hub.subscribe(options.onAlert);
    if (options.eventLoop !== false) this.eventLoop = new EventLoopSignal(this.ctx);
    this.meter.addBatchObservableCallback((result) => {
      try {
        this.observe(result);
      } catch (error) {
        this.internalError('observe', error);
      }
    }, this.instruments.observables);
    const intervalMs = options.detectorIntervalMs ?? 1000;
    if (intervalMs > 0) {
      this.timer = setInterval(() => this.tick(), intervalMs);
      this.timer.unref();
    }
  }

  private onEmit(signal: string, level: Level): void {
    const key = `${signal}|${level}`;
    let attributes = this.alertCounterAttributes.get(key);
    if (!attributes) {
      attributes = { [ATTR.signal]: signal, [ATTR.level]: level };
      if (this.alertCounterAttributes.size < 256) this.alertCounterAttributes.set(key, attributes);
    }
    this.instruments.alerts.add(1, attributes);
  }

  get metricProducer(): CoreMetricProducer | undefined {
    if (this.exportMode !== 'producer') return undefined;
    if (!this.producer) {
      const values = Object.values(this.instruments);
      this.producer = new CoreMetricProducer(
        values.filter((i): i is AggregateHistogram => i instanceof AggregateHistogram),
        values.filter((i): i is AggregateCounter => i instanceof AggregateCounter),
        this.clock,
        this.clock(),
      );
    }
    return this.producer;
  }

  queue(name: string, options: QueueOptions = {}): QueueTracker {
    if (typeof name !== 'string' || name === '')
      throw new InferSignalConfigError('queue.name', 'must be a non-empty string');
    const existing = this.queues.get(name);
    if (existing) return existing;
    if (this.queues.size >= this.maxQueues)
      throw new InferSignalConfigError(
        'maxQueues',
        `more than ${this.maxQueues} queues; raise maxQueues or reuse queues`,
      );
    for (const key of Object.keys(options)) {
      if (key !== 'capacity' && key !== 'concurrency' && key !== 'maxWaiting')
        throw new InferSignalConfigError(
          `queue(${name}).${key}`,
          'unknown option (expected capacity, concurrency, maxWaiting)',
        );
    }
    const concurrency = positiveInteger(`queue(${name}).concurrency`, options.concurrency, 1);
    const capacity = positiveInteger(
      `queue(${name}).capacity`,
      options.capacity,
      options.maxWaiting !== undefined ? concurrency + options.maxWaiting : 64,
    );
    if (options.maxWaiting !== undefined && (!Number.isInteger(options.maxWaiting) || options.maxWaiting < 0)) {
      throw new InferSignalConfigError(
        `queue(${name}).maxWaiting`,
        `must be an integer >= 0, got ${JSON.stringify(options.maxWaiting)}`,
      );
    }
    const queue = new Queue(
      name,
      { ...options, concurrency: options.concurrency === undefined ? undefined : concurrency, capacity },
      this.ctx,
      (model) => this.streamModels.get(this.ctx.modelLabel(model)),
      () => (this.eventLoop && this.thresholds.eventLoop.backpressure ? this.eventLoop.level : 'ok'),
    );
    this.queues.set(name, queue);
    return queue;
  }

  modelLoad<T>(model: string, kind: 'load' | 'reload', fn: () => Promise<T> | T, options?: LoadOptions): Promise<T> {
    if (typeof fn !== 'function')
      return Promise.reject(new TypeError('infersignal: modelLoad(model, kind, fn) needs a loader function'));
    if (kind !== 'load' && kind !== 'reload')
      return Promise.reject(
        new TypeError(`infersignal: modelLoad kind must be 'load' or 'reload', got ${JSON.stringify(kind)}`),
      );
    return this.loads.get(this.ctx.modelLabel(model)).time(kind, fn, options);
  }

  stream(model = 'default'): StreamHandle {
    return new Stream(this.streamModels.get(this.ctx.modelLabel(model)), this.ctx, this.clock());
  }

  deviceMemory(options: DeviceMemoryOptions): DeviceMemoryHandle {
    if (typeof options?.allocated !== 'function')
      throw new InferSignalConfigError('deviceMemory.allocated', 'must be a function returning bytes (or undefined)');
    if (typeof options.reserved !== 'function')
      throw new InferSignalConfigError('deviceMemory.reserved', 'must be a function returning bytes (or undefined)');
    if (options.intervalMs !== undefined && !(options.intervalMs >= 0))
      throw new InferSignalConfigError('deviceMemory.intervalMs', `must be >= 0, got ${options.intervalMs}`);
    if (this.memories.size >= 64)
      throw new InferSignalConfigError('deviceMemory', 'more than 64 device memory sources');
    const handle = new DeviceMemory(options.source ?? 'default', options, this.ctx, (h) => this.memories.delete(h));
    this.memories.add(handle);
    return handle;
  }

  onAlert(listener: AlertListener): () => void {
    if (typeof listener !== 'function') throw new InferSignalConfigError('onAlert', 'must be a function');
    return this.hub.subscribe(listener);
  }

  webhook(url: string, options: WebhookOptions = {}): WebhookSink {
    const sink = new WebhookDelivery(url, this.serviceName, options, (reason, error) => {
      this.instruments.webhookDropped.add(1);
      this.warnOnce(
        `webhook:${reason}`,
        `infersignal: webhook ${reason}; alert dropped${error ? ` (${error instanceof Error ? error.message : String(error)})` : ''}`,
      );
    });
    this.webhooks.add(sink);
    this.hub.subscribe((event) => sink.push(event));
    return sink;
  }

  report(
    signal: SignalName,
    level: Level,
    value: number,
    threshold: number,
    labels: Record<string, string> = {},
    message?: string,
  ): void {
    try {
      this.hub.set(signal, level, value, threshold, labels, message);
    } catch (error) {
      this.internalError('report', error);
    }
  }

  private warnOnce(key: string, message: string): void {
    if (this.warned.has(key) || this.warned.size >= MAX_ERROR_SOURCES) return;
    this.warned.add(key);
    try {
      this.logger.warn(message);
    } catch {
      // A logger that throws must not take the request path down with it.
    }
  }

  internalError(source: string, error: unknown): void {
    try {
      this.internalErrors++;
      let attributes = this.errorAttributes.get(source);
      if (!attributes) {
        attributes = { [ATTR.errorSource]: this.errorAttributes.size < MAX_ERROR_SOURCES ? source : '_other' };
        if (this.errorAttributes.size < MAX_ERROR_SOURCES) this.errorAttributes.set(source, attributes);
      }
      this.instruments.internalErrors.add(1, attributes);
      this.warnOnce(
        `error:${source}`,
        `infersignal: error in ${source} (counted in infersignal.internal.errors, reported once): ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
    } catch {
      // Last line of defence: never throw from the error path.
    }
  }

  private badDuration(): void {
    this.badDurations++;
    this.internalError(
      'clock',
      new RangeError('negative or non-finite duration (clock went backwards?); sample dropped'),
    );
  }

  label(kind: 'model' | 'route', value: unknown): string {
    return kind === 'route' ? this.routes.intern(value) : this.modelLabels.intern(value);
  }

  private loadsWithin(now: number, windowMs: number): string[] {
    const out: string[] = [];
    for (const [model, state] of this.loads.entries())
      if (state.loading > 0 || state.lastEndedAt >= now - windowMs) out.push(model);
    return out;
  }

  tick(): void {
    if (this.closed) return;
    const now = this.clock();
    const sinceLast = Number.isNaN(this.lastTick) ? 1000 : Math.max(1, now - this.lastTick);
    this.lastTick = now;
    try {
      let occupancy = 0;
      for (const queue of this.queues.values()) occupancy = Math.max(occupancy, queue.occupancy);
      let fragmentation = Number.NaN;
      for (const memory of this.memories)
        if (memory.fragmentation !== null)
          fragmentation = Math.max(Number.isNaN(fragmentation) ? 0 : fragmentation, memory.fragmentation);
      this.attributor.update({
        queue_occupancy: occupancy,
        event_loop_delay: this.eventLoop?.p99 ?? Number.NaN,
        gc_pause: this.eventLoop ? this.eventLoop.gcPauseSeconds(now, sinceLast) : Number.NaN,
        gpu_fragmentation: fragmentation,
      });
    } catch (error) {
      this.internalError('detector.attribution', error);
    }
    for (const queue of this.queues.values()) {
      try {
        queue.evaluate(now);
      } catch (error) {
        this.internalError('detector.queue', error);
      }
    }
    for (const model of this.streamModels.values()) {
      try {
        model.evaluate(now);
      } catch (error) {
        this.internalError('detector.stream', error);
      }
    }
    for (const memory of this.memories) if (!memory.timed) memory.sample();
  }

  level(): Level {
    let level: Level = 'ok';
    for (const queue of this.queues.values()) level = worstLevel(level, queue.level());
    for (const event of this.hub.active()) level = worstLevel(level, event.level);
    return level;
  }

  snapshot(): Snapshot {
    const queues: Snapshot['queues'] = {};
    for (const [name, queue] of this.queues) queues[name] = queue.snapshot();
    const streams: Snapshot['streams'] = {};
    for (const [model, state] of this.streamModels.entries()) {
      if (state.samples > 0)
        streams[model] = { level: state.level, interruptedRatio: state.interruptedRatio, samples: state.samples };
    }
    const models: Snapshot['models'] = {};
    for (const [model, state] of this.loads.entries()) {
      models[model] = {
        level: state.level,
        baselineSeconds: state.baseline(),
        lastSeconds: state.lastSeconds,
        loads: state.loads,
        failures: state.failures,
        loading: state.loading,
      };
    }
    const deviceMemory: Snapshot['deviceMemory'] = {};
    for (const memory of this.memories) {
      deviceMemory[memory.source] = {
        level: memory.level,
        allocated: memory.allocated,
        reserved: memory.reserved,
        fragmentation: memory.fragmentation,
        gapGrowthBytesPerSecond: memory.gapGrowth,
        drifting: memory.drifting,
      };
    }
    return {
      service: this.serviceName,
      level: this.level(),
      at: this.clock(),
      queues,
      streams,
      models,
      deviceMemory,
      active: this.hub.active(),
      internalErrors: this.internalErrors,
    };
  }

  private observe(result: import('@opentelemetry/api').BatchObservableResult): void {
    const i = this.instruments;
    for (const { aggregate, observable } of i.counterObservables) {
      for (const [attributes, cell] of aggregate.series) result.observe(observable, cell.value, attributes);
    }
    for (const queue of this.queues.values()) {
      const attributes = { [ATTR.queue]: queue.name };
      result.observe(i.queueWaiting, queue.waiting, attributes);
      result.observe(i.queueInFlight, queue.inFlight, attributes);
      result.observe(i.queueCapacity, queue.capacity, attributes);
      result.observe(i.queueOccupancy, queue.occupancy, attributes);
      result.observe(i.backpressureLevel, LEVEL_VALUE[queue.level()], attributes);
      const c = queue.capacity_.estimate;
      result.observe(i.queueArrivalRate, c.arrivalRate, attributes);
      result.observe(i.queueCompletionRate, c.completionRate, attributes);
      if (Number.isFinite(c.serviceTime)) {
        result.observe(i.queueServiceTime, c.serviceTime, attributes);
        result.observe(i.queueServiceTimeP90, c.serviceTimeP90, attributes);
      }
      // S = 0 (a coarse or stalled clock) leaves ρ and headroom undefined: export nothing rather than NaN.
      if (Number.isFinite(c.utilization) && c.serviceTime > 0)
        result.observe(i.queueUtilization, c.utilization, attributes);
      if (Number.isFinite(c.headroom)) result.observe(i.queueHeadroom, c.headroom, attributes);
      if (Number.isFinite(c.predictedWait)) result.observe(i.queueWaitPredicted, c.predictedWait, attributes);
      if (Number.isFinite(c.timeToSaturation)) result.observe(i.queueTimeToSaturation, c.timeToSaturation, attributes);
    }
    const loop = this.runtimeMetrics ? this.eventLoop : undefined;
    if (loop && !Number.isNaN(loop.p99)) {
      result.observe(i.eventLoopDelayP50, loop.p50);
      result.observe(i.eventLoopDelayP99, loop.p99);
      result.observe(i.eventLoopDelayMax, loop.max);
      result.observe(i.eventLoopUtilization, loop.utilization);
    }
    for (const [model, state] of this.loads.entries()) {
      const baseline = state.baseline();
      if (baseline !== null) result.observe(i.modelLoadBaseline, baseline, { [ATTR.model]: model });
    }
    for (const state of this.streamModels.values()) {
      if (state.samples > 0) result.observe(i.streamInterruptedRatio, state.interruptedRatio, state.attributes);
    }
    for (const memory of this.memories) {
      if (memory.allocated !== null) result.observe(i.memoryAllocated, memory.allocated, memory.attributes);
      if (memory.reserved !== null) result.observe(i.memoryReserved, memory.reserved, memory.attributes);
      if (memory.fragmentation !== null) result.observe(i.memoryFragmentation, memory.fragmentation, memory.attributes);
      if (memory.gapGrowth !== null) result.observe(i.memoryGapGrowth, memory.gapGrowth, memory.attributes);
    }
    for (const { event } of this.hub.entries()) {
      const attributes: Attributes = { [ATTR.signal]: event.signal };
      for (const [key, value] of Object.entries(event.labels))
        attributes[LABEL_ATTRIBUTE[key] ?? `infersignal.label.${key}`] = value;
      result.observe(i.signalLevel, levelRank(event.level), attributes);
    }
  }

  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.eventLoop?.stop();
    for (const memory of [...this.memories]) memory.stop();
    // Pending alerts get until the deadline; then in-flight deliveries are
    // aborted, so an open webhook socket cannot keep the process alive.
    const timeoutMs = options.timeoutMs ?? 5000;
    await Promise.all([...this.webhooks].map((sink) => sink.flush(timeoutMs)));
    for (const sink of this.webhooks) sink.close();
  }
}

/**
 * Creates a monitor. Without providers it records through the global
 * OpenTelemetry API (a no-op until the application registers an SDK).
 * Invalid options throw an InferSignalConfigError naming the field.
 */
export function createMonitor(options: MonitorOptions = {}): Monitor {
  return new MonitorImpl(options);
}
