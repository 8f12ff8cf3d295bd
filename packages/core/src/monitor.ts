import {
  createNoopMeter,
  metrics,
  trace,
  type Attributes,
  type BatchObservableResult,
  type Meter,
  type MeterProvider,
  type Observable,
  type Tracer,
} from '@opentelemetry/api';
import { performance } from 'node:perf_hooks';
import { LiveBoard } from './live-board';
import { LabelTable } from './aggregates/label-table';
import { AlertHub } from './alerts/hub';
import { brand } from './brand';
import { WebhookDelivery } from './alerts/webhook';
import { resolveThresholds } from './config';
import type { Thresholds } from './thresholds';
import { InferSignalConfigError } from './errors';
import type { CounterRecorder, Gauge, GaugeObserver, Signal, SignalFactory } from './contract';
import { levelRank, worstLevel } from './detectors/threshold';
import { CoreMetricProducer, seriesCapOf } from './export/producer';
import { Instruments } from './instruments';
import { ATTR, METRICS, UNKNOWN_MODEL } from './names';
import { OPT_IN_NAMES } from './opt-in';
import { checkOptionKeys, integerOption, nameOption } from './options';
import { describeValue, fieldOrDefault, rejectValue } from './validate';
import { GlitchAttributionSignal } from './signals/attribution';
import { DeviceMemorySignal } from './signals/device-memory';
import { EventLoopSignal } from './signals/event-loop';
import { HeapSignal } from './signals/heap';
import { ModelLoadSignal } from './signals/model-load';
import { QueueSignal } from './signals/queues';
import { RequestTraces, traceSettings } from './signals/request-trace';
import { StreamSignal } from './signals/stream';
import { Registration, type RegistrationHost } from './registration';
import { SCOPE } from './version';
import type {
  AlertListener,
  AlertReport,
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
  'signals',
  'onAlert',
  'maxModels',
  'maxQueues',
  'detectorIntervalMs',
  'traces',
  'clock',
  'logger',
  'eventLoop',
  'heap',
  'runtimeMetrics',
  'exportMode',
  'genAi',
  'optInMetrics',
  'gaugesOnMeter',
]);
/** Alert label keys → OTel attribute keys on the signal-level gauge. */
const LABEL_ATTRIBUTE: Record<string, string> = {
  queue: ATTR.queue,
  model: ATTR.model,
  source: ATTR.memorySource,
  server: ATTR.server,
};
const MAX_ERROR_SOURCES = 64;

/** Top-level snapshot keys a signal may not take as its name. */
const RESERVED_SECTIONS = new Set(['service', 'level', 'at', 'active', 'internalErrors']);

function validateOptions(options: MonitorOptions): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    rejectValue('options', options, 'an options object');
  for (const key of Object.keys(options))
    if (!OPTION_KEYS.has(key))
      throw new InferSignalConfigError(
        key,
        `unknown option, got ${describeValue((options as Record<string, unknown>)[key])} (expected one of ${[...OPTION_KEYS].join(', ')})`,
      );
  fieldOrDefault('serviceName', options.serviceName, { type: 'string' }, undefined);
  if (options.onAlert !== undefined && typeof options.onAlert !== 'function')
    rejectValue('onAlert', options.onAlert, 'a function');
  if (options.clock !== undefined && typeof options.clock !== 'function')
    rejectValue('clock', options.clock, 'a function returning milliseconds');
  fieldOrDefault('detectorIntervalMs', options.detectorIntervalMs, { type: 'number', min: 0 }, undefined);
  fieldOrDefault('exportMode', options.exportMode, { type: 'enum', values: ['api', 'producer'] }, undefined);
  for (const key of ['eventLoop', 'heap', 'runtimeMetrics', 'gaugesOnMeter'] as const)
    fieldOrDefault(key, options[key], { type: 'boolean' }, undefined);
  if (options.logger !== undefined && typeof options.logger?.warn !== 'function')
    rejectValue('logger', options.logger, 'an object with a warn(message) method');
  optInSet(options.optInMetrics);
}

/** `optInMetrics` as a set; each entry must name an opt-in instrument (opt-in.ts). */
function optInSet(value: MonitorOptions['optInMetrics']): ReadonlySet<string> {
  if (value === undefined) return new Set();
  if (!Array.isArray(value)) rejectValue('optInMetrics', value, `an array of ${OPT_IN_NAMES.join(', ')}`);
  for (const [i, name] of value.entries())
    if (!OPT_IN_NAMES.includes(name)) rejectValue(`optInMetrics[${i}]`, name, `one of ${OPT_IN_NAMES.join(', ')}`);
  return new Set(value);
}

