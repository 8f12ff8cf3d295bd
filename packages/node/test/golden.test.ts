/**
 * Golden output: a fixed scenario (injected clock, one queue, one model, one
 * stream, device memory, one internal error, one detector tick) is exported
 * by `start()` in both export modes, and the /metrics text and the OTLP
 * metrics request (decoded to JSON) are compared with the committed files
 * in test/golden/. What the run cannot fix (heap bytes, event-loop figures,
 * runtime gauges, versions, timestamps) is normalized first.
 *
 * A deliberate change of the output: `UPDATE_GOLDEN=1 pnpm exec vitest run
 * packages/node/test/golden.test.ts`, and the diff of test/golden/ shows it
 * in review.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { start, type InferSignal } from '@infersignal/node';
import { decodeMetricsRequest } from './helpers/otlp-decode';

const UPDATE = process.env.UPDATE_GOLDEN === '1';
const golden = (file: string) => new URL(`./golden/${file}`, import.meta.url);

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** An OTLP/HTTP receiver that keeps the metrics requests' bodies. */
async function otlpReceiver(): Promise<{ url: string; bodies: Buffer[] }> {
  const bodies: Buffer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/metrics') bodies.push(Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanup.push(() => new Promise((r) => server.close(r)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies };
}

/** The scenario: every figure comes from the injected clock or a fixed input. */
async function scenario(s: InferSignal, clock: { now: number }): Promise<void> {
  const { monitor } = s;
  const queue = monitor.queue('main', { capacity: 10 });
  for (const waitMs of [5, 50, 300, 2000]) {
    const ticket = queue.enqueue('llama');
    clock.now += waitMs;
    ticket.start();
    clock.now += 100;
    ticket.end('completed');
  }
  const failed = queue.enqueue('llama');
  failed.start();
  clock.now += 20;
  failed.end('error');
  // Left waiting and in flight: the gauges show them.
  queue.enqueue('llama');
  queue.enqueue('llama').start();

  const stream = monitor.stream('llama');
  clock.now += 40;
  stream.firstToken();
  for (let i = 0; i < 10; i++) {
    clock.now += 25;
    stream.token();
  }
  stream.end('completed');

  await monitor.modelLoad('llama', 'load', () => {
    clock.now += 2000;
  });

  let allocated = 100;
  const memory = monitor.deviceMemory({ allocated: () => allocated, reserved: () => 400, intervalMs: 0 });
  memory.sample();
  allocated = 120;
  clock.now += 1000;
  memory.sample();

  monitor.internalError('golden', new Error('boom'));
  monitor.tick();

  // The event-loop gauges appear after the signal's first sample period (1 s); their values are normalized.
  await new Promise((r) => setTimeout(r, 1500));
}

/**
 * Families whose values the run cannot fix: the process's heap, event loop,
 * GC and runtime figures. Their samples are replaced by the label names
 * they carry; their presence, type, unit and help stay compared.
 */
const VARIABLE_FAMILY = /^(v8js_|nodejs_|process_|infersignal_heap_|infersignal_event_loop_|infersignal_gc_)/;

/** Families left out of both goldens: present only once a GC was observed. */
const UNTIMED = /^v8js_gc_duration|^v8js\.gc\.duration$/;

/** Prometheus text with runtime-variable values, versions and the resource's host facts replaced. */
export function normalizeExposition(text: string): string {
  // A variable family's line is filled in at the end, with the label names of all its samples.
  const out: Array<string | { family: string; labels: Set<string> }> = [];
  const variable = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      out.push(line);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (.*)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const [, name, labels = ''] = m;
    const labelText = labels
      .replace(/otel_scope_version="[^"]*"/g, 'otel_scope_version="<version>"')
      .replace(/(telemetry_sdk_version|service_instance_id|host_name|process_pid)="[^"]*"/g, '$1="<varies>"');
    if (VARIABLE_FAMILY.test(name)) {
      const family = name.replace(/_(bucket|count|sum)$/, '');
      let keys = variable.get(family);
      if (keys === undefined) {
        variable.set(family, (keys = new Set()));
        out.push({ family, labels: keys });
      }
      for (const k of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) if (k[1] !== 'le') keys.add(k[1]!);
      continue;
    }
    out.push(`${name}${labels ? `{${labelText}}` : ''} ${m[3]}`);
  }
  const lines = out.map((line) =>
    typeof line === 'string' ? line : `${line.family} <varies: labels ${[...line.labels].sort().join(',')}>`,
  );
  // Families in name order: the order a process first records them in (a GC's histogram) is not the golden's concern.
  const families: string[][] = [];
  for (const line of lines) {
    if (line.startsWith('# HELP ') || families.length === 0) families.push([]);
    families.at(-1)!.push(line);
  }
  const nameOf = (family: string[]) => family[0]!.split(' ')[2] ?? '';
  // The GC histogram appears with the first GC its observer reports, which the scenario cannot time.
  const kept = families.filter((family) => !UNTIMED.test(nameOf(family)));
  kept.sort((a, b) =>
    nameOf(a) === 'target_info' ? -1 : nameOf(b) === 'target_info' ? 1 : nameOf(a).localeCompare(nameOf(b)),
  );
  return `${kept.flat().join('\n')}\n`;
}

