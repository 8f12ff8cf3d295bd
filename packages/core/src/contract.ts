import type { Attributes, Tracer } from '@opentelemetry/api';
import type { Thresholds } from './thresholds';
import type { InstrumentSpec } from './attributes';

export type Level = 'ok' | 'warn' | 'critical';

export type SignalName =
  | 'queue_wait'
  | 'queue_occupancy'
  | 'queue_age'
  | 'queue_pending_wait'
  | 'queue_token_backlog'
  | 'queue_backpressure'
  | 'model_load'
  | 'stream_interruptions'
  | 'gpu_fragmentation'
  | 'memory_drift'
  | 'latency_glitch'
  | 'latency_anomaly'
  | 'capacity'
  | 'event_loop'
  | 'heap_headroom'
  | 'heap_exhaustion'
  | (string & {});

/**
 * One announced level, as a signal gives it to `ctx.report` (and an
 * application to `monitor.report`): the alert event is made from it when
 * the level changed.
 */
export interface AlertReport {
  signal: SignalName;
  level: Level;
  /** The measured value that decided the level (seconds, ratio, bytes/s …). */
  value: number;
  /** The threshold it was compared with. */
  threshold: number;
  /** The subject (`{ queue: 'gen' }`, `{ model: 'llama' }`); none: the process itself. */
  labels?: Record<string, string>;
  /** The detail the event's message ends with, after `<signal> <LEVEL> on <subject>:`. */
  message?: string;
  /** Extra context, e.g. the glitch attribution snapshot. */
  details?: Record<string, unknown>;
}

/**
 * The Signal contract: what every signal of a monitor is, built-in or from
 * another package. The monitor keeps the registered signals in a list and
 * loops over it for the detector tick, gauges at collection, the overall
 * level, the snapshot (and so readiness) and close.
 *
 * A signal gets a SignalContext when it is registered
 * (`monitor.register((ctx) => new MySignal(ctx))`): its threshold slice
 * (`ctx.thresholds.<group>`, declared in core's config.ts), its instruments
 * by spec from core's names.ts (an OTel instrument or core's producer
 * aggregate, per the monitor's export mode), and the one way to announce a
 * level (`ctx.report`), which drives alerts, the `infersignal.signal.level`
 * gauge, webhooks and readiness.
 */
export interface Signal {
  /**
   * Unique per monitor: the signal's section in `snapshot()` (and the
   * readiness body), and the prefix of the internal errors counted for it.
   */
  readonly name: string;
  /**
   * Detector tick (every `detectorIntervalMs`, or `monitor.tick()`): judge
   * the state and announce levels with `ctx.report`. Signals that judge on
   * events (a load ended, a connection opened) report there instead.
   * Signals are evaluated in registration order.
   */
  evaluate?(now: number): void;
  /** Collection: give the current value of each gauge this signal asked for. */
  observe?(observer: GaugeObserver): void;
  /**
   * A level that counts toward `monitor.level()` (and readiness) besides
   * the levels announced with `ctx.report`, e.g. a queue's occupancy now.
   */
  level?(): Level;
  /** This signal's section of `monitor.snapshot()`; undefined leaves it out. Plain JSON data. */
  snapshot?(): unknown;
  /** Stops timers and listeners. Called once by `monitor.close()`; may be called before by its owner. */
  close?(): void;
}

/** Builds a signal from its context; `monitor.register()` calls it once. */
export type SignalFactory<S extends Signal> = (ctx: SignalContext) => S;

/** A histogram as a signal records into it. */
export interface HistogramRecorder {
  record(value: number, attributes?: Attributes): void;
}

/** A monotonic counter as a signal adds to it. */
export interface CounterRecorder {
  add(value: number, attributes?: Attributes): void;
}

/**
 * One series of a histogram (one attribute set), resolved once: a signal
 * that records the same attribute set on every request keeps one of these
 * per set, so a record finds its numbers without a lookup by attributes.
 */
