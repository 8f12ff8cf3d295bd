import type { Attributes } from '@opentelemetry/api';
import { FixedHistogram } from '../aggregates/histogram';
import type { InstrumentSpec } from '../names';
import { SCOPE } from '../version';

/** Series kept per aggregate instrument; label values are capped before they get here, so this is a guard. */
const MAX_SERIES = 2000;

// Values of @opentelemetry/sdk-metrics enums, written out so core does not import the SDK.
const DATA_POINT_HISTOGRAM = 0;
const DATA_POINT_SUM = 3;
const TEMPORALITY_DELTA = 0;
const TEMPORALITY_CUMULATIVE = 1;
const VALUE_TYPE_DOUBLE = 1;

export type Temporality = 'cumulative' | 'delta';
/** The temporality a reader wants for core's aggregate kinds, asked at every collection. */
export type TemporalitySelector = (instrument: 'histogram' | 'counter') => Temporality;
const ALWAYS_CUMULATIVE: TemporalitySelector = () => 'cumulative';

/** What a delta reader saw of one series at its previous collection. */
interface Reported {
  counts: Float64Array | undefined;
  count: number;
  sum: number;
}

type HrTime = [number, number];

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

/** Shared default: an omitted attributes argument is one series, not a new object per call. */
const NO_ATTRIBUTES: Attributes = Object.freeze({});
/** Other objects with the same attribute values, remembered so they hit by identity next time (bounded). */
const MAX_ALIASES = 4 * MAX_SERIES;

/** Attribute sets equal by value compare equal here. */
function seriesKey(attributes: Attributes): string {
  return JSON.stringify(
    Object.keys(attributes)
      .sort()
      .map((key) => [key, attributes[key]]),
  );
}

/**
 * Series of one aggregate instrument, found by the identity of the
 * attribute object: callers cache their attribute objects, so a record is
 * one Map lookup, no hashing of attributes, no allocation. An object seen
 * for the first time is matched by value, so a caller that builds a fresh
 * object per call still lands in the right series (at the cost of a key).
 */
class SeriesTable<T> {
  /** First attribute object of each series → its cell; what the producer exports. */
  readonly series = new Map<Attributes, T>();
  private readonly byValue = new Map<string, T>();
  private readonly aliases = new Map<Attributes, T>();
  dropped = 0;

  constructor(private readonly create: () => T) {}

  cell(attributes: Attributes): T | undefined {
    return this.series.get(attributes) ?? this.aliases.get(attributes) ?? this.lookup(attributes);
  }

  private lookup(attributes: Attributes): T | undefined {
    const key = seriesKey(attributes);
    let cell = this.byValue.get(key);
    if (cell !== undefined) {
      if (this.aliases.size < MAX_ALIASES) this.aliases.set(attributes, cell);
      return cell;
    }
    if (this.series.size >= MAX_SERIES) {
      this.dropped++;
      return undefined;
    }
    cell = this.create();
    this.series.set(attributes, cell);
    this.byValue.set(key, cell);
    return cell;
  }
}

/**
 * Producer-mode histogram: the same `record(value, attributes)` call as an
 * OTel histogram, but it only updates a typed-array histogram of its
 * series. The SDK reads it at collection time through the producer.
 */
export class AggregateHistogram {
  private readonly table: SeriesTable<FixedHistogram>;

  constructor(
    readonly spec: InstrumentSpec,
    readonly boundaries: readonly number[],
  ) {
    this.table = new SeriesTable(() => new FixedHistogram(boundaries));
  }

  get series(): ReadonlyMap<Attributes, FixedHistogram> {
    return this.table.series;
  }

  get dropped(): number {
    return this.table.dropped;
  }

  record(value: number, attributes: Attributes = NO_ATTRIBUTES): void {
    this.table.cell(attributes)?.record(value);
  }
}

/** Core's counter: a running sum per series, exported by the producer (or an observable counter in api export). */
export class AggregateCounter {
  private readonly table = new SeriesTable(() => ({ value: 0 }));

  constructor(readonly spec: InstrumentSpec) {}

  get series(): ReadonlyMap<Attributes, { value: number }> {
    return this.table.series;
  }

  get dropped(): number {
    return this.table.dropped;
  }

  add(value: number, attributes: Attributes = NO_ATTRIBUTES): void {
    const cell = this.table.cell(attributes);
    if (cell !== undefined) cell.value += value;
  }
}

/**
 * A MetricProducer (the `@opentelemetry/sdk-metrics` interface, matched
 * structurally) that exports core's own aggregates at collection time.
 * Register it on the application's MetricReader
 * (`metricProducers: [monitor.metricProducer]`); `@infersignal/node` does.
 *
 * It reports cumulative points unless made with a temporality selector
 * (`forTemporality`): a delta producer keeps what it last reported per
 * series, so each reader that wants deltas needs its own producer. Delta
 * histogram points carry no min/max (the aggregates keep them since start
 * only).
 */
