import type { Counter, Histogram, Meter, ObservableGauge } from '@opentelemetry/api';
import { HISTOGRAM_BUCKETS, METRICS, type InstrumentSpec } from './names';

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

/** Core's OTel instruments, created once per monitor. */
export function createInstruments(meter: Meter) {
  return {
    queueWait: histogram(meter, METRICS.queueWait),
    inferenceDuration: histogram(meter, METRICS.inferenceDuration),
    requestDuration: histogram(meter, METRICS.requestDuration),
    requests: counter(meter, METRICS.requests),
    modelLoadDuration: histogram(meter, METRICS.modelLoadDuration),
    modelLoadSpikes: counter(meter, METRICS.modelLoadSpikes),
    timeToFirstToken: histogram(meter, METRICS.timeToFirstToken),
    timePerOutputToken: histogram(meter, METRICS.timePerOutputToken),
    streams: counter(meter, METRICS.streams),
    streamTokens: counter(meter, METRICS.streamTokens),
    alerts: counter(meter, METRICS.alerts),
    internalErrors: counter(meter, METRICS.internalErrors),
    webhookDropped: counter(meter, METRICS.webhookDropped),
    queueWaiting: gauge(meter, METRICS.queueWaiting),
    queueInFlight: gauge(meter, METRICS.queueInFlight),
    queueCapacity: gauge(meter, METRICS.queueCapacity),
    queueOccupancy: gauge(meter, METRICS.queueOccupancy),
    backpressureLevel: gauge(meter, METRICS.backpressureLevel),
    modelLoadBaseline: gauge(meter, METRICS.modelLoadBaseline),
    streamInterruptedRatio: gauge(meter, METRICS.streamInterruptedRatio),
    memoryAllocated: gauge(meter, METRICS.memoryAllocated),
    memoryReserved: gauge(meter, METRICS.memoryReserved),
    memoryFragmentation: gauge(meter, METRICS.memoryFragmentation),
    memoryGapGrowth: gauge(meter, METRICS.memoryGapGrowth),
    signalLevel: gauge(meter, METRICS.signalLevel),
    queueArrivalRate: gauge(meter, METRICS.queueArrivalRate),
    queueCompletionRate: gauge(meter, METRICS.queueCompletionRate),
    queueServiceTime: gauge(meter, METRICS.queueServiceTime),
    queueServiceTimeP90: gauge(meter, METRICS.queueServiceTimeP90),
    queueUtilization: gauge(meter, METRICS.queueUtilization),
    queueHeadroom: gauge(meter, METRICS.queueHeadroom),
    queueWaitPredicted: gauge(meter, METRICS.queueWaitPredicted),
    queueTimeToSaturation: gauge(meter, METRICS.queueTimeToSaturation),
    eventLoopDelayP50: gauge(meter, METRICS.eventLoopDelayP50),
    eventLoopDelayP99: gauge(meter, METRICS.eventLoopDelayP99),
    eventLoopDelayMax: gauge(meter, METRICS.eventLoopDelayMax),
    eventLoopUtilization: gauge(meter, METRICS.eventLoopUtilization),
    gcDuration: histogram(meter, METRICS.gcDuration),
  };
}

export type Instruments = ReturnType<typeof createInstruments>;
