/**
 * Prometheus names of the series the rules and the dashboard read, all
 * derived from core's METRICS / ATTR: the generator never spells a metric
 * name itself, so a rename in core's names file reaches the rules, the
 * dashboard and the Kubernetes examples on the next generation.
 *
 * The same OTel instrument has a different Prometheus name depending on the
 * path it took, so the generators take a naming:
 * - `collector`: the OpenTelemetry Collector's Prometheus exporters,
 *   `@infersignal/node`'s `start()`, and Prometheus's own OTLP receiver with
 *   its default translation (`UnderscoreEscapingWithSuffixes`): unit suffix
 *   (`_seconds`, `_bytes`, `_ratio` for unit-1 gauges), `_total` on counters.
 *   Core's `prometheusName()`.
 * - `otel-js`: `@opentelemetry/exporter-prometheus` (`PrometheusExporter`) in
 *   an app's own SDK: dots to underscores, `_total` on counters, no unit
 *   suffix.
 */
import { ATTR, METRICS, prometheusLabel, prometheusName, type InstrumentSpec } from '@infersignal/core';

/** A key of core's METRICS. */
export type MetricKey = keyof typeof METRICS;

export type Naming = 'collector' | 'otel-js';
export const NAMINGS: readonly Naming[] = ['collector', 'otel-js'];

/** The Prometheus name of an instrument as the `naming` path writes it. */
export function prometheusNameFor(spec: InstrumentSpec, naming: Naming): string {
  if (naming === 'collector') return prometheusName(spec);
  // exporter-prometheus: invalid characters and runs of underscores become one underscore; monotonic sums get _total.
  const name = spec.name.replace(/[^a-zA-Z0-9_]/g, '_').replace(/_{2,}/g, '_');
  return spec.type === 'counter' && !name.endsWith('_total') ? `${name}_total` : name;
}

export interface MetricNames {
  /** Prometheus name of a core instrument (counters end in `_total`, histograms are the family name). */
  metric(key: MetricKey): string;
  /** A histogram's `_bucket` series. */
  bucket(key: MetricKey): string;
}

export function metricNames(naming: Naming): MetricNames {
  const metric = (key: MetricKey) => prometheusNameFor(METRICS[key] as InstrumentSpec, naming);
  return { metric, bucket: (key) => `${metric(key)}_bucket` };
}

/**
 * Base name used inside recording-rule names (`level:metric:operations`):
 * the Collector-style name without the `_total` counter suffix, as the
 * Prometheus recording-rule naming practice asks. The same for every
 * naming, so what reads the recorded series never changes with it.
 */
export function recordBase(key: MetricKey): string {
  return specRecordBase(METRICS[key] as InstrumentSpec);
}

/** `recordBase` of an instrument spec (a signal definition's). */
export function specRecordBase(spec: InstrumentSpec): string {
  return prometheusName(spec).replace(/_total$/, '');
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
  /** `input` / `output` on the token backlog gauge. */
  tokenType: prometheusLabel(ATTR.tokenType),
  breakerName: prometheusLabel(ATTR.breakerName),
  /** GC kind of `v8js.gc.duration` (core names the attribute on the instrument only). */
  gcType: prometheusLabel(METRICS.gcDuration.attributes[0]),
} as const;

/** Which core instruments the generated rules read (the exporter test checks each exists in a real scrape). */
export const RULE_METRICS: readonly MetricKey[] = [
  'queueWait',
  'queueOccupancy',
  'queueWaitOldest',
  'queueTokensDrainTime',
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
  'heapLiveRatio',
  'heapExhaustionTime',
  'connectionsOpen',
  'connectionsCapacity',
  'connectionsRejected',
  'tlsHandshakeFailures',
  'breakerState',
  'signalLevel',
];
