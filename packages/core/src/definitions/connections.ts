/**
 * The `connections` and `tls_handshake` signals of an instrumented HTTP(S)
 * server (`instrumentServer` in @infersignal/http, which records them):
 * open connections against the capacity the server is sized for,
 * connections closed at accept, keep-alive and TLS session reuse, and
 * failed handshakes.
 */
import { ATTR } from '../attributes';
import { InferSignalConfigError } from '../config-error';
import { defineSignal } from '../definition';
import type { ConnectionThresholds } from '../thresholds';

const metrics = {
  connectionsOpen: {
    name: 'infersignal.connections.open',
    type: 'gauge',
    unit: '{connection}',
    description: 'Open TCP connections of an instrumented HTTP(S) server (accepted since it was instrumented).',
    attributes: [ATTR.server],
  },
  connectionsCapacity: {
    name: 'infersignal.connections.capacity',
    type: 'gauge',
    unit: '{connection}',
    description:
      'Connections the server is sized for: the configured capacity, else server.maxConnections; not observed when neither is set.',
    attributes: [ATTR.server],
  },
  connectionsOpened: {
    name: 'infersignal.connections.opened',
    type: 'counter',
    unit: '{connection}',
    description: 'Connections accepted (its rate is the connection churn).',
    attributes: [ATTR.server],
  },
  connectionsRejected: {
    name: 'infersignal.connections.rejected',
    type: 'counter',
    unit: '{connection}',
    description:
      'Connections the server closed at accept because server.maxConnections was reached (net.Server `drop`).',
    attributes: [ATTR.server],
  },
  connectionsRequests: {
    name: 'infersignal.connections.requests',
    type: 'histogram',
    unit: '{request}',
    description: 'Requests served per connection, recorded when a connection that served at least one request closes.',
    attributes: [ATTR.server],
  },
  connectionsReuseRatio: {
    name: 'infersignal.connections.reuse.ratio',
    type: 'gauge',
    unit: '1',
    description:
      'Keep-alive reuse: share of the last reuseWindow requests that arrived on a connection which had already served one.',
    attributes: [ATTR.server],
  },
  tlsHandshakeDuration: {
    name: 'infersignal.tls.handshake.duration',
    type: 'histogram',
    unit: 's',
    description:
      'TLS handshake time, from TCP accept (`connection`) to `secureConnection`; successful handshakes only.',
    attributes: [ATTR.server],
  },
  tlsHandshakeFailures: {
    name: 'infersignal.tls.handshake.failures',
    type: 'counter',
    unit: '{handshake}',
    description:
      'TLS handshakes that failed (`tlsClientError`), by error code (e.g. ERR_SSL_HTTP_REQUEST, ERR_TLS_HANDSHAKE_TIMEOUT, ECONNRESET).',
    attributes: [ATTR.server, ATTR.errorType],
  },
  tlsSessionReuseRatio: {
    name: 'infersignal.tls.session.reuse.ratio',
    type: 'gauge',
    unit: '1',
    description:
      'Share of the last reuseWindow successful TLS handshakes that resumed a session (tlsSocket.isSessionReused()).',
    attributes: [ATTR.server],
  },
} as const;

