import {
  createNoopMeter,
  type Counter,
  type Histogram,
  type Meter,
  type Observable,
  type ObservableGauge,
} from '@opentelemetry/api';
import { AggregateCounter, AggregateHistogram } from './export/producer';
import { HISTOGRAM_BUCKETS, METRICS, type InstrumentSpec } from './names';

export type ExportMode = 'api' | 'producer';

/** What the hot path calls: an OTel instrument, or core's own aggregate in producer mode. */
export interface HistogramLike {
  record(value: number, attributes?: import('@opentelemetry/api').Attributes): void;
}
export interface CounterLike {
  add(value: number, attributes?: import('@opentelemetry/api').Attributes): void;
}

function histogram(meter: Meter, spec: InstrumentSpec): Histogram {
  const boundaries = HISTOGRAM_BUCKETS[spec.name];
  return meter.createHistogram(spec.name, {
    unit: spec.unit,
    description: spec.description,
    // Advisory buckets: SDKs that honour advice use them without a View.
    ...(boundaries ? { advice: { explicitBucketBoundaries: [...boundaries] } } : {}),
  });
}

function counter(meter: Meter, spec: InstrumentSpec): Counter {
  return meter.createCounter(spec.name, { unit: spec.unit, description: spec.description });
}

function gauge(meter: Meter, spec: InstrumentSpec): ObservableGauge {
  return meter.createObservableGauge(spec.name, { unit: spec.unit, description: spec.description });
}

/**
 * The per-request instruments. In producer mode the histograms are core's
 * typed-array aggregates, read at collection time by the MetricProducer, so
 * a request never pays for OTel attribute hashing; in API mode they are OTel
 * histograms. The chosen implementation is fixed at construction, like
 * pino's level functions. Counters are core's aggregates in both modes: in
 * API mode observable counters report their totals at collection (the same
 * cumulative sums), which spares each request and each streamed token one
 * SDK call.
 */
function hotPath(meter: Meter, mode: ExportMode) {
  const h =
    mode === 'producer'
      ? (spec: InstrumentSpec): HistogramLike => new AggregateHistogram(spec, HISTOGRAM_BUCKETS[spec.name])
      : (spec: InstrumentSpec): HistogramLike => histogram(meter, spec);
  const requests = new AggregateCounter(METRICS.requests);
  const streams = new AggregateCounter(METRICS.streams);
  const streamTokens = new AggregateCounter(METRICS.streamTokens);
  return {
    queueWait: h(METRICS.queueWait),
    inferenceDuration: h(METRICS.inferenceDuration),
    requestDuration: h(METRICS.requestDuration),
    timeToFirstToken: h(METRICS.timeToFirstToken),
    timePerOutputToken: h(METRICS.timePerOutputToken),
    requests: requests as CounterLike,
    streams: streams as CounterLike,
    streamTokens: streamTokens as CounterLike,
    /** API mode: each aggregate counter with the observable counter that reports it. */
    counterObservables:
      mode === 'producer'
        ? []
        : [requests, streams, streamTokens].map((aggregate) => ({
            aggregate,
            observable: meter.createObservableCounter(aggregate.spec.name, {
              unit: aggregate.spec.unit,
              description: aggregate.spec.description,
            }),
          })),
  };
}

/**
 * The observable gauges, read from core's state in one batch callback at
 * collection. The Node runtime ones go to `runtimeMeter`: a no-op meter
 * when another exporter (instrumentation-runtime-node) owns those names.
 */
function gauges(meter: Meter, runtimeMeter: Meter) {
  const specs = {
    queueWaiting: METRICS.queueWaiting,
    queueInFlight: METRICS.queueInFlight,
    queueCapacity: METRICS.queueCapacity,
    queueOccupancy: METRICS.queueOccupancy,
    backpressureLevel: METRICS.backpressureLevel,
    modelLoadBaseline: METRICS.modelLoadBaseline,
    streamInterruptedRatio: METRICS.streamInterruptedRatio,
    memoryAllocated: METRICS.memoryAllocated,
    memoryReserved: METRICS.memoryReserved,
    memoryFragmentation: METRICS.memoryFragmentation,
    memoryGapGrowth: METRICS.memoryGapGrowth,
    signalLevel: METRICS.signalLevel,
    queueArrivalRate: METRICS.queueArrivalRate,
    queueCompletionRate: METRICS.queueCompletionRate,
    queueServiceTime: METRICS.queueServiceTime,
    queueServiceTimeP90: METRICS.queueServiceTimeP90,
    queueUtilization: METRICS.queueUtilization,
    queueHeadroom: METRICS.queueHeadroom,
    queueWaitPredicted: METRICS.queueWaitPredicted,
    queueTimeToSaturation: METRICS.queueTimeToSaturation,
  };
  const runtime = {
    eventLoopDelayP50: METRICS.eventLoopDelayP50,
    eventLoopDelayP99: METRICS.eventLoopDelayP99,
    eventLoopDelayMax: METRICS.eventLoopDelayMax,
    eventLoopUtilization: METRICS.eventLoopUtilization,
  };
  const make = <K extends string>(on: Meter, group: Record<K, InstrumentSpec>) =>
    Object.fromEntries(Object.entries(group).map(([key, spec]) => [key, gauge(on, spec as InstrumentSpec)])) as Record<
      K,
      ObservableGauge
    >;
  const own = make(meter, specs);
  const node = make(runtimeMeter, runtime);
  return {
    all: { ...own, ...node },
    exported: runtimeMeter === meter ? [...Object.values(own), ...Object.values(node)] : Object.values(own),
  };
}

/**
 * Core's OTel instruments, created once per monitor. With `runtimeMetrics`
 * false the event-loop gauges and the GC histogram are not exported (the
 * event-loop signal still samples and judges the loop).
 */
export function createInstruments(meter: Meter, mode: ExportMode = 'api', runtimeMetrics = true) {
  const runtimeMeter = runtimeMetrics ? meter : createNoopMeter();
  const observables = gauges(meter, runtimeMeter);
  const hot = hotPath(meter, mode);
  return {
    ...hot,
    ...observables.all,
    /** Every exported observable instrument, for the monitor's batch callback. */
    observables: [...observables.exported, ...hot.counterObservables.map((c) => c.observable)] as Observable[],
    modelLoadDuration: histogram(meter, METRICS.modelLoadDuration),
    modelLoadSpikes: counter(meter, METRICS.modelLoadSpikes),
    alerts: counter(meter, METRICS.alerts),
    internalErrors: counter(meter, METRICS.internalErrors),
    webhookDropped: counter(meter, METRICS.webhookDropped),
    gcDuration: histogram(runtimeMeter, METRICS.gcDuration),
  };
}

export type Instruments = ReturnType<typeof createInstruments>;