function genAiSettings(value: MonitorOptions['genAi']): { operationName: string; providerName: string } {
  if (value === undefined) return { operationName: 'chat', providerName: 'self_hosted' };
  checkOptionKeys(value, ['operationName', 'providerName'], 'genAi');
  return Object.freeze({
    operationName: nameOption('genAi.operationName', value.operationName, 'chat'),
    providerName: nameOption('genAi.providerName', value.providerName, 'self_hosted'),
  });
}

class MonitorImpl implements Monitor, RegistrationHost {
  readonly serviceName: string;
  readonly thresholds: Thresholds;
  readonly exportMode: 'api' | 'producer';
  readonly clock: () => number;
  readonly tracer: Tracer | undefined;
  readonly maxModels: number;
  readonly genAi: { readonly operationName: string; readonly providerName: string };
  readonly instruments: Instruments;
  readonly hub: AlertHub;
  readonly liveBoard: LiveBoard;
  /** Registered signals, in evaluation order. */
  private readonly signals: Signal[] = [];
  private readonly routes: LabelTable<true>;
  private readonly modelLabels: LabelTable<true>;
  private readonly webhooks = new Set<WebhookDelivery>();
  private readonly logger: Logger;
  private readonly errorAttributes = new Map<string, Attributes>();
  private readonly alertCounterAttributes = new Map<string, Attributes>();
  private readonly warned = new Set<string>();
  private readonly own: { alerts: CounterRecorder; internalErrors: CounterRecorder; webhookDropped: CounterRecorder };
  private readonly signalLevel: Gauge;
  private observed: Observable[] = [];
  private producer: CoreMetricProducer | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly queues: QueueSignal;
  private readonly streams: StreamSignal;
  private readonly loads: ModelLoadSignal;
  private readonly memory: DeviceMemorySignal;
  internalErrors = 0;
  badDurations = 0;

  constructor(options: MonitorOptions) {
    validateOptions(options);
    const signals = options.signals ?? [];
    if (!Array.isArray(signals))
      throw new InferSignalConfigError(
        'signals',
        `must be an array of signal definitions, got ${describeValue(signals)}`,
      );
    this.thresholds = resolveThresholds(options.thresholds, 'thresholds', signals);
    this.serviceName = options.serviceName ?? process.env.OTEL_SERVICE_NAME ?? 'inference';
    this.maxModels = integerOption('maxModels', options.maxModels, 50);
    this.genAi = genAiSettings(options.genAi);
    const maxQueues = integerOption('maxQueues', options.maxQueues, 20);
    this.liveBoard = new LiveBoard(maxQueues);
    // timeOrigin is fixed for the process, and reading it is a getter call: read it once. `performance` is
    // perf_hooks' own, not the global: on Node 24 `globalThis.performance` stays a lazy accessor, and each read
    // of it called the accessor, ~300 instructions a read, three reads a request.
    const origin = performance.timeOrigin;
    this.clock = options.clock ?? (() => origin + performance.now());
    this.logger = options.logger ?? { warn: (message) => console.warn(message) };
    const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE.name, SCOPE.version);
    // The metrics API has no proxy provider: a meter taken before an SDK registers stays a no-op for good.
    if (meter === createNoopMeter())
      this.warnOnce(
        'noop-meter',
        "infersignal: no OpenTelemetry MeterProvider was registered when the monitor was created (before sdk.start()?), so its metrics go nowhere; detectors and alerts still run. Create it after sdk.start(), pass { meterProvider }, or add @infersignal/node's InferSignalInstrumentation to NodeSDK's instrumentations.",
      );
    this.exportMode = options.exportMode ?? 'api';
    this.instruments = new Instruments(
      meter,
      this.exportMode,
      () => this.observeAgain(),
      options.runtimeMetrics ?? true,
      {
        cap: seriesCapOf(maxQueues, this.maxModels),
        // A series past the cap loses its records: counted and told once per instrument.
        onDrop: (instrument, cap) =>
          this.internalError(
            'series_cap',
            `${instrument} holds ${cap} series (its cap, from maxQueues and maxModels); records of further attribute sets are dropped`,
          ),
        changes: this.liveBoard.changes,
      },
      optInSet(options.optInMetrics),
      options.gaugesOnMeter ?? false,
    );
    this.own = {
      alerts: this.instruments.counter(METRICS.alerts),
      internalErrors: this.instruments.counter(METRICS.internalErrors),
      webhookDropped: this.instruments.counter(METRICS.webhookDropped),
    };
    this.signalLevel = this.instruments.gauge(METRICS.signalLevel);
    const traceOptions = traceSettings(options.traces);
    this.tracer =
      traceOptions === undefined
        ? undefined
        : (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE.name, SCOPE.version);
    const requestTraces =
      this.tracer && traceOptions
        ? new RequestTraces(this.tracer, traceOptions, (source, error) => this.internalError(source, error))
        : undefined;
    this.hub = new AlertHub(
      this.clock,
      (error) => this.internalError('onAlert', error),
      (event) => this.countAlert(event.signal, event.level),
    );
    this.modelLabels = new LabelTable(this.maxModels, (model) => {
      this.modelKnown(model);
      return true as const;
    });
    this.routes = new LabelTable(this.maxModels, () => true as const);
    if (options.onAlert) this.hub.subscribe(options.onAlert);

