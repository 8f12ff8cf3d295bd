import {
  createNoopMeter,
  type Attributes,
  type BatchObservableResult,
  type Histogram,
  type Meter,
  type Observable,
} from '@opentelemetry/api';
import { InferSignalConfigError } from './errors';
import type {
  CounterRecorder,
  CounterSeries,
  Gauge,
  GaugeObserver,
  HistogramRecorder,
  HistogramSeries,
} from './contract';
import {
  AggregateCounter,
  AggregateHistogram,
  MAX_SERIES,
  type ChangeCount,
  type GaugeReading,
  type SeriesDropListener,
} from './export/producer';
import { HISTOGRAM_BUCKETS, METRICS, type InstrumentSpec, type InstrumentType } from './names';
import { OPT_IN_METRICS } from './opt-in';

export type ExportMode = 'api' | 'producer';

/** A gauge as the monitor holds it: the spec a signal asked for and, read through the meter, its OTel observable. */
export interface ObservedGauge extends Gauge {
  /** False for a runtime gauge with `runtimeMetrics: false` or an opt-in one not asked for. */
  readonly exported: boolean;
  /** Set where the gauge is read through the meter (api mode, or `gaugesOnMeter`); else the producer reads it. */
  observable: Observable | undefined;
}

/**
 * The Node runtime's own figures. With `runtimeMetrics: false` another
 * exporter (instrumentation-runtime-node) owns these names: they are made,
 * so signals still record and judge, but not exported.
 */
const RUNTIME_NAMES: ReadonlySet<string> = new Set(
  [
    METRICS.eventLoopDelayP50,
    METRICS.eventLoopDelayP99,
    METRICS.eventLoopDelayMax,
    METRICS.eventLoopUtilization,
    METRICS.gcDuration,
    METRICS.heapUsed,
  ].map((spec) => spec.name),
);

/**
 * The instruments of one monitor, made once per metric name whoever asks
 * (built-in signals, signals of other packages, the monitor itself). The
 * implementation is chosen here, once, by export mode, like pino's level
 * functions:
 *
 * - histograms: OTel histograms (api), or core's typed-array aggregates
 *   read by the MetricProducer at collection (producer), so a request never
 *   pays for OTel attribute hashing;
 * - counters: core's aggregates in both modes. In api mode an observable
 *   counter reports their totals at collection (the same cumulative sums),
 *   which spares each request and each streamed token one SDK call;
 * - gauges: read from the signals at collection, in the monitor's one
 *   pass over them: by the producer (producer mode), or by OTel observable
 *   gauges in the monitor's one batch callback (api mode, `gaugesOnMeter`).
 */
export class Instruments {
  /** Producer mode: the histograms the MetricProducer exports. */
  readonly histograms: AggregateHistogram[] = [];
  /** Every counter; the producer exports them, or the batch callback in api mode. */
  readonly counters: AggregateCounter[] = [];
  /** Every gauge, in the order they were made: the producer reads the exported ones. */
  readonly gauges: ObservedGauge[] = [];
  /** Every observable instrument, for the monitor's batch callback. */
  readonly observables: Observable[] = [];
  private readonly counterObservables = new Map<AggregateCounter, Observable>();
  /** Api mode: the OTel histograms, each behind a holder a provider bound later swaps (`bind`). */
  private readonly otelHistograms: OtelHistogram[] = [];
  private readonly byName = new Map<string, HistogramRecorder | AggregateCounter | ObservedGauge>();

  constructor(
    /** Where the OTel instruments are made (api mode, `gaugesOnMeter`); `bind` moves them. */
    public meter: Meter,
    readonly mode: ExportMode,
    /** Called when an observable was added, so the batch callback can be registered again with it. */
    private readonly onObservable: () => void,
    private readonly runtimeMetrics = true,
    /**
     * Series kept per aggregate instrument (see seriesCapOf), who is told when one is dropped, and where the
     * aggregates count their records (the live board's).
     */
    private readonly series: { cap: number; onDrop?: SeriesDropListener; changes?: ChangeCount } = { cap: MAX_SERIES },
    /** Opt-in instruments asked for (opt-in.ts); the others of that list are made but not exported. */
    private readonly optIn: ReadonlySet<string> = new Set(),
    /** Producer mode: gauges through observable gauges on the meter all the same. */
    private readonly gaugesOnMeter = false,
  ) {}