export interface HistogramSeries {
  record(value: number): void;
}

/** One series of a counter, resolved once (see HistogramSeries). */
export interface CounterSeries {
  add(value: number): void;
}

/** An observable gauge: a signal gives its values in `observe()`. */
export interface Gauge {
  readonly spec: InstrumentSpec;
}

/** What a signal's `observe()` reports gauge values to. */
export interface GaugeObserver {
  observe(gauge: Gauge, value: number, attributes?: Attributes): void;
}

/**
 * What a signal gets from its monitor. Instruments are made once per
 * monitor and metric name, so signals asking for the same spec share it.
 *
 * Attributes: pass the same object for the same series (cache it, one per
 * label combination). Producer aggregates find a series by the object's
 * identity; a fresh object per call still lands in the right series, but
 * costs a lookup by value.
 */
export interface SignalContext {
  /** The monitor's millisecond clock (tests inject one). */
  readonly clock: () => number;
  /** Every validated threshold group; a signal reads its own slice. */
  readonly thresholds: Thresholds;
  readonly exportMode: 'api' | 'producer';
  /** Undefined when traces are off. */
  readonly tracer: Tracer | undefined;
  /** Distinct model labels kept before new ones fold into `_other`. */
  readonly maxModels: number;
  /** `gen_ai.operation.name` and `gen_ai.provider.name` of the monitor's gen_ai.server.* metrics (option `genAi`). */
  readonly genAi: { readonly operationName: string; readonly providerName: string };
  /** An OTel histogram (api export) or core's typed-array aggregate (producer export). */
  histogram(spec: InstrumentSpec): HistogramRecorder;
  /** Core's counter aggregate: exported by the producer, or reported by an observable counter in api export. */
  counter(spec: InstrumentSpec): CounterRecorder;
  /** An observable gauge, read at collection through the signal's `observe()`. */
  gauge(spec: InstrumentSpec): Gauge;
  /** Records a duration in seconds; a negative or non-finite one (a clock that went backwards) is counted, not recorded. */
  recordSeconds(histogram: HistogramRecorder, seconds: number, attributes: Attributes): void;
  /** The series of `histogram` for `attributes` (an object the signal keeps and reuses). */
  histogramSeries(histogram: HistogramRecorder, attributes: Attributes): HistogramSeries;
  /**
   * The series of `counter` for `attributes` (an object the signal keeps and
   * reuses). With `atZero` the series is exported at 0 from now on, before
   * its first add, so `rate()` and `increase()` see that first add; a series
   * is otherwise exported from its first add. Use it for the series a rule
   * reads, once per subject (the label caps bound them).
   */
  counterSeries(counter: CounterRecorder, attributes: Attributes, atZero?: boolean): CounterSeries;
  /** `recordSeconds` into a series resolved once. */
  recordSecondsIn(series: HistogramSeries, seconds: number): void;
  /**
   * Announces the level of `report.signal` for one subject (`report.labels`,
   * e.g. `{ queue: 'gen' }`): a change becomes an alert event for the
   * listeners and webhooks, and the level is exported and counted in
   * `monitor.level()` until it returns to ok. `report.message` is the detail
   * the event's message ends with, after `<signal> <LEVEL> on <subject>:`
   * (the subject is written from the labels, so it need not repeat it).
   * Never throws.
   */
  report(report: AlertReport): void;
  /** The level last announced for (signal, labels); ok when none was. */
  announced(signal: SignalName, labels: Record<string, string>): Level;
  /** A model or route label capped to the monitor's cardinality limit (`_other` past it). */
  label(kind: 'model' | 'route', value: unknown): string;
  /** Counts an error caught inside the signal (`infersignal.internal.errors{source}`) and warns once per source. */
  internalError(source: string, error: unknown): void;
  /** Takes the signal out of the monitor's loops (its owner stopped it); `close()` is not called. Idempotent. */
  unregister(): void;
}
