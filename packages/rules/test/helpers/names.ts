import { METRICS, prometheusName, type InstrumentSpec, type MetricKey } from '@infersignal/core';

/** The Prometheus name core documents for an instrument (tests build input series with it). */
export function metricName(key: MetricKey): string {
  return prometheusName(METRICS[key] as InstrumentSpec);
}