    // Core's own signals, registered like any other. The order is the tick's:
    // the glitch factors are fed before the queues judge a glitch.
    const attribution = this.register(
      (ctx) =>
        new GlitchAttributionSignal(ctx, {
          occupancy: () => this.queues.occupancy,
          eventLoopDelay: () => eventLoop?.recentBlock() ?? Number.NaN,
          gcPause: (now, windowMs) => (eventLoop ? eventLoop.gcPauseSeconds(now, windowMs) : Number.NaN),
          fragmentation: () => this.memory.fragmentation,
          loadsWithin: (now, windowMs) => this.loads.within(now, windowMs),
        }),
    );
    const eventLoop =
      options.eventLoop === false
        ? undefined
        : this.register(
            (ctx) =>
              new EventLoopSignal(
                ctx,
                undefined,
                () => this.queues.busy,
                () => this.liveBoard.beat(this.clock()),
              ),
          );
    if (options.heap !== false) this.register((ctx) => new HeapSignal(ctx));
    const loopBackpressure = this.thresholds.eventLoop.backpressure;
    this.queues = this.register(
      (ctx) =>
        new QueueSignal(ctx, maxQueues, {
          streamOf: (model, arrival) => this.streams.open(model, arrival),
          externalLevel: () => (eventLoop && loopBackpressure ? eventLoop.backpressureLevel : 'ok'),
          attributeGlitch: (now, windowMs) => attribution.attribute(now, windowMs),
          loopUtilization: () => eventLoop?.utilization ?? Number.NaN,
          arrived: eventLoop ? () => eventLoop.wake() : () => {},
          requestTraces,
          board: this.liveBoard,
        }),
    );
    this.streams = this.register((ctx) => new StreamSignal(ctx));
    this.loads = this.register((ctx) => new ModelLoadSignal(ctx));
    this.memory = this.register((ctx) => new DeviceMemorySignal(ctx));
    for (const definition of signals) {
      const create = definition.create;
      if (create) this.register((ctx) => create(ctx));
    }

