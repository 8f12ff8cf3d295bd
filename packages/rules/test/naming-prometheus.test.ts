/**
 * Each naming against the path that writes it, on a real Prometheus:
 * - `collector`: an app on `@infersignal/node`'s `start()`;
 * - `otel-js`: the recipe app of examples/node-sdk (its own NodeSDK, the
 *   stock PrometheusExporter, instrumentation-runtime-node, InferSignal
 *   plugged in).
 * Every signal is exercised once; each Prometheus (1 s scrapes) loads the
 * rules generated in the matching naming, and every rule expression returns
 * data (comparisons made `bool`, so the thresholds do not decide it). Then
 * the other naming's rules on the same data: every expression whose text
 * differs between the namings matches nothing — the silent failure the
 * option exists for.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { buildRules, type GeneratorOptions } from '@infersignal/rules';
import type { Naming } from '../src/names';
import { findBinary, freePort, skipReason, startDaemon, type Daemon } from './helpers/binaries';
import { asBool, rulesOf, rulesWithoutData, type Query, type Rule } from './helpers/rule-data';
import { startInstrumentedServer, type InstrumentedServer } from './helpers/instrumented';
import {
  RUNTIME_THRESHOLDS,
  exerciseEverySignal,
  exerciseRuntimeSignals,
  type RuntimeExercise,
} from './helpers/runtime-signals';

const prometheusBin = findBinary('prometheus');

/** Short windows: a few 1 s scrapes give every rate, increase and deriv. */
const WINDOWS: GeneratorOptions = {
  for: '1s',
  rateWindow: '5s',
  streamWindow: '20s',
  eventWindow: '2m',
  driftWindow: '20s',
};

interface Setup {
  naming: Naming;
  app: InstrumentedServer;
  runtime: RuntimeExercise;
  prometheus: Daemon;
  query: Query;
}

const setups = new Map<Naming, Setup>();
const cleanup: (() => Promise<void> | void)[] = [];

async function setUp(naming: Naming, dir: string): Promise<Setup> {
  const app = await startInstrumentedServer({
    via: naming === 'collector' ? 'start' : 'node-sdk',
    serviceTimeMs: 5,
    capacity: 8,
    detectorIntervalMs: 0,
    thresholds: RUNTIME_THRESHOLDS,
    connectionCapacity: 8,
  });
  cleanup.push(() => app.close());
  await exerciseEverySignal(app.monitor);
  const runtime = await exerciseRuntimeSignals(app);
  cleanup.push(() => runtime.close());

  const port = await freePort();
  const rules = buildRules({ ...WINDOWS, naming });
  const config = join(dir, `${naming}.yml`);
  writeFileSync(join(dir, `${naming}-rules.yml`), stringify(rules));
  writeFileSync(
    config,
    stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: [`${naming}-rules.yml`],
      scrape_configs: [{ job_name: 'inference-server', static_configs: [{ targets: [app.metricsTarget] }] }],
    }),
  );
  const prometheus = await startDaemon(
    prometheusBin as string,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, `${naming}-tsdb`)}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    `http://127.0.0.1:${port}/-/ready`,
  );
  cleanup.push(() => prometheus.stop());
  const api = `http://127.0.0.1:${port}/api/v1`;
  return {
    naming,
    app,
    runtime,
    prometheus,
    query: async (promql) => (await (await fetch(`${api}/query?query=${encodeURIComponent(promql)}`)).json()) as never,
  };
}

/** Rules that need TLS series, skipped when no certificate could be made. */
function tlsRule(rule: Rule): boolean {
  return rule.name === 'InferSignalTlsHandshakeFailures';
}

/**
 * Rules on the time to heap exhaustion, which is exported only while the live heap rises (a test process's does
 * not); packages/core/test/heap.test.ts exports it on a leak, and promtool-unit.test.ts evaluates these rules.
 */
function leakRule(rule: Rule): boolean {
  return rule.name.startsWith('InferSignalHeapExhaustion');
}

beforeAll(async () => {
  if (!prometheusBin) return;
  const dir = mkdtempSync(join(tmpdir(), 'infersignal-naming-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  // One after the other: the runtime exercise measures GC and loop timing in this process.
  for (const naming of ['collector', 'otel-js'] as const) setups.set(naming, await setUp(naming, dir));
}, 120_000);

afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn();
});

describe.skipIf(!prometheusBin)(
  prometheusBin ? 'rule naming on a real Prometheus' : skipReason('prometheus', 'rule naming on a real Prometheus'),
  () => {
    for (const naming of ['collector', 'otel-js'] as const) {
      it(`${naming}: every rule expression returns data on the path that writes that naming`, async () => {
        const setup = setups.get(naming) as Setup;
        const rules = rulesOf(buildRules({ ...WINDOWS, naming })).filter(
          (rule) => (setup.runtime.tls || !tlsRule(rule)) && !leakRule(rule),
        );
        if (!setup.runtime.tls) console.warn('[rules] TLS rule not checked: no certificate (openssl missing)');
        expect(rules.length).toBeGreaterThan(25);
        const empty = await rulesWithoutData(setup.query, rules);
        expect(empty, `${setup.prometheus.log().slice(-2000)}`).toEqual([]);
      });
    }

    it('the other naming’s rules match nothing wherever the names differ', async () => {
      const byNaming = {
        collector: rulesOf(buildRules({ ...WINDOWS, naming: 'collector' })),
        'otel-js': rulesOf(buildRules({ ...WINDOWS, naming: 'otel-js' })),
      };
      let differing = 0;
      for (const [naming, other] of [
        ['collector', 'otel-js'],
        ['otel-js', 'collector'],
      ] as const) {
        const setup = setups.get(naming) as Setup;
        for (const [i, rule] of byNaming[other].entries()) {
          // Expressions on recorded series read what this Prometheus recorded itself: same names in both namings.
          if (rule.expr === byNaming[naming][i].expr || rule.expr.includes(':') || tlsRule(rule)) continue;
          differing++;
          const result = await setup.query(asBool(rule.expr));
          expect(result.data.result, `${other} ${rule.name} on ${naming} data`).toEqual([]);
        }
      }
      expect(differing).toBeGreaterThan(20);
    });
  },
);