export const connectionsSignal = defineSignal({
  name: 'connections',
  metrics,
  buckets: {
    /** TLS handshakes: loopback ~1–5 ms, a slow client or an overloaded server (RSA signing on a blocked loop) seconds. */
    [metrics.tlsHandshakeDuration.name]: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    /** Requests per connection (a count, not seconds). */
    [metrics.connectionsRequests.name]: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
  },
  thresholds: {
    group: 'connections',
    fields: {
      saturationWarn: { default: 0.85, accepts: { type: 'number', min: 0, max: 1 } },
      saturationCritical: { default: 0.95, accepts: { type: 'number', min: 0, max: 1 } },
    },
    check(values, prefix) {
      const t = values as unknown as ConnectionThresholds;
      if (t.saturationWarn >= t.saturationCritical)
        throw new InferSignalConfigError(
          `${prefix}.connections.saturationWarn`,
          `must be below connections.saturationCritical (${t.saturationCritical}), got ${t.saturationWarn}`,
        );
    },
  },
  ruleOptions: {
    /**
     * Failed TLS handshakes per second (per server and error type) above which
     * InferSignalTlsHandshakeFailures fires, 6 a minute: one scanner or a mistyped URL must not page.
     */
    tlsFailureRate: { default: 0.1, accepts: { type: 'number', above: 0 } },
  },
  alerts: [
    {
      name: 'InferSignalConnectionsSaturated',
      signal: 'connections',
      severity: 'warning',
      runbook: 'connections-saturated',
      doc: '`sum by (job, instance, infersignal_server_name) (infersignal_connections_open) / sum by (…) (infersignal_connections_capacity > 0) > 0.85`',
    },
    {
      name: 'InferSignalConnectionsSaturatedCritical',
      signal: 'connections',
      severity: 'critical',
      runbook: 'connections-saturated',
      doc: 'same, `> 0.95`',
    },
    {
      name: 'InferSignalConnectionsRejected',
      signal: 'connections',
      severity: 'critical',
      runbook: 'connections-rejected',
      doc: '`increase(infersignal_connections_rejected_total[1m]) > 0`, or a new series',
    },
    {
      name: 'InferSignalTlsHandshakeFailures',
      signal: 'tls_handshake',
      severity: 'warning',
      runbook: 'tls-handshake-failures',
      doc: '`sum by (job, instance, infersignal_server_name, error_type) (rate(infersignal_tls_handshake_failures_total[1m])) > 0.1`',
    },
  ],

  rules(k) {
    const t = k.thresholds.connections as unknown as ConnectionThresholds;
    const o = k.options;
    const server = k.label(ATTR.server);
    const errorType = k.label(ATTR.errorType);
    const keys = [...k.replicaKeys, server];
    const hold = k.hold(0);
    const p = k.humanPercent;
    // `capacity > 0` drops servers without a capacity (no maxConnections, no option): core does not judge them either.
    const saturation = `sum ${k.by(...keys)} (${k.metric(metrics.connectionsOpen)}) / sum ${k.by(...keys)} (${k.metric(metrics.connectionsCapacity)} > 0)`;
    const where = `Server {{ $labels.${server} }} of replica ${k.replica} ({{ $labels.job }})`;
    return {
      name: 'infersignal.connections',
      rules: [
        k.alert(
          'InferSignalConnectionsSaturated',
          `${saturation} > ${t.saturationWarn}`,
          hold,
          `Open connections above ${p(t.saturationWarn)} of capacity`,
          `${where} holds {{ $value | humanizePercentage }} of the connections it is sized for (open / capacity, capacity = instrumentServer's capacity or server.maxConnections), above ${p(t.saturationWarn)} (thresholds.connections.saturationWarn) for ${hold}. At the limit, new clients are closed at accept.`,
        ),
        k.alert(
          'InferSignalConnectionsSaturatedCritical',
          `${saturation} > ${t.saturationCritical}`,
          hold,
          `Open connections above ${p(t.saturationCritical)} of capacity`,
          `${where} holds {{ $value | humanizePercentage }} of its connection capacity, above ${p(t.saturationCritical)} (thresholds.connections.saturationCritical) for ${hold}. New connections are about to be rejected.`,
        ),
        k.alert(
          'InferSignalConnectionsRejected',
          k.eventExpr(k.metric(metrics.connectionsRejected), keys, o.rateWindow),
          undefined,
          'Connections rejected at the connection limit',
          `${where} closed new connections at accept in the last ${o.rateWindow} because server.maxConnections was reached: those clients saw ECONNRESET before sending a request, and no request metric counts them.`,
        ),
        k.alert(
          'InferSignalTlsHandshakeFailures',
          `sum ${k.by(...keys, errorType)} (rate(${k.metric(metrics.tlsHandshakeFailures)}[${o.rateWindow}])) > ${k.option('tlsFailureRate')}`,
          hold,
          `TLS handshakes failing faster than ${k.option('tlsFailureRate')}/s`,
          `${where} fails TLS handshakes with {{ $labels.${errorType} }} at {{ printf "%.2f" $value }}/s (over ${o.rateWindow}), above ${k.option('tlsFailureRate')}/s (option tlsFailureRate), for ${hold}. Clients cannot connect, or something probes the TLS port with the wrong protocol.`,
        ),
      ],
    };
  },

  panels(k) {
    const t = k.thresholds.connections as unknown as ConnectionThresholds;
    const server = k.label(ATTR.server);
    const errorType = k.label(ATTR.errorType);
    const job = k.select.job;
    const keys = `instance, ${server}`;
    const legend = `{{${server}}} {{instance}}`;
    const sum = (spec: (typeof metrics)[keyof typeof metrics], filter = '') =>
      `sum by (${keys}) (${k.metric(spec)}{${job}}${filter})`;
    k.row('Connections and TLS');
    k.add({
      title: 'Open connections vs capacity',
      description:
        "Capacity: instrumentServer's capacity option, else server.maxConnections (absent when neither is set).",
      w: 8,
      targets: [
        { expr: sum(metrics.connectionsOpen), legend: `open ${legend}` },
        { expr: sum(metrics.connectionsCapacity), legend: `capacity ${legend}` },
      ],
    });
    k.add({
      title: 'Connection saturation (open / capacity)',
      description: 'Lines: thresholds.connections.saturationWarn and saturationCritical.',
      w: 8,
      unit: 'percentunit',
      lines: [t.saturationWarn, t.saturationCritical],
      targets: [{ expr: `${sum(metrics.connectionsOpen)} / ${sum(metrics.connectionsCapacity, ' > 0')}`, legend }],
      fieldConfig: { defaults: { min: 0, max: 1 } },
    });
    k.add({
      title: 'Connections accepted and rejected',
      description:
        'Per second. Rejected: closed at accept because server.maxConnections was reached (the client sees ECONNRESET). Accepted is the connection churn.',
      w: 8,
      unit: 'cps',
      targets: [
        {
          expr: `sum by (${keys}) (${k.rate(k.metric(metrics.connectionsRejected), job)})`,
          legend: `rejected ${legend}`,
        },
        {
          expr: `sum by (${keys}) (${k.rate(k.metric(metrics.connectionsOpened), job)})`,
          legend: `accepted ${legend}`,
        },
      ],
    });
    k.add({
      title: 'TLS handshake P50 / P95',
      description:
        'From TCP accept to secureConnection, successful handshakes only (includes time waiting for a busy event loop).',
      w: 8,
      unit: 's',
      targets: [0.5, 0.95].map((q) => ({
        expr: `histogram_quantile(${q}, sum by (le, ${keys}) (${k.rate(k.bucket(metrics.tlsHandshakeDuration), job)}))`,
        legend: `P${q * 100} ${legend}`,
      })),
    });
    k.add({
      title: 'TLS handshake failures by error.type',
      description: `Per second. Line: the alert's rate guard (option tlsFailureRate, ${k.option('tlsFailureRate')}/s).`,
      w: 8,
      unit: 'cps',
      lines: [k.option('tlsFailureRate')],
      targets: [
        {
          expr: `sum by (${keys}, ${errorType}) (${k.rate(k.metric(metrics.tlsHandshakeFailures), job)})`,
          legend: `{{${errorType}}} ${legend}`,
        },
      ],
    });
    k.add({
      title: 'Keep-alive and TLS session reuse',
      description:
        'Share of recent requests on an already-used connection, and of recent handshakes that resumed a TLS session. A drop means every request pays a new connection (and a full handshake).',
      w: 8,
      unit: 'percentunit',
      targets: [
        {
          expr: `max by (${keys}) (${k.metric(metrics.connectionsReuseRatio)}{${job}})`,
          legend: `keep-alive ${legend}`,
        },
        {
          expr: `max by (${keys}) (${k.metric(metrics.tlsSessionReuseRatio)}{${job}})`,
          legend: `TLS session ${legend}`,
        },
      ],
      fieldConfig: { defaults: { min: 0, max: 1 } },
    });
  },
});
