/**
 * Acceptance, on Node 24 with OpenTelemetry SDK 3.x: the bring-your-own-SDK
 * recipe app (examples/node-sdk: NodeSDK, instrumentation-http,
 * instrumentation-runtime-node, the stock Prometheus exporter, InferSignal
 * plugged in) runs as its own process, every signal exercised once; a real
 * Prometheus scrapes it every second with the rules generated in the
 * matching naming (`otel-js`). `promtool check metrics` passes on the
 * scrape, and every rule expression returns data.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { buildRules, type GeneratorOptions } from '@infersignal/rules';
import { findBinary, freePort, startDaemon, waitFor, type Daemon } from '../../packages/rules/test/helpers/binaries';
import { rulesOf, rulesWithoutData, type Query } from '../../packages/rules/test/helpers/rule-data';
import { bundle, here } from './lib/bundle';

const prometheusBin = findBinary('prometheus');
const promtool = findBinary('promtool');
const RULES: GeneratorOptions = {
  naming: 'otel-js',
  for: '1s',
  rateWindow: '5s',
  streamWindow: '20s',
  eventWindow: '2m',
  driftWindow: '20s',
};

const cleanup: (() => unknown)[] = [];
let app: { url: string; tls: boolean; node: string };
let child: ChildProcess;
let output = '';
let prometheus: Daemon;
let query: Query;

beforeAll(async () => {
  const built = await bundle(join(here, 'fixtures', 'recipe-app.ts'), 'recipe-app');
  cleanup.push(() => rmSync(built.dir, { recursive: true, force: true }));
  child = spawn(process.execPath, [built.file], {
    cwd: here,
    // No trace or log backend in this test: NodeSDK would export both over OTLP to localhost.
    env: { ...process.env, OTEL_TRACES_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanup.push(async () => {
    child.kill('SIGTERM');
    await exited;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-10_000);
  });
  app = await new Promise((resolve, reject) => {
    let line = '';
    const timer = setTimeout(() => reject(new Error(`the app did not start within 60 s:\n${output}`)), 60_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      line += chunk.toString();
      if (!line.includes('\n')) return;
      clearTimeout(timer);
      resolve(JSON.parse(line.slice(0, line.indexOf('\n'))));
    });
    child.once('exit', (code) => reject(new Error(`the app exited (${code}):\n${output}`)));
  });
  if (!prometheusBin) return;

  const dir = built.dir;
  const port = await freePort();
  writeFileSync(join(dir, 'rules.yml'), stringify(buildRules(RULES)));
  writeFileSync(
    join(dir, 'prometheus.yml'),
    stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: ['rules.yml'],
      scrape_configs: [
        { job_name: 'inference-server', static_configs: [{ targets: [app.url.replace('http://', '')] }] },
      ],
    }),
  );
  prometheus = await startDaemon(
    prometheusBin,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    `http://127.0.0.1:${port}/-/ready`,
  );
  cleanup.push(() => prometheus.stop());
  query = async (promql) =>
    (await (await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(promql)}`)).json()) as never;
}, 120_000);

afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn();
});

describe('the bring-your-own-SDK recipe on Node 24 with OpenTelemetry SDK 3.x', () => {
  it('runs on Node 24 and the SDK 3 line', async () => {
    expect(app.node).toMatch(/^v24\./);
    const scrape = await (await fetch(`${app.url}/metrics`)).text();
    expect(scrape).toMatch(/^target_info\{.*telemetry_sdk_version="3\.\d+\.\d+"/m);
  });

  it.skipIf(!promtool)('promtool check metrics passes on the scrape: one family per name', async () => {
    // Scraped once Prometheus has been reading it for a while, so every exporter has reported.
    if (prometheus)
      await waitFor('a few scrapes', 10_000, async () => ((await query('up')).data.result.length ? true : undefined));
    const scrape = await (await fetch(`${app.url}/metrics`)).text();
    const check = spawnSync(promtool as string, ['check', 'metrics'], { input: scrape, encoding: 'utf8' });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    const types = [...scrape.matchAll(/^# TYPE (\S+) /gm)].map(([, name]) => name);
    expect(types.length).toBeGreaterThan(40);
    expect(new Set(types).size).toBe(types.length);
    // Each exporter is there: instrumentation-http, instrumentation-runtime-node, InferSignal (producer and gauges).
    expect(types.some((name) => name.startsWith('http_server_'))).toBe(true);
    for (const family of ['nodejs_eventloop_delay_p99', 'v8js_gc_duration'])
      expect(scrape).toMatch(
        new RegExp(`^${family}\\S*\\{[^}]*otel_scope_name="@opentelemetry/instrumentation-runtime-node"`, 'm'),
      );
    for (const family of [
      'infersignal_queue_wait_duration',
      'infersignal_requests_total',
      'infersignal_queue_occupancy',
    ])
      expect(types).toContain(family);
  });

  it.skipIf(!prometheusBin)('every generated rule expression (naming otel-js) returns data on Prometheus', async () => {
    const rules = rulesOf(buildRules(RULES)).filter(
      // The time to heap exhaustion is exported only while the live heap rises (this process's does not).
      (rule) =>
        (app.tls || rule.name !== 'InferSignalTlsHandshakeFailures') &&
        !rule.name.startsWith('InferSignalHeapExhaustion'),
    );
    if (!app.tls) console.warn('[sdk3] TLS rule not checked: no certificate (openssl missing)');
    expect(rules.length).toBeGreaterThan(25);
    expect(await rulesWithoutData(query, rules), prometheus.log().slice(-2000)).toEqual([]);
  });
});
