/**
 * Dashboard rows for the capacity model (ρ, headroom, predicted wait, time
 * to saturation), the Node runtime (event loop, GC) and the connections and
 * TLS handshakes of instrumented servers. Same conventions as dashboard.ts:
 * names from core, threshold lines from the thresholds the rules use.
 */
import { LABEL } from './names';
import { SEL, type Layout } from './dashboard-layout';
import type { MetricKey } from '@infersignal/core';
import type { ResolvedOptions } from './options';

const rate = (series: string, selector: string) => `rate(${series}{${selector}}[$__rate_interval])`;

export function addCapacityRow(l: Layout, o: ResolvedOptions): void {
  const { metric } = o.names;
  const c = o.thresholds.capacity;
  const perQueue = (fn: 'max' | 'min', key: MetricKey) => `${fn} by (${LABEL.queue}) (${metric(key)}{${SEL.queue}})`;
  const legend = `{{${LABEL.queue}}}`;
  l.row('Capacity');
  l.add({
    title: 'Utilization ρ = λ·S / c',
    description:
      'Worst replica per queue. In-process, ρ is judged only for queues with an explicit concurrency (otherwise c is the peak in flight). Lines: thresholds.capacity.utilizationWarn and utilizationCritical.',
    w: 6,
    unit: 'percentunit',
    lines: [c.utilizationWarn, c.utilizationCritical],
    targets: [{ expr: perQueue('max', 'queueUtilization'), legend }],
    fieldConfig: { defaults: { min: 0 } },
  });
  l.add({
    title: 'Headroom and arrival rate',
    description:
      'Headroom = sustainable rate c / S minus the arrival rate λ (worst replica; negative: overloaded). λ is the EWMA arrival rate, the busiest replica.',
    w: 6,
    unit: 'reqps',
    targets: [
      { expr: perQueue('min', 'queueHeadroom'), legend: `headroom ${legend}` },
      { expr: perQueue('max', 'queueArrivalRate'), legend: `λ ${legend}` },
      { expr: perQueue('max', 'queueCompletionRate'), legend: `completed ${legend}` },
    ],
  });
  const waitSeries = (suffix: string) =>
    `sum by (${LABEL.queue}) (${rate(`${metric('queueWait')}_${suffix}`, SEL.queue)})`;
  l.add({
    title: 'Queue wait: predicted (M/M/c) vs measured mean',
    description:
      'Erlang C expected wait at the measured λ, S and c (not observed at ρ ≥ 1) against the measured mean wait; S is the mean service time. A measured wait far above the prediction means bursty arrivals or uneven service times.',
    w: 6,
    unit: 's',
    targets: [
      { expr: perQueue('max', 'queueWaitPredicted'), legend: `predicted ${legend}` },
      { expr: `${waitSeries('sum')} / ${waitSeries('count')}`, legend: `measured ${legend}` },
      { expr: perQueue('max', 'queueServiceTime'), legend: `S ${legend}` },
    ],
  });
  l.add({
    title: 'Time to saturation',
    description:
      'Seconds until ρ reaches 1 at its least-squares trend (only while ρ rises; 0 when saturated). Line: thresholds.capacity.saturationWarnSeconds.',
    w: 6,
    unit: 's',
    lines: [c.saturationWarnSeconds],
    lowIsBad: true,
    targets: [{ expr: perQueue('min', 'queueTimeToSaturation'), legend }],
    fieldConfig: { defaults: { min: 0 } },
  });
}

export function addConnectionsRow(l: Layout, o: ResolvedOptions): void {
  const { metric, bucket } = o.names;
  const t = o.thresholds.connections;
  const keys = `instance, ${LABEL.server}`;
  const legend = `{{${LABEL.server}}} {{instance}}`;
  const sum = (key: MetricKey, filter = '') => `sum by (${keys}) (${metric(key)}{${SEL.job}}${filter})`;
  l.row('Connections and TLS');
  l.add({
    title: 'Open connections vs capacity',
    description:
      "Capacity: instrumentServer's capacity option, else server.maxConnections (absent when neither is set).",
    w: 8,
    targets: [
      { expr: sum('connectionsOpen'), legend: `open ${legend}` },
      { expr: sum('connectionsCapacity'), legend: `capacity ${legend}` },
    ],
  });
  l.add({
    title: 'Connection saturation (open / capacity)',
    description: 'Lines: thresholds.connections.saturationWarn and saturationCritical.',
    w: 8,
    unit: 'percentunit',
    lines: [t.saturationWarn, t.saturationCritical],
    targets: [{ expr: `${sum('connectionsOpen')} / ${sum('connectionsCapacity', ' > 0')}`, legend }],
    fieldConfig: { defaults: { min: 0, max: 1 } },
  });
  l.add({
    title: 'Connections accepted and rejected',
    description:
      'Per second. Rejected: closed at accept because server.maxConnections was reached (the client sees ECONNRESET). Accepted is the connection churn.',
    w: 8,
    unit: 'cps',
    targets: [
      { expr: `sum by (${keys}) (${rate(metric('connectionsRejected'), SEL.job)})`, legend: `rejected ${legend}` },
      { expr: `sum by (${keys}) (${rate(metric('connectionsOpened'), SEL.job)})`, legend: `accepted ${legend}` },
    ],
  });
  l.add({
    title: 'TLS handshake P50 / P95',
    description:
      'From TCP accept to secureConnection, successful handshakes only (includes time waiting for a busy event loop).',
    w: 8,
    unit: 's',
    targets: [0.5, 0.95].map((q) => ({
      expr: `histogram_quantile(${q}, sum by (le, ${keys}) (${rate(bucket('tlsHandshakeDuration'), SEL.job)}))`,
      legend: `P${q * 100} ${legend}`,
    })),
  });
  l.add({
    title: 'TLS handshake failures by error.type',
    description: `Per second. Line: the alert's rate guard (option tlsFailureRate, ${o.tlsFailureRate}/s).`,
    w: 8,
    unit: 'cps',
    lines: [o.tlsFailureRate],
    targets: [
      {
        expr: `sum by (${keys}, ${LABEL.errorType}) (${rate(metric('tlsHandshakeFailures'), SEL.job)})`,
        legend: `{{${LABEL.errorType}}} ${legend}`,
      },
    ],
  });
  l.add({
    title: 'Keep-alive and TLS session reuse',
    description:
      'Share of recent requests on an already-used connection, and of recent handshakes that resumed a TLS session. A drop means every request pays a new connection (and a full handshake).',
    w: 8,
    unit: 'percentunit',
    targets: [
      { expr: `max by (${keys}) (${metric('connectionsReuseRatio')}{${SEL.job}})`, legend: `keep-alive ${legend}` },
      { expr: `max by (${keys}) (${metric('tlsSessionReuseRatio')}{${SEL.job}})`, legend: `TLS session ${legend}` },
    ],
    fieldConfig: { defaults: { min: 0, max: 1 } },
  });
}
