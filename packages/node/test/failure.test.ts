import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { trace } from '@opentelemetry/api';
import { MetricReader } from '@opentelemetry/sdk-metrics';
import { ATTR, METRICS } from '@infersignal/core';
import { start, type InferSignal } from '@infersignal/node';
import { blackHole, refusedEndpoint } from '../../../test/support/http';
import { timed } from '../../../test/support/machine';

/** A plain pull reader: `collect()` on demand. */
class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}
let testReader = new TestReader();

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => process.on('unhandledRejection', onUnhandled));
afterAll(() => process.off('unhandledRejection', onUnhandled));

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** A port with nothing listening: connections are refused. */
async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Drives n requests (each with a span around it) and returns the median per-request time in µs. */
function requests(s: InferSignal, n: number): { p50: number } {
  const queue = s.monitor.queue('main', { capacity: 100 });
  const tracer = trace.getTracer('app');
  const times = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    tracer.startActiveSpan('request', (span) => {
      const ticket = queue.enqueue(i % 2 ? 'llama' : 'mistral');
      ticket.start();
      ticket.end('completed');
      span.end();
    });
    times[i] = (performance.now() - t0) * 1000;
  }
  times.sort();
  return { p50: times[Math.floor(n * 0.5)] };
}

function startWith(endpoint: string | undefined, warnings: string[], timeoutMs = 300): InferSignal {
  testReader = new TestReader();
  return start({
    metricReaders: [testReader],
    serviceName: 'failure-test',
    prometheus: false,
    traces: 'all', // a span per request: the span path under load, not only outliers
    detectorIntervalMs: 0,
    otlp: endpoint === undefined ? false : { endpoint, intervalMs: 300, timeoutMs },
    logger: { warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
  });
}

/** The per-request time with the same SDK and no exporter, in this run: what a slow or busy machine gives. */
async function baselineRequests(): Promise<{ p50: number }> {
  const baseline = startWith(undefined, []);
  requests(baseline, 2000); // warm-up
  const base = requests(baseline, 5000);
  await baseline.shutdown();
  return base;
}

describe('collector down (connection refused) for the whole test', () => {
  it('drops exports with a counter and one warning, keeps the request path fast and memory flat, shuts down in time', async () => {
    const endpoint = await refusedEndpoint();

    const base = await baselineRequests();

    const warnings: string[] = [];
    const s = startWith(endpoint, warnings);
    cleanup.push(() => s.shutdown());
    requests(s, 2000); // warm-up: fills the span queue (2048) too
    await until(() => s.exportStats().metricsDropped >= 3 && s.exportStats().tracesDropped >= 1, 10_000);

    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const down = requests(s, 5000);
    for (let i = 0; i < 4; i++) requests(s, 5000);
    gc();
    const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
    // 25 000 requests (25 000 spans) against a dead collector: the span queue
    // and metric state are fixed-size, so the heap does not follow the traffic.
    expect(heapGrowth).toBeLessThan(8 * 1024 * 1024);

    // Exports fail off the request path: per-request time stays within noise of the baseline.
    expect(down.p50).toBeLessThan(Math.max(base.p50 * 3, 50));

    await until(() => s.exportStats().metricsDropped >= 5, 10_000);
    const stats = s.exportStats();
    const metricWarnings = warnings.filter((w) => w.includes('metrics export'));
    const traceWarnings = warnings.filter((w) => w.includes('traces export'));
    expect(metricWarnings).toHaveLength(1); // rate-limited: one per 5 minutes
    expect(traceWarnings).toHaveLength(1);
    expect(metricWarnings[0]).toContain(`${endpoint}/v1/metrics`);

    // The dropped-export counter is itself a metric, equal to the stats.
    expect(stats.metricsDropped).toBeGreaterThanOrEqual(5);
    const { resourceMetrics } = await testReader.collect();
    const dropped = resourceMetrics.scopeMetrics
      .flatMap((sm) => sm.metrics)
      .find((m) => m.descriptor.name === METRICS.exportDropped.name)!;
    const bySignal = Object.fromEntries(dropped.dataPoints.map((p) => [p.attributes[ATTR.exportSignal], p.value]));
    expect(bySignal.metrics).toBe(s.exportStats().metricsDropped);
    expect(bySignal.traces).toBe(s.exportStats().tracesDropped);

    // The time the machine kept this thread off its CPUs is not shutdown's.
    const shutdown = await timed(() => s.shutdown());
    expect(shutdown.ms - shutdown.waitedMs).toBeLessThan(300 + 250);
    expect(unhandled).toEqual([]);
  });
});

describe('collector black-holed (accepts, never answers)', () => {
  it('times exports out, bounds in-flight exports, leaves the request path alone, shuts down within the timeout', async () => {
    const hole = await blackHole();
    cleanup.push(() => hole.close());
    const warnings: string[] = [];
    const base = await baselineRequests();
    const s = startWith(hole.url, warnings, 250);
    requests(s, 2000);
    await until(() => s.exportStats().metricsDropped >= 3, 10_000);
    // Exports hang off the request path: the median request costs what it does with no exporter.
    // (Its P99 is the machine's: a neighbour that preempts this loop sets it.)
    const during = requests(s, 5000);
    expect(during.p50).toBeLessThan(Math.max(base.p50 * 3, 50));
    // One export at a time per signal (plus retries of the same one): a handful of sockets, not one per interval.
    expect(hole.maxOpen()).toBeLessThanOrEqual(8);
    expect(warnings.filter((w) => w.includes('metrics export'))).toHaveLength(1);

    const shutdown = await timed(() => s.shutdown());
    expect(shutdown.ms - shutdown.waitedMs).toBeLessThan(250 + 250);
    expect(unhandled).toEqual([]);
  });
});

describe('process exit', () => {
  const fixture = fileURLToPath(new URL('./fixtures/no-shutdown.ts', import.meta.url));
  const cwd = fileURLToPath(new URL('../../..', import.meta.url));

  async function runChild(
    endpoint: string,
  ): Promise<{ code: number | null; ms: number; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture, endpoint], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let printedAt = Number.NaN;
    child.stdout.on('data', (d) => {
      stdout += d;
      if (Number.isNaN(printedAt) && stdout.includes('\n')) printedAt = performance.now();
    });
    child.stderr.on('data', (d) => (stderr += d));
    // Only catches a child that never exits; start-up (tsx) takes what the machine gives it.
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    clearTimeout(killer);
    // The script's last act is its print: from there to the exit is what InferSignal left running.
    return { code, ms: performance.now() - printedAt, stdout, stderr };
  }

  it('exits on its own without shutdown() while the collector refuses connections', async () => {
    const result = await runChild(await refusedEndpoint());
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout);
    expect(out.address.host).toBe('127.0.0.1');
    expect(result.ms).toBeLessThan(8000);
  });

  it('exits on its own without shutdown() while the collector is black-holed', async () => {
    const hole = await blackHole();
    cleanup.push(() => hole.close());
    const result = await runChild(hole.url);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.ms).toBeLessThan(8000);
  });
});