export class CoreMetricProducer {
  private readonly startTime: HrTime;
  /** End of the previous collection: the start of the next delta point. */
  private lastCollect: HrTime;
  private readonly reported = new Map<object, Reported>();

  constructor(
    private readonly histograms: AggregateHistogram[],
    private readonly counters: AggregateCounter[],
    private readonly clock: () => number,
    startMs: number,
    private readonly temporality: TemporalitySelector = ALWAYS_CUMULATIVE,
  ) {
    this.startTime = hrTime(startMs);
    this.lastCollect = this.startTime;
  }

  /** A producer over the same aggregates for one reader, with its own delta state. */
  forTemporality(temporality: TemporalitySelector): CoreMetricProducer {
    return new CoreMetricProducer(this.histograms, this.counters, this.clock, this.clock(), temporality);
  }

  /** The change of a series since this producer last reported it; undefined when nothing changed. */
  private delta(key: object, count: number, sum: number, counts?: Float64Array): Reported | undefined {
    const last = this.reported.get(key);
    if (last === undefined) {
      this.reported.set(key, { counts: counts?.slice(), count, sum });
      return count === 0 && sum === 0 ? undefined : { counts, count, sum };
    }
    if (count === last.count && sum === last.sum) return undefined;
    const change: Reported = { counts: undefined, count: count - last.count, sum: sum - last.sum };
    if (counts && last.counts) {
      change.counts = counts.map((n, i) => n - (last.counts as Float64Array)[i]);
      last.counts.set(counts);
    }
    last.count = count;
    last.sum = sum;
    return change;
  }

  async collect(): Promise<{ resourceMetrics: { resource: unknown; scopeMetrics: unknown[] }; errors: unknown[] }> {
    const endTime = hrTime(this.clock());
    const metrics: unknown[] = [];
    const histogramDelta = this.temporality('histogram') === 'delta';
    const counterDelta = this.temporality('counter') === 'delta';
    const deltaStart = this.lastCollect;
    for (const h of this.histograms) {
      if (h.series.size === 0) continue;
      const dataPoints = [];
      for (const [attributes, fixed] of h.series) {
        if (fixed.count === 0) continue;
        if (histogramDelta) {
          const change = this.delta(fixed, fixed.count, fixed.sum, fixed.counts);
          if (change === undefined) continue;
          dataPoints.push({
            startTime: deltaStart,
            endTime,
            attributes,
            value: {
              buckets: { boundaries: [...h.boundaries], counts: Array.from(change.counts ?? fixed.counts) },
              count: change.count,
              sum: change.sum,
            },
          });
          continue;
        }
        dataPoints.push({
          startTime: this.startTime,
          endTime,
          attributes,
          value: {
            buckets: { boundaries: [...h.boundaries], counts: Array.from(fixed.counts) },
            count: fixed.count,
            sum: fixed.sum,
            min: fixed.min,
            max: fixed.max,
          },
        });
      }
      if (dataPoints.length === 0) continue;
      metrics.push({
        descriptor: {
          name: h.spec.name,
          description: h.spec.description,
          unit: h.spec.unit,
          type: 'HISTOGRAM',
          valueType: VALUE_TYPE_DOUBLE,
        },
        aggregationTemporality: histogramDelta ? TEMPORALITY_DELTA : TEMPORALITY_CUMULATIVE,
        dataPointType: DATA_POINT_HISTOGRAM,
        dataPoints,
      });
    }
    for (const c of this.counters) {
      if (c.series.size === 0) continue;
      const dataPoints = [];
      for (const [attributes, cell] of c.series) {
        if (!counterDelta) {
          dataPoints.push({ startTime: this.startTime, endTime, attributes, value: cell.value });
          continue;
        }
        const change = this.delta(cell, cell.value, cell.value);
        if (change !== undefined) dataPoints.push({ startTime: deltaStart, endTime, attributes, value: change.count });
      }
      if (dataPoints.length === 0) continue;
      metrics.push({
        descriptor: {
          name: c.spec.name,
          description: c.spec.description,
          unit: c.spec.unit,
          type: 'COUNTER',
          valueType: VALUE_TYPE_DOUBLE,
        },
        aggregationTemporality: counterDelta ? TEMPORALITY_DELTA : TEMPORALITY_CUMULATIVE,
        dataPointType: DATA_POINT_SUM,
        isMonotonic: true,
        dataPoints,
      });
    }
    this.lastCollect = endTime;
    return {
      // The reader keeps the SDK's own resource and merges these scope metrics into it.
      resourceMetrics: {
        resource: undefined,
        scopeMetrics: metrics.length ? [{ scope: SCOPE, metrics }] : [],
      },
      errors: [],
    };
  }
}