  private exported(spec: InstrumentSpec): boolean {
    if (Object.hasOwn(OPT_IN_METRICS, spec.name) && !this.optIn.has(spec.name)) return false;
    return this.runtimeMetrics || !RUNTIME_NAMES.has(spec.name);
  }

  histogram(spec: InstrumentSpec): HistogramRecorder {
    return this.get(spec, 'histogram', () => {
      if (!this.exported(spec)) return createNoopMeter().createHistogram(spec.name);
      const boundaries = HISTOGRAM_BUCKETS[spec.name];
      if (this.mode === 'producer') {
        const aggregate = new AggregateHistogram(
          spec,
          boundaries ?? DEFAULT_BOUNDARIES,
          this.series.cap,
          this.series.onDrop,
          this.series.changes,
        );
        this.histograms.push(aggregate);
        return aggregate;
      }
      const histogram = new OtelHistogram(spec, boundaries, this.meter);
      this.otelHistograms.push(histogram);
      return histogram;
    });
  }

  counter(spec: InstrumentSpec): CounterRecorder {
    return this.get(spec, 'counter', () => {
      const aggregate = new AggregateCounter(spec, this.series.cap, this.series.onDrop, this.series.changes);
      this.counters.push(aggregate);
      if (this.mode === 'api') {
        const observable = this.meter.createObservableCounter(spec.name, options(spec));
        this.counterObservables.set(aggregate, observable);
        this.addObservable(observable);
      }
      return aggregate;
    });
  }

  gauge(spec: InstrumentSpec): Gauge {
    return this.get(spec, 'gauge', () => {
      const exported = this.exported(spec);
      let observable: Observable | undefined;
      if (exported && (this.mode === 'api' || this.gaugesOnMeter)) {
        observable = this.meter.createObservableGauge(spec.name, options(spec));
        this.addObservable(observable);
      }
      const gauge: ObservedGauge = { spec, exported, observable };
      this.gauges.push(gauge);
      return gauge;
    });
  }

  /**
   * Makes every OTel instrument again on `meter` (a provider bound after the
   * monitor was made: NodeSDK's `setMeterProvider`, what an OTel
   * instrumentation does in `_updateMetricInstruments`). The caller
   * registers its batch callback again with the new `observables`.
   */
  bind(meter: Meter): void {
    this.meter = meter;
    for (const histogram of this.otelHistograms) histogram.bind(meter);
    this.observables.length = 0;
    for (const [aggregate] of this.counterObservables) {
      const observable = meter.createObservableCounter(aggregate.spec.name, options(aggregate.spec));
      this.counterObservables.set(aggregate, observable);
      this.observables.push(observable);
    }
    for (const gauge of this.gauges) {
      if (gauge.observable === undefined) continue;
      gauge.observable = meter.createObservableGauge(gauge.spec.name, options(gauge.spec));
      this.observables.push(gauge.observable);
    }
  }

  /** The observer handed to each signal's `observe()` during one collection. */
  observer(result: BatchObservableResult): GaugeObserver {
    return {
      observe(gauge: Gauge, value: number, attributes?: Attributes): void {
        const { observable } = gauge as ObservedGauge;
        if (observable !== undefined) result.observe(observable, value, attributes);
      },
    };
  }

  /**
   * Every exported gauge the meter does not read, as `observeAll` reports
   * it now (the producer's read): in the order the gauges were made, series
   * in the order observed.
   */
  readGauges(observeAll: (observer: GaugeObserver) => void): GaugeReading[] {
    // The meter's batch callback reads them all: no second pass over the signals.
    if (this.mode === 'api' || this.gaugesOnMeter) return [];
    const readings = new Map<Gauge, { reading: GaugeReading; at: Map<Attributes, number> }>();
    observeAll({
      observe(gauge: Gauge, value: number, attributes: Attributes = NO_ATTRIBUTES): void {
        const { exported, observable } = gauge as ObservedGauge;
        if (!exported || observable !== undefined) return;
        let entry = readings.get(gauge);
        if (entry === undefined) {
          entry = { reading: { spec: gauge.spec, attributes: [], values: [] }, at: new Map() };
          readings.set(gauge, entry);
        }
        const { reading, at } = entry;
        const known = at.get(attributes);
        if (known !== undefined) {
          reading.values[known] = value;
          return;
        }
        at.set(attributes, reading.values.length);
        reading.attributes.push(attributes);
        reading.values.push(value);
      },
    });
    const out: GaugeReading[] = [];
    for (const gauge of this.gauges) {
      const entry = readings.get(gauge);
      if (entry !== undefined) out.push(entry.reading);
    }
    return out;
  }

