/**
 * The names the rules and the dashboard reference are the names the SDK
 * exports: a real MeterProvider and Prometheus exporter (`@infersignal/node`)
 * scraped over HTTP, every signal exercised once — the request-level ones,
 * and the capacity, event-loop, GC, connection, TLS and breaker instruments
 * (helpers/runtime-signals.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTR, METRICS, prometheusLabel } from '@infersignal/core';
import { buildDashboard, buildRules } from '@infersignal/rules';
import { LABEL, RULE_METRICS } from '../src/names';
import { panelQueries } from '../src/dashboard';
import { alertingRules } from '../src/rules';
import { startInstrumentedServer, type InstrumentedServer } from './helpers/instrumented';
import {
  RUNTIME_THRESHOLDS,
  exerciseEverySignal,
  exerciseRuntimeSignals,
  type RuntimeExercise,
} from './helpers/runtime-signals';
import { metricName } from './helpers/names';

let server: InstrumentedServer;
let runtime: RuntimeExercise | undefined;
let text: string;
let families: Map<string, string>;

/** Every namespace core names metrics in (infersignal_, gen_ai_, nodejs_, v8js_, rpc_). */
const PREFIXES = [...new Set(Object.values(METRICS).map((spec) => `${spec.name.split('.')[0]}_`))];
const TLS_METRICS = [
  metricName('tlsHandshakeDuration'),
  metricName('tlsHandshakeFailures'),
  metricName('tlsSessionReuseRatio'),
];

