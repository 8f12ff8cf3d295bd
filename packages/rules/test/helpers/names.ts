import { METRICS, prometheusName, type InstrumentSpec } from '@infersignal/core';
import type { MetricKey } from '../../../core/src/names';

/** The Prometheus name core documents for an instrument (tests build input series with it). */
export function metricName(key: MetricKey): string {
  return prometheusName(METRICS[key] as InstrumentSpec);
}