  /** Api mode: each counter's totals through its observable counter. */
  observeCounters(result: BatchObservableResult): void {
    for (const [aggregate, observable] of this.counterObservables) {
      for (const [attributes, cell] of aggregate.series) result.observe(observable, cell.value, attributes);
    }
  }

  private get<T extends HistogramRecorder | AggregateCounter | ObservedGauge>(
    spec: InstrumentSpec,
    type: InstrumentType,
    create: () => T,
  ): T {
    if (spec?.type !== type || typeof spec.name !== 'string')
      throw new InferSignalConfigError('spec', `${JSON.stringify(spec?.name)} is not a ${type} spec from names.ts`);
    const existing = this.byName.get(spec.name);
    if (existing !== undefined) return existing as T;
    const made = create();
    this.byName.set(spec.name, made);
    return made;
  }

  private addObservable(observable: Observable): void {
    this.observables.push(observable);
    this.onObservable();
  }
}

/** One series for a gauge observed without attributes. */
const NO_ATTRIBUTES: Attributes = Object.freeze({});

/** The OTel SDK's default boundaries, for a histogram without a bucket set in names.ts. */
const DEFAULT_BOUNDARIES: readonly number[] = [0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000];

const options = (spec: InstrumentSpec) => ({ unit: spec.unit, description: spec.description });

/** Api mode: an OTel histogram, made again on the meter of a provider bound later. */
class OtelHistogram implements HistogramRecorder {
  private target: Histogram;

  constructor(
    private readonly spec: InstrumentSpec,
    private readonly boundaries: readonly number[] | undefined,
    meter: Meter,
  ) {
    this.target = this.make(meter);
  }

  record(value: number, attributes?: Attributes): void {
    this.target.record(value, attributes);
  }

  bind(meter: Meter): void {
    this.target = this.make(meter);
  }

  private make(meter: Meter): Histogram {
    const { spec, boundaries } = this;
    return meter.createHistogram(spec.name, {
      ...options(spec),
      // Advisory buckets: SDKs that honour advice use them without a View.
      ...(boundaries ? { advice: { explicitBucketBoundaries: [...boundaries] } } : {}),
    });
  }
}

/** An OTel histogram's series: the SDK looks the attributes up itself at every record. */
class OtelHistogramSeries implements HistogramSeries {
  constructor(
    private readonly histogram: HistogramRecorder,
    private readonly attributes: Attributes,
  ) {}

  record(value: number): void {
    this.histogram.record(value, this.attributes);
  }
}

/** A counter that is not core's aggregate (a signal's own recorder): its attributes passed at every add. */
class OtherCounterSeries implements CounterSeries {
  constructor(
    private readonly counter: CounterRecorder,
    private readonly attributes: Attributes,
    atZero: boolean,
  ) {
    // An OTel SDK counter makes the series at its first add, 0 included.
    if (atZero) counter.add(0, attributes);
  }

  add(value: number): void {
    this.counter.add(value, this.attributes);
  }
}

/** The series of `histogram` for `attributes`: core's aggregate resolves its cell once; an OTel histogram is wrapped. */
export function histogramSeries(histogram: HistogramRecorder, attributes: Attributes): HistogramSeries {
  return histogram instanceof AggregateHistogram
    ? histogram.seriesOf(attributes)
    : new OtelHistogramSeries(histogram, attributes);
}

/**
 * The series of `counter` for `attributes` (see histogramSeries); with
 * `atZero` it is exported at 0 from now on, before its first add.
 */
export function counterSeries(counter: CounterRecorder, attributes: Attributes, atZero = false): CounterSeries {
  return counter instanceof AggregateCounter
    ? counter.seriesOf(attributes, atZero)
    : new OtherCounterSeries(counter, attributes, atZero);
}