/** The sample lines of a family whose labels include all of `labels`. */
function samples(name: string, labels: Record<string, string> = {}): { line: string; value: number }[] {
  return text
    .split('\n')
    .filter(
      (line) =>
        (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) &&
        Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`)),
    )
    .map((line) => ({ line, value: Number(line.slice(line.lastIndexOf(' ') + 1)) }));
}

/** Metric names (not labels, not recorded series, not Prometheus built-ins) used in PromQL expressions. */
function referencedMetrics(exprs: string[]): Set<string> {
  const labels = new Set<string>([...Object.values(LABEL), ...Object.values(ATTR).map(prometheusLabel)]);
  const names = new Set<string>();
  for (const expr of exprs) {
    const withoutStrings = expr.replace(/"[^"]*"/g, '""');
    for (const [token] of withoutStrings.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
      if (token.includes(':') || labels.has(token)) continue;
      if (PREFIXES.some((prefix) => token.startsWith(prefix))) names.add(token);
    }
  }
  return names;
}

beforeAll(async () => {
  server = await startInstrumentedServer({
    serviceTimeMs: 5,
    capacity: 8,
    detectorIntervalMs: 0,
    thresholds: RUNTIME_THRESHOLDS,
    connectionCapacity: 8,
  });
  await exerciseEverySignal(server.monitor);
  runtime = await exerciseRuntimeSignals(server);
  text = await (await fetch(server.metricsUrl)).text();
  families = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name, type]));
});

afterAll(async () => {
  await runtime?.close();
  await server?.close();
});

describe('generated names against a real exporter scrape', () => {
  it('exports every instrument the rules read, with the type the rules assume', () => {
    for (const key of RULE_METRICS) {
      // Absent while the process's live heap shows no rising trend (a test process has none); the heap tests
      // export it on a leak.
      if (key === 'heapExhaustionTime') continue;
      const name = metricName(key);
      expect(families.has(name), `${name} (${key}) in the scrape: ${[...families.keys()].join(', ')}`).toBe(true);
    }
    expect(families.get(metricName('queueWait'))).toBe('histogram');
    expect(families.get(metricName('modelLoadSpikes'))).toBe('counter');
    expect(families.get(metricName('streams'))).toBe('counter');
    expect(families.get(metricName('internalErrors'))).toBe('counter');
    expect(families.get(metricName('queueOccupancy'))).toBe('gauge');
    for (const key of [
      'queueUtilization',
      'queueTimeToSaturation',
      'eventLoopDelayP99',
      'connectionsOpen',
      'connectionsCapacity',
      'breakerState',
    ] as const) {
      expect(families.get(metricName(key)), key).toBe('gauge');
    }
    expect(families.get(metricName('connectionsRejected'))).toBe('counter');
    if (runtime?.tls) expect(families.get(metricName('tlsHandshakeFailures'))).toBe('counter');
    expect(families.get(metricName('gcDuration'))).toBe('histogram');
  });

  it('every metric named in a rule or a dashboard query is in the scrape', () => {
    const exprs = [
      ...buildRules().groups.flatMap((group) => group.rules.map((rule) => rule.expr)),
      ...panelQueries(buildDashboard()).map((query) => query.expr),
    ];
    const referenced = referencedMetrics(exprs);
    expect(referenced.size).toBeGreaterThan(35);
    for (const name of [
      'nodejs_eventloop_delay_p99_seconds',
      'v8js_gc_duration_seconds_sum',
      'infersignal_breaker_state',
    ])
      expect(referenced.has(name), name).toBe(true);
    let missing = [...referenced].filter(
      (name) => !families.has(name.replace(/_(bucket|count|sum)$/, '')) && !families.has(name),
    );
    missing = missing.filter((name) => name !== metricName('heapExhaustionTime'));
    if (!runtime?.tls) {
      console.warn('[rules] TLS metric names not checked against the scrape: no certificate (openssl missing)');
      missing = missing.filter((name) => !TLS_METRICS.some((tls) => name.startsWith(tls)));
    }
    expect(missing).toEqual([]);
  });

  it('the alerts aggregate by labels the exporter writes', async () => {
    const waitBucket = text.split('\n').find((line) => line.startsWith(`${metricName('queueWait')}_bucket{`));
    expect(waitBucket).toContain(`${LABEL.queue}="default"`);
    expect(waitBucket).toContain(`${LABEL.model}="llama"`);
    const spikes = text.split('\n').find((line) => line.startsWith(`${metricName('modelLoadSpikes')}{`));
    expect(spikes).toContain(`${LABEL.loadKind}="load"`);
    expect(spikes).toMatch(/ 1$/);
    const streams = text.split('\n').filter((line) => line.startsWith(`${metricName('streams')}{`));
    expect(streams.some((line) => line.includes(`${LABEL.outcome}="cancelled"`))).toBe(true);
    const oldest = text.split('\n').find((line) => line.startsWith(`${metricName('queueWaitOldest')}{`));
    expect(oldest).toContain(`${LABEL.queue}="default"`);
    const owed = samples(metricName('queueTokensPending'), { [LABEL.queue]: 'llm', [LABEL.tokenType]: 'output' });
    expect(owed.map((s) => s.value)).toEqual([0]);
    expect(alertingRules(buildRules()).length).toBe(33);
  });

  it('the capacity, runtime, connection and breaker series carry the values the rules compare', () => {
    const capacity = { [LABEL.queue]: 'capacity' };
    const [utilization] = samples(metricName('queueUtilization'), capacity);
    // Ramp 1, 3, 6 arrivals per 150 ms at S ≈ 10 ms, c = 1: ρ ≈ 0.4 and rising.
    expect(utilization.value).toBeGreaterThan(0.2);
    expect(utilization.value).toBeLessThan(1);
    const [saturation] = samples(metricName('queueTimeToSaturation'), capacity);
    expect(saturation.value).toBeGreaterThan(0);
    expect(Number.isFinite(saturation.value)).toBe(true);
    expect(samples(metricName('queueHeadroom'), capacity)[0].value).toBeGreaterThan(0);
    expect(samples(metricName('queueWaitPredicted'), capacity)[0].value).toBeGreaterThanOrEqual(0);
    expect(samples(metricName('eventLoopDelayP99'))[0].value).toBeGreaterThan(0);
    // A test process's live heap: a few tens of MiB against a limit of gigabytes.
    const [live] = samples(metricName('heapLiveRatio'));
    expect(live.value).toBeGreaterThan(0);
    expect(live.value).toBeLessThan(0.5);
    // Its live set does not climb 10 % of gigabytes: no leak trend, so no time to exhaustion.
    expect(samples(metricName('heapExhaustionTime'))).toEqual([]);

    const api = { [LABEL.server]: 'api' };
    expect(samples(metricName('connectionsCapacity'), api).map((s) => s.value)).toEqual([8]);
    expect(samples(metricName('connectionsOpen'), api)).toHaveLength(1);
    expect(samples(metricName('connectionsRejected'), { [LABEL.server]: 'limited' }).map((s) => s.value)).toEqual([1]);
    // No capacity option and maxConnections set: capacity is maxConnections (1).
    expect(samples(metricName('connectionsCapacity'), { [LABEL.server]: 'limited' }).map((s) => s.value)).toEqual([1]);
    if (runtime?.tls) {
      expect(
        samples(metricName('tlsHandshakeFailures'), {
          [LABEL.server]: 'https',
          [LABEL.errorType]: 'ERR_SSL_HTTP_REQUEST',
        }).map((s) => s.value),
      ).toEqual([1]);
      expect(
        samples(`${metricName('tlsHandshakeDuration')}_count`, { [LABEL.server]: 'https' }).map((s) => s.value),
      ).toEqual([1]);
    } else {
      console.warn('[rules] TLS series not checked: no certificate (openssl missing)');
    }
    expect(samples(metricName('breakerState'), { [LABEL.breakerName]: 'backend' }).map((s) => s.value)).toEqual([2]);
    expect(samples(`${metricName('gcDuration')}_count`).length).toBeGreaterThan(0);
    expect(samples(`${metricName('gcDuration')}_count`)[0].line).toContain(`${LABEL.gcType}="`);
  });
});