/** An OTLP metrics request as sorted JSON, normalized the same way (times, versions, runtime values). */
export function normalizeOtlp(request: any): unknown {
  const value = (kv: any) => {
    const v = kv.value ?? {};
    return v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue ?? null;
  };
  const attrs = (list: any[] | undefined, varies: RegExp = /^$/) =>
    Object.fromEntries(
      (list ?? [])
        .map((kv) => [kv.key, varies.test(kv.key) ? '<varies>' : value(kv)] as const)
        .sort(([a], [b]) => a.localeCompare(b)),
    );
  const point = (p: any, variable: boolean) => {
    const out: Record<string, unknown> = { attributes: attrs(p.attributes) };
    if (variable) return out;
    for (const key of ['asInt', 'asDouble', 'count', 'sum', 'min', 'max', 'bucketCounts', 'explicitBounds'])
      if (p[key] !== undefined) out[key] = typeof p[key] === 'bigint' ? Number(p[key]) : p[key];
    return out;
  };
  const sortPoints = (points: any[]) =>
    points.sort((a, b) => JSON.stringify(a.attributes).localeCompare(JSON.stringify(b.attributes)));
  return request.resourceMetrics.map((rm: any) => ({
    resource: attrs(
      rm.resource?.attributes,
      /^(telemetry\.sdk\.version|service\.instance\.id|host\.name|process\.pid)$/,
    ),
    scopeMetrics: rm.scopeMetrics
      .map((sm: any) => ({
        scope: { name: sm.scope?.name, version: sm.scope?.version ? '<version>' : undefined },
        metrics: sm.metrics
          .filter((m: any) => !UNTIMED.test(m.name))
          .map((m: any) => {
            const variable =
              /^(v8js\.|nodejs\.|process\.|infersignal\.heap\.|infersignal\.event_loop\.|infersignal\.gc\.)/.test(
                m.name,
              );
            const data = m.sum ?? m.gauge ?? m.histogram ?? m.exponentialHistogram;
            const kind = m.sum ? 'sum' : m.gauge ? 'gauge' : m.histogram ? 'histogram' : 'exponentialHistogram';
            const shape: Record<string, unknown> = {};
            if (data.aggregationTemporality !== undefined) shape.aggregationTemporality = data.aggregationTemporality;
            if (data.isMonotonic !== undefined) shape.isMonotonic = data.isMonotonic;
            const points = data.dataPoints.map((p: any) => point(p, variable));
            return {
              name: m.name,
              unit: m.unit,
              description: m.description,
              [kind]: {
                ...shape,
                dataPoints: variable
                  ? `<varies: ${[...new Set(points.flatMap((p: any) => Object.keys(p.attributes)))].sort().join(',')}>`
                  : sortPoints(points),
              },
            };
          })
          .sort((a: any, b: any) => a.name.localeCompare(b.name)),
      }))
      .sort((a: any, b: any) => String(a.scope.name).localeCompare(String(b.scope.name))),
  }));
}

function compare(file: string, actual: string): void {
  const path = golden(file);
  if (UPDATE || !existsSync(path)) {
    writeFileSync(path, actual);
    if (!UPDATE) throw new Error(`${file} did not exist: written; rerun to compare (UPDATE_GOLDEN=1 rewrites it)`);
    return;
  }
  expect(actual, `${file} differs (a deliberate change: UPDATE_GOLDEN=1)`).toBe(readFileSync(path, 'utf8'));
}

describe.each(['producer', 'api'] as const)('golden output, %s export', (exportMode) => {
  it('the /metrics text and the OTLP metrics request match test/golden/', async () => {
    const receiver = await otlpReceiver();
    const clock = { now: 1_000_000 };
    const s = start({
      serviceName: 'golden',
      exportMode,
      registerGlobals: false,
      detectorIntervalMs: 0,
      clock: () => clock.now,
      // The event loop's real delay (a loaded machine, a worker loading modules) must not raise a level here.
      thresholds: { eventLoop: { delayWarnSeconds: 30, delayCriticalSeconds: 60 } },
      logger: { warn: () => {} },
      prometheus: { host: '127.0.0.1', port: 0 },
      otlp: { endpoint: receiver.url, intervalMs: 600_000, timeoutMs: 5000 },
    });
    cleanup.push(() => s.shutdown());
    const address = await s.prometheus!.ready;
    await scenario(s, clock);

    const res = await fetch(address!.url);
    expect(res.status).toBe(200);
    compare(`${exportMode}.prom`, normalizeExposition(await res.text()));

    await s.meterProvider.forceFlush();
    expect(receiver.bodies.length).toBe(1);
    compare(
      `${exportMode}.otlp.json`,
      `${JSON.stringify(normalizeOtlp(decodeMetricsRequest(receiver.bodies[0]!)), null, 2)}\n`,
    );
  });
});
