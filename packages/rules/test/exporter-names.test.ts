/**
 * The names the rules and the dashboard reference are the names the SDK
 * exports: a real MeterProvider and Prometheus exporter (`@infersignal/node`)
 * scraped over HTTP, every signal exercised once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABEL, RULE_METRICS, buildDashboard, buildRules, panelQueries, alertingRules } from '@infersignal/rules';
import { exerciseEverySignal, startInstrumentedServer, type InstrumentedServer } from './helpers/instrumented';
import { metricName } from './helpers/names';

let server: InstrumentedServer;
let families: Map<string, string>;

/** Metric names (not labels, not recorded series, not Prometheus built-ins) used in PromQL expressions. */
function referencedMetrics(exprs: string[]): Set<string> {
  const labels = new Set<string>(Object.values(LABEL));
  const names = new Set<string>();
  for (const expr of exprs) {
    const withoutStrings = expr.replace(/"[^"]*"/g, '""');
    for (const [token] of withoutStrings.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
      if (token.includes(':') || labels.has(token)) continue;
      if (token.startsWith('infersignal_') || token.startsWith('gen_ai_')) names.add(token);
    }
  }
  return names;
}

beforeAll(async () => {
  server = await startInstrumentedServer({ serviceTimeMs: 5, capacity: 8 });
  await exerciseEverySignal(server.signal);
  const text = await (await fetch(server.metricsUrl)).text();
  families = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name, type]));
});

afterAll(async () => {
  await server?.close();
});

describe('generated names against a real exporter scrape', () => {
  it('exports every instrument the rules read, with the type the rules assume', () => {
    for (const key of RULE_METRICS) {
      const name = metricName(key);
      expect(families.has(name), `${name} (${key}) in the scrape: ${[...families.keys()].join(', ')}`).toBe(true);
    }
    expect(families.get(metricName('queueWait'))).toBe('histogram');
    expect(families.get(metricName('modelLoadSpikes'))).toBe('counter');
    expect(families.get(metricName('streams'))).toBe('counter');
    expect(families.get(metricName('internalErrors'))).toBe('counter');
    expect(families.get(metricName('queueOccupancy'))).toBe('gauge');
  });

  it('every metric named in a rule or a dashboard query is in the scrape', () => {
    const exprs = [
      ...buildRules().groups.flatMap((group) => group.rules.map((rule) => rule.expr)),
      ...panelQueries(buildDashboard()).map((query) => query.expr),
    ];
    const referenced = referencedMetrics(exprs);
    expect(referenced.size).toBeGreaterThan(15);
    const missing = [...referenced].filter((name) => !families.has(name.replace(/_(bucket|count|sum)$/, '')) && !families.has(name));
    expect(missing).toEqual([]);
  });

  it('the alerts aggregate by labels the exporter writes', async () => {
    const text = await (await fetch(server.metricsUrl)).text();
    const waitBucket = text.split('\n').find((line) => line.startsWith(`${metricName('queueWait')}_bucket{`));
    expect(waitBucket).toContain(`${LABEL.queue}="default"`);
    expect(waitBucket).toContain(`${LABEL.model}="llama"`);
    const spikes = text.split('\n').find((line) => line.startsWith(`${metricName('modelLoadSpikes')}{`));
    expect(spikes).toContain(`${LABEL.loadKind}="load"`);
    expect(spikes).toMatch(/ 1$/);
    const streams = text.split('\n').filter((line) => line.startsWith(`${metricName('streams')}{`));
    expect(streams.some((line) => line.includes(`${LABEL.outcome}="cancelled"`))).toBe(true);
    expect(alertingRules(buildRules()).length).toBe(12);
  });
});
