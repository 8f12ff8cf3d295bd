import type { Counter, Histogram, Meter, ObservableGauge } from '@opentelemetry/api';
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
 * The per-request instruments. In producer mode they are core's typed-array
 * aggregates, read at collection time by the MetricProducer, so a request
 * never pays for OTel attribute hashing; the chosen implementation is fixed
 * at construction, like pino's level functions.
 */
function hotPath(meter: Meter, mode: ExportMode) {
  if (mode === 'producer') {
    const h = (spec: InstrumentSpec) => new AggregateHistogram(spec, HISTOGRAM_BUCKETS[spec.name]);
    const c = (spec: InstrumentSpec) => new AggregateCounter(spec);
    return {
      queueWait: h(METRICS.queueWait) as HistogramLike,
      inferenceDuration: h(METRICS.inferenceDuration) as HistogramLike,
      requestDuration: h(METRICS.requestDuration) as HistogramLike,
      timeToFirstToken: h(METRICS.timeToFirstToken) as HistogramLike,
      timePerOutputToken: h(METRICS.timePerOutputToken) as HistogramLike,
      requests: c(METRICS.requests) as CounterLike,
      streams: c(METRICS.streams) as CounterLike,
      streamTokens: c(METRICS.streamTokens) as CounterLike,
    };
  }
  return {
    queueWait: histogram(meter, METRICS.queueWait) as HistogramLike,
    inferenceDuration: histogram(meter, METRICS.inferenceDuration) as HistogramLike,
    requestDuration: histogram(meter, METRICS.requestDuration) as HistogramLike,
    timeToFirstToken: histogram(meter, METRICS.timeToFirstToken) as HistogramLike,
    timePerOutputToken: histogram(meter, METRICS.timePerOutputToken) as HistogramLike,
    requests: counter(meter, METRICS.requests) as CounterLike,
    streams: counter(meter, METRICS.streams) as CounterLike,
    streamTokens: counter(meter, METRICS.streamTokens) as CounterLike,
  };
}

/** The observable gauges, read from core's state in one batch callback at collection. */
function gauges(meter: Meter) {
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
    eventLoopDelayP50: METRICS.eventLoopDelayP50,
    eventLoopDelayP99: METRICS.eventLoopDelayP99,
    eventLoopDelayMax: METRICS.eventLoopDelayMax,
    eventLoopUtilization: METRICS.eventLoopUtilization,
  };
  return Object.fromEntries(Object.entries(specs).map(([key, spec]) => [key, gauge(meter, spec)])) as Record<keyof typeof specs, ObservableGauge>;
}

/** Core's OTel instruments, created once per monitor. */
export function createInstruments(meter: Meter, mode: ExportMode = 'api') {
  const observables = gauges(meter);
  return {
    ...hotPath(meter, mode),
    ...observables,
    /** Every observable gauge, for the monitor's batch callback. */
    observables: Object.values(observables),
    modelLoadDuration: histogram(meter, METRICS.modelLoadDuration),
    modelLoadSpikes: counter(meter, METRICS.modelLoadSpikes),
    alerts: counter(meter, METRICS.alerts),
    internalErrors: counter(meter, METRICS.internalErrors),
    webhookDropped: counter(meter, METRICS.webhookDropped),
    gcDuration: histogram(meter, METRICS.gcDuration),
  };
}

export type Instruments = ReturnType<typeof createInstruments>;
