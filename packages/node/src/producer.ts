/**
 * Core's MetricProducer as the SDK's `MetricProducer` type, one per reader.
 *
 * Core matches the SDK interface structurally (it may not import the SDK),
 * so its type does not assign to `metricProducers: MetricProducer[]`; this
 * is the typed adapter. A reader that wants delta points needs a producer of
 * its own (it remembers what that reader was last sent): pass the reader or
 * its exporter, whose `selectAggregationTemporality` is asked at each
 * collection, the way the SDK asks it for its own instruments.
 */
import type { Monitor } from '@infersignal/core';

/** Core's producer (`monitor.metricProducer`), the SDK's MetricProducer matched structurally. */
type CoreMetricProducerLike = NonNullable<Monitor['metricProducer']>;
import {
  AggregationTemporality,
  InstrumentType,
  type CollectionResult,
  type MetricProducer,
} from '@opentelemetry/sdk-metrics';

/** A reader or push exporter: anything that says which temporality it wants per instrument type. */
export interface TemporalitySource {
  selectAggregationTemporality?(instrumentType: InstrumentType): AggregationTemporality;
}

const EMPTY: CollectionResult = {
  resourceMetrics: { resource: undefined as never, scopeMetrics: [] },
  errors: [],
};

/**
 * A producer reading `core()` (called at each collection: the monitor may be
 * made after the reader). `source` decides the temporality; without one the
 * points are cumulative. `onCollect` is told each time it is read.
 */
export function sdkMetricProducer(
  core: () => CoreMetricProducerLike | undefined,
  source?: TemporalitySource,
  onCollect?: () => void,
  /** Cumulative copies of the series instead of data points (`collectSeries`), for the Prometheus writer. */
  series = false,
): MetricProducer {
  let own: CoreMetricProducerLike | undefined;
  const select = source?.selectAggregationTemporality?.bind(source);
  const temporality = select
    ? (kind: 'histogram' | 'counter') =>
        select(kind === 'histogram' ? InstrumentType.HISTOGRAM : InstrumentType.COUNTER) ===
        AggregationTemporality.DELTA
          ? ('delta' as const)
          : ('cumulative' as const)
    : undefined;
  return {
    async collect(options) {
      onCollect?.();
      const base = core();
      if (base === undefined) return EMPTY;
      if (series && base.collectSeries) return (await base.collectSeries()) as CollectionResult;
      own ??= temporality ? base.forTemporality(temporality) : base;
      return (await own.collect(options)) as CollectionResult;
    },
  };
}
