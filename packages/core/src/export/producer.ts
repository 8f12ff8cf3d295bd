import type { Attributes } from '@opentelemetry/api';
import { FixedHistogram } from '../aggregates/histogram';
import type { InstrumentSpec } from '../names';
import { SCOPE } from '../version';

/** Series kept per aggregate instrument; attribute objects are cached by core, so this is never reached in practice. */
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

/**
 * Producer-mode histogram: the same `record(value, attributes)` call as an
 * OTel histogram, but it only updates a typed-array histogram found by
 * the identity of the (cached) attribute object — no attribute hashing,
 * no allocation. The SDK reads it at collection time through the producer.
 */
export class AggregateHistogram {
  readonly series = new Map<Attributes, FixedHistogram>();
  dropped = 0;

  constructor(
    readonly spec: InstrumentSpec,
    readonly boundaries: readonly number[],
  ) {}

  record(value: number, attributes: Attributes = {}): void {
    let histogram = this.series.get(attributes);
    if (histogram === undefined) {
      if (this.series.size >= MAX_SERIES) {
        this.dropped++;
        return;
      }
      histogram = new FixedHistogram(this.boundaries);
      this.series.set(attributes, histogram);
    }
    histogram.record(value);
  }
}

export class AggregateCounter {
  readonly series = new Map<Attributes, { value: number }>();
  dropped = 0;

  constructor(readonly spec: InstrumentSpec) {}

  add(value: number, attributes: Attributes = {}): void {
    let cell = this.series.get(attributes);
    if (cell === undefined) {
      if (this.series.size >= MAX_SERIES) {
        this.dropped++;
        return;
      }
      cell = { value: 0 };
      this.series.set(attributes, cell);
    }
    cell.value += value;
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