    const intervalMs = options.detectorIntervalMs ?? 1000;
    // The probe stamps the heartbeat at every firing, the tick at every tick.
    const heartbeatGapMs = Math.min(
      eventLoop?.restIntervalMs ?? Number.POSITIVE_INFINITY,
      intervalMs > 0 ? intervalMs : Number.POSITIVE_INFINITY,
    );
    if (Number.isFinite(heartbeatGapMs))
      this.liveBoard.keepHeartbeat(heartbeatGapMs, this.thresholds.eventLoop.delayCriticalSeconds * 1000);
    if (intervalMs > 0) {
      this.timer = setInterval(() => this.tick(), intervalMs);
      this.timer.unref();
    }
  }

  register<S extends Signal>(factory: SignalFactory<S>): S {
    if (typeof factory !== 'function')
      throw new InferSignalConfigError('signal', 'must be a function (ctx) => Signal, called once with the context');
    const registration = new Registration(this);
    const signal = factory(registration);
    const name = (signal as Partial<Signal> | undefined)?.name;
    let problem: string | undefined;
    if (typeof signal !== 'object' || signal === null) problem = 'the factory must return a Signal object';
    else if (typeof name !== 'string' || name === '') problem = 'a signal needs a non-empty name';
    else if (RESERVED_SECTIONS.has(name)) problem = `"${name}" is a snapshot field of its own`;
    else if (this.signals.some((s) => s.name === name)) problem = `"${name}" is already registered on this monitor`;
    if (problem !== undefined) {
      try {
        signal?.close?.();
      } catch {
        // Refused anyway; its close failing changes nothing.
      }
      throw new InferSignalConfigError('signal.name', problem);
    }
    registration.signal = signal;
    this.signals.push(signal);
    return signal;
  }

  /** Takes a signal out of the loops (Registration.unregister). */
  remove(signal: Signal): void {
    const index = this.signals.indexOf(signal);
    if (index !== -1) this.signals.splice(index, 1);
  }

  get meter(): Meter {
    return this.instruments.meter;
  }

  setMeterProvider(meterProvider: MeterProvider): boolean {
    const meter = meterProvider.getMeter(SCOPE.name, SCOPE.version);
    // By name too: the API's CommonJS and ESM builds each have their own no-op meter.
    if (meter === this.meter || meter === createNoopMeter() || meter.constructor?.name === 'NoopMeter') return false;
    if (this.observed.length > 0) this.meter.removeBatchObservableCallback(this.observe, this.observed);
    this.observed = [];
    this.instruments.bind(meter);
    if (this.instruments.observables.length > 0) this.observeAgain();
    return true;
  }

  /** The batch callback observes the instruments it was registered with: register it again when one is added. */
  private observeAgain(): void {
    if (this.observed.length > 0) this.meter.removeBatchObservableCallback(this.observe, this.observed);
    this.observed = [...this.instruments.observables];
    this.meter.addBatchObservableCallback(this.observe, this.observed);
  }

  private countAlert(signal: string, level: Level): void {
    const key = `${signal}|${level}`;
    let attributes = this.alertCounterAttributes.get(key);
    if (!attributes) {
      attributes = { [ATTR.signal]: signal, [ATTR.level]: level };
      if (this.alertCounterAttributes.size < 256) this.alertCounterAttributes.set(key, attributes);
    }
    this.own.alerts.add(1, attributes);
  }

  get metricProducer(): CoreMetricProducer | undefined {
    if (this.exportMode !== 'producer') return undefined;
    // The instrument lists are live: signals registered later are exported too.
    this.producer ??= new CoreMetricProducer(
      this.instruments.histograms,
      this.instruments.counters,
      this.clock,
      this.clock(),
      undefined,
      // Gauges the meter does not report are read here, in the same pass over the signals.
      () => this.instruments.readGauges(this.observeAll),
    );
    return this.producer;
  }

  queue(name: string, options?: QueueOptions): QueueTracker {
    return this.queues.get(name, options);
  }

  modelLoad<T>(model: string, kind: 'load' | 'reload', fn: () => Promise<T> | T, options?: LoadOptions): Promise<T> {
    if (typeof fn !== 'function')
      return Promise.reject(new TypeError('infersignal: modelLoad(model, kind, fn) needs a loader function'));
    if (kind !== 'load' && kind !== 'reload')
      return Promise.reject(
        new TypeError(`infersignal: modelLoad kind must be 'load' or 'reload', got ${JSON.stringify(kind)}`),
      );
    return this.loads.time(model, kind, fn, options);
  }

  stream(model: string = UNKNOWN_MODEL): StreamHandle {
    return this.streams.open(model, this.clock());
  }

  deviceMemory(options: DeviceMemoryOptions): DeviceMemoryHandle {
    return this.memory.add(options);
  }

  onAlert(listener: AlertListener): () => void {
    if (typeof listener !== 'function') throw new InferSignalConfigError('onAlert', 'must be a function');
    return this.hub.subscribe(listener);
  }

  webhook(url: string, options: WebhookOptions = {}): WebhookSink {
    const sink = new WebhookDelivery(url, this.serviceName, options, (reason, error) => {
      this.own.webhookDropped.add(1);
      this.warnOnce(
        `webhook:${reason}`,
        `infersignal: webhook ${reason}; alert dropped${error ? ` (${error instanceof Error ? error.message : String(error)})` : ''}`,
      );
    });
    this.webhooks.add(sink);
    this.hub.subscribe((event) => sink.push(event));
    return sink;
  }

  report(report: AlertReport): void;
  report(
    signal: SignalName,
    level: Level,
    value: number,
    threshold: number,
    labels?: Record<string, string>,
    message?: string,
  ): void;
  report(
    signal: SignalName | AlertReport,
    level?: Level,
    value?: number,
    threshold?: number,
    labels: Record<string, string> = {},
    message?: string,
  ): void {
    if (typeof signal === 'object' && signal !== null) this.announce(signal);
    else
      this.announce({
        signal,
        level: level as Level,
        value: value as number,
        threshold: threshold as number,
        labels,
        message,
      });
  }

  /** Every announced level goes through here: the hub turns a change into an event. */
  announce(report: AlertReport): void {
    try {
      this.hub.set(report);
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
      this.own.internalErrors.add(1, attributes);
      this.warnOnce(
        `error:${source}`,
        `infersignal: error in ${source} (counted in infersignal.internal.errors, reported once): ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
    } catch {
      // Last line of defence: never throw from the error path.
    }
  }

  badDuration(): void {
    this.badDurations++;
    this.internalError(
      'clock',
      new RangeError('negative or non-finite duration (clock went backwards?); sample dropped'),
    );
  }

  label(kind: 'model' | 'route', value: unknown): string {
    return kind === 'route' ? this.routes.intern(value) : this.modelLabels.intern(value);
  }

  /**
   * A model got its own label (its first request, stream or load, or
   * `label('model', name)` at startup): the counters a rule reads of it
   * (stream outcomes, load spikes) are exported at 0 from now on, so
   * `rate()` and `increase()` see its first burst. Once per model, within
   * maxModels.
   */
  private modelKnown(model: string): void {
    try {
      this.streams?.known(model);
      this.loads?.known(model);
    } catch (error) {
      this.internalError('model', error);
    }
  }

  tick(): void {
    if (this.closed) return;
    const now = this.clock();
    // A copy: a signal may unregister itself (or another) while the loop runs.
    for (const signal of [...this.signals]) {
      if (signal.evaluate === undefined) continue;
      try {
        signal.evaluate(now);
      } catch (error) {
        this.internalError(`detector.${signal.name}`, error);
      }
    }
    this.liveBoard.setLevel(this.level(), now);
  }

  level(): Level {
    let level: Level = 'ok';
    for (const signal of this.signals) {
      if (signal.level === undefined) continue;
      try {
        level = worstLevel(level, signal.level());
      } catch (error) {
        this.internalError(`${signal.name}.level`, error);
      }
    }
    for (const event of this.hub.active()) level = worstLevel(level, event.level);
    return level;
  }

  snapshot(): Snapshot {
    const snapshot: Record<string, unknown> = { service: this.serviceName, level: this.level(), at: this.clock() };
    for (const signal of this.signals) {
      if (signal.snapshot === undefined) continue;
      try {
        const section = signal.snapshot();
        if (section !== undefined) snapshot[signal.name] = section;
      } catch (error) {
        this.internalError(`${signal.name}.snapshot`, error);
      }
    }
    snapshot.active = this.hub.active();
    snapshot.internalErrors = this.internalErrors;
    return snapshot as unknown as Snapshot;
  }

  /** The one batch callback: counters (api mode), each signal's gauges, the announced levels. */
  private readonly observe = (result: BatchObservableResult): void => {
    try {
      this.instruments.observeCounters(result);
    } catch (error) {
      this.internalError('observe', error);
    }
    this.observeAll(this.instruments.observer(result));
  };

  /** Each signal's gauges and the announced levels, to `observer` (the meter's batch callback, or the producer). */
  private readonly observeAll = (observer: GaugeObserver): void => {
    for (const signal of [...this.signals]) {
      if (signal.observe === undefined) continue;
      try {
        signal.observe(observer);
      } catch (error) {
        this.internalError(`${signal.name}.observe`, error);
      }
    }
    try {
      for (const { event } of this.hub.entries()) {
        const attributes: Attributes = { [ATTR.signal]: event.signal };
        for (const [key, value] of Object.entries(event.labels))
          attributes[LABEL_ATTRIBUTE[key] ?? `infersignal.label.${key}`] = value;
        observer.observe(this.signalLevel, levelRank(event.level), attributes);
      }
    } catch (error) {
      this.internalError('observe', error);
    }
  };

  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const signal of [...this.signals]) {
      try {
        signal.close?.();
      } catch (error) {
        this.internalError(`${signal.name}.close`, error);
      }
    }
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

brand(MonitorImpl, 'Monitor');
