/**
 * The monitor's own instruments: the level of every signal, the alert
 * events, the errors InferSignal caught (the `internal_errors` alert), and
 * what the webhook sink and the OTLP export dropped.
 */
import { ATTR } from '../attributes';
import { defineSignal } from '../definition';

const metrics = {
  signalLevel: {
    name: 'infersignal.signal.level',
    type: 'gauge',
    unit: '{level}',
    description: 'Current level of each signal: 0 ok, 1 warn, 2 critical.',
    attributes: [ATTR.signal, ATTR.queue, ATTR.model],
  },
  alerts: {
    name: 'infersignal.alerts',
    type: 'counter',
    unit: '{alert}',
    description: 'Alert events emitted (level changes), by signal and level.',
    attributes: [ATTR.signal, ATTR.level],
  },
  internalErrors: {
    name: 'infersignal.internal.errors',
    type: 'counter',
    unit: '{error}',
    description: 'Errors caught inside InferSignal (its own or a user callback), never thrown into the request path.',
    attributes: [ATTR.errorSource],
  },
  exportDropped: {
    name: 'infersignal.export.dropped',
    type: 'counter',
    unit: '{export}',
    description:
      'OTLP exports that failed (collector down, timed out or refusing) and were dropped, by signal (metrics, traces); counted by @infersignal/node.',
    attributes: [ATTR.exportSignal],
  },
  webhookDropped: {
    name: 'infersignal.webhook.dropped',
    type: 'counter',
    unit: '{alert}',
    description: 'Alert deliveries dropped by the webhook sink (queue full or retries exhausted).',
    attributes: [],
  },
} as const;

export const internalSignal = defineSignal({
  name: 'internal',
  metrics,
  alerts: [
    {
      name: 'InferSignalInternalErrors',
      signal: 'internal_errors',
      severity: 'warning',
      runbook: 'internal-errors',
      doc: '`increase(infersignal_internal_errors_total[15m]) > 0`, or a new series',
    },
  ],
  rules(k) {
    const source = k.label(ATTR.errorSource);
    const window = k.options.eventWindow;
    return {
      name: 'infersignal.internal',
      rules: [
        k.alert(
          'InferSignalInternalErrors',
          k.eventExpr(k.metric(metrics.internalErrors), [...k.replicaKeys, source], window),
          undefined,
          'InferSignal caught internal errors',
          `InferSignal in replica ${k.replica} ({{ $labels.job }}) caught errors from {{ $labels.${source} }} in the last ${window}. Requests were not affected, but signals may be missing.`,
        ),
      ],
    };
  },
});
