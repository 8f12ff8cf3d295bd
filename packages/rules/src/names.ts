/**
 * Prometheus names of the series the rules and the dashboard read, all
 * derived from core's METRICS / ATTR through `prometheusName()` and
 * `prometheusLabel()`: the generator never spells a metric name itself, so
 * a rename in core's names file reaches the rules, the dashboard and the
 * Kubernetes examples on the next generation.
 */
import { ATTR, METRICS, prometheusLabel, prometheusName, type InstrumentSpec, type MetricKey } from '@infersignal/core';

/** Prometheus name of a core instrument (counters end in `_total`, histograms are the family name). */
export function metric(key: MetricKey): string {
  return prometheusName(METRICS[key] as InstrumentSpec);
}

/** A histogram's `_bucket` series. */
export function bucket(key: MetricKey): string {
  return `${metric(key)}_bucket`;
}

/**
 * Base name used inside recording-rule names (`level:metric:operations`):
 * the Prometheus name without the `_total` counter suffix, as the
 * Prometheus recording-rule naming practice asks.
 */
export function recordBase(key: MetricKey): string {
  return metric(key).replace(/_total$/, '');
}

/** Label names, as the exporter writes the OTel attribute keys. */
export const LABEL = {
  model: prometheusLabel(ATTR.model),
  queue: prometheusLabel(ATTR.queue),
  outcome: prometheusLabel(ATTR.outcome),
  loadKind: prometheusLabel(ATTR.loadKind),
  memorySource: prometheusLabel(ATTR.memorySource),
  errorSource: prometheusLabel(ATTR.errorSource),
  signal: prometheusLabel(ATTR.signal),
  /** The instrumented HTTP(S) server (`instrumentServer`'s `name`). */
  server: prometheusLabel(ATTR.server),
  errorType: prometheusLabel(ATTR.errorType),
  breakerName: prometheusLabel(ATTR.breakerName),
  /** GC kind of `v8js.gc.duration` (core names the attribute on the instrument only). */
  gcType: prometheusLabel(METRICS.gcDuration.attributes[0]),
} as const;

/** Which core instruments the generated rules read (the exporter test checks each exists in a real scrape). */
export const RULE_METRICS: readonly MetricKey[] = [
  'queueWait',
  'queueOccupancy',
  'backpressureLevel',
  'modelLoadSpikes',
  'streams',
  'memoryAllocated',
  'memoryReserved',
  'memoryFragmentation',
  'internalErrors',
  'queueUtilization',
  'queueTimeToSaturation',
  'eventLoopDelayP99',
  'connectionsOpen',
  'connectionsCapacity',
  'connectionsRejected',
  'tlsHandshakeFailures',
  'breakerState',
];

/** Stream outcomes that count as completed; every other outcome is an interruption (core's StreamOutcome). */
export const COMPLETED_OUTCOME = 'completed';
