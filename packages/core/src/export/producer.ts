import type { Attributes } from '@opentelemetry/api';
import { FixedHistogram } from '../aggregates/histogram';
import type { InstrumentSpec } from '../names';
import { SCOPE } from '../version';

/** Series kept per aggregate instrument; attribute objects are cached by core, so this is never reached in practice. */
const MAX_SERIES = 2000;

// Values of @opentelemetry/sdk-metrics enums, written out so core does not import the SDK.
const DATA_POINT_HISTOGRAM = 0;
const DATA_POINT_SUM = 3;
const TEMPORALITY_CUMULATIVE = 1;
const VALUE_TYPE_DOUBLE = 1;

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
 */
export class CoreMetricProducer {
  private readonly startTime: HrTime;

  constructor(
    private readonly histograms: AggregateHistogram[],
    private readonly counters: AggregateCounter[],
    private readonly clock: () => number,
    startMs: number,
  ) {
    this.startTime = hrTime(startMs);
  }

  async collect(): Promise<{ resourceMetrics: { resource: unknown; scopeMetrics: unknown[] }; errors: unknown[] }> {
    const endTime = hrTime(this.clock());
    const metrics: unknown[] = [];
    for (const h of this.histograms) {
      if (h.series.size === 0) continue;
      const dataPoints = [];
      for (const [attributes, fixed] of h.series) {
        if (fixed.count === 0) continue;
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
      metrics.push({
        descriptor: {
          name: h.spec.name,
          description: h.spec.description,
          unit: h.spec.unit,
          type: 'HISTOGRAM',
          valueType: VALUE_TYPE_DOUBLE,
        },
        aggregationTemporality: TEMPORALITY_CUMULATIVE,
        dataPointType: DATA_POINT_HISTOGRAM,
        dataPoints,
      });
    }
    for (const c of this.counters) {
      if (c.series.size === 0) continue;
      const dataPoints = [];
      for (const [attributes, cell] of c.series)
        dataPoints.push({ startTime: this.startTime, endTime, attributes, value: cell.value });
      metrics.push({
        descriptor: {
          name: c.spec.name,
          description: c.spec.description,
          unit: c.spec.unit,
          type: 'COUNTER',
          valueType: VALUE_TYPE_DOUBLE,
        },
        aggregationTemporality: TEMPORALITY_CUMULATIVE,
        dataPointType: DATA_POINT_SUM,
        isMonotonic: true,
        dataPoints,
      });
    }
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
