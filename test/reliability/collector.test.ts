/**
 * Cases 1, 2 and 15: the OTLP collector refuses connections, black-holes
 * them, or everything fails at shutdown. Real `start()` (OTel SDK, OTLP
 * http/protobuf exporters, Prometheus server), a real Fastify server with
 * the adapter, real HTTP clients.
 */
import { spawn } from 'node:child_process';
import { Agent } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { inferSignal } from '@infersignal/fastify';
import { start, type InferSignal, type StartOptions } from '@infersignal/node';
import {
  MiB,
  type BlackHole,
  blackHole,
  captureUnhandled,
  figure,
  heapAfterGc,
  httpRequest,
  pool,
  quantile,
  refusedEndpoint,
  until,
} from './helpers';
import { listenFastify, newFastify, tick, type Listening } from './servers';
import { timed } from '../support/machine';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

function startTelemetry(otlp: StartOptions['otlp'], warnings: string[]): InferSignal {
  const s = start({
    serviceName: 'reliability-collector',
    prometheus: { port: 0 },
    otlp,
    traces: 'all', // a span per request: the span path under load, not only outliers
    registerGlobals: false,
    detectorIntervalMs: 0,
    eventLoop: false,
    logger: { warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
  });
  cleanup.push(() => s.shutdown());
  return s;
}

async function fastifyOn(s: InferSignal): Promise<Listening> {
  const app = newFastify();
  await app.register(inferSignal, { monitor: s.monitor, queue: { capacity: 1000 } });
  app.get('/infer', async (request) => {
    request.inferSignal?.start();
    await tick();
    return { ok: true };
  });
  const listening = await listenFastify(app);
  cleanup.push(() => listening.close());
  return listening;
}

/**
 * Sends `n` requests at `concurrency`; returns client latencies (ms), the
 * statuses that were not 200 and, given the collector's black hole, how many
 * requests began and ended while one export connection stayed open.
 */
async function load(
  url: string,
  agent: Agent,
  n: number,
  concurrency: number,
  hole?: BlackHole,
): Promise<{ ms: number[]; failed: number; duringExport: number }> {
  const ms: number[] = [];
  let failed = 0;
  let duringExport = 0;
  await pool(n, concurrency, async () => {
    const openAtStart = hole ? hole.open() : 0;
    const closedAtStart = hole ? hole.closed() : 0;
    const reply = await httpRequest(`${url}/infer`, { agent });
    // No connection closed meanwhile: the ones open at the start were open throughout.
    if (hole && openAtStart > 0 && hole.closed() === closedAtStart) duringExport++;
    ms.push(reply.ms);
    if (reply.status !== 200) failed++;
  });
  return { ms, failed, duringExport };
}

/** In-process requests with a span each: the path a request takes inside the app, minus HTTP. */
function inProcess(s: InferSignal, n: number): void {
  const queue = s.monitor.queue('in-process', { capacity: 100 });
  const tracer = s.tracerProvider!.getTracer('app');
  for (let i = 0; i < n; i++) {
    const span = tracer.startSpan('request');
    const ticket = queue.enqueue(i % 2 ? 'llama' : 'mistral');
    ticket.start();
    ticket.end('completed');
    span.end();
  }
}

async function scrapeDropped(s: InferSignal): Promise<Record<string, number>> {
  const address = await s.prometheus!.ready;
  const text = await (await fetch(address!.url)).text();
  const out: Record<string, number> = {};
  for (const match of text.matchAll(
    /^infersignal_export_dropped_total\{[^}]*infersignal_export_signal="(\w+)"[^}]*\} (\d+)/gm,
  ))
    out[match[1]] = Number(match[2]);
  return out;
}

describe('case 1: collector refusing connections for the whole run, at steady load', () => {
  it('bounded heap, no unhandled rejection, one warning per signal, a dropped-export counter', async () => {
    const unhandled = captureUnhandled();
    cleanup.push(() => void unhandled.stop());
    const endpoint = await refusedEndpoint();
    const warnings: string[] = [];
    const s = startTelemetry({ endpoint, intervalMs: 200, timeoutMs: 200 }, warnings);
    const server = await fastifyOn(s);
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    cleanup.push(() => agent.destroy());

    // Steady load over HTTP for several export intervals (each one fails).
    const t0 = performance.now();
    let sent = 0;
    let failed = 0;
    while (performance.now() - t0 < 1500 || s.exportStats().metricsDropped < 5 || s.exportStats().tracesDropped < 2) {
      const r = await load(server.url, agent, 500, 16);
      sent += 500;
      failed += r.failed;
    }
    expect(failed).toBe(0);

    // Heap bound on the in-process path, against the same dead collector (spans included).
    inProcess(s, 20_000); // warm-up: JIT, span queue at its 2048 cap
    const heapBefore = await heapAfterGc();
    inProcess(s, 200_000);
    const heapAfter = await heapAfterGc();
    const growth = heapAfter - heapBefore;
    // 200 000 requests (200 000 spans) with every export failing: a leak of 20 bytes/request would show as 4 MiB.
    expect(growth).toBeLessThan(4 * MiB);

    // And over HTTP at steady load: heap after 3 000 more requests stays within the span queue's own size (2048 spans).
    const httpBefore = await heapAfterGc();
    await load(server.url, agent, 3000, 16);
    sent += 3000;
    const httpGrowth = (await heapAfterGc()) - httpBefore;
    expect(httpGrowth).toBeLessThan(6 * MiB);

    const stats = s.exportStats();
    const scraped = await scrapeDropped(s);
    const statsAfter = s.exportStats();
    expect(scraped.metrics).toBeGreaterThanOrEqual(stats.metricsDropped);
    expect(scraped.metrics).toBeLessThanOrEqual(statsAfter.metricsDropped);
    expect(scraped.traces).toBeGreaterThanOrEqual(stats.tracesDropped);
    expect(scraped.traces).toBeLessThanOrEqual(statsAfter.tracesDropped);
    expect(stats.metricsDropped).toBeGreaterThanOrEqual(5);

    // Rate-limited: one warning per signal for the whole run.
    expect(warnings.filter((w) => w.includes('metrics export'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('traces export'))).toHaveLength(1);
    expect(warnings).toHaveLength(2);

    // Every request that went through the server was recorded (the collector being down loses nothing locally).
    const requestsText = await (await fetch((await s.prometheus!.ready)!.url)).text();
    const recorded = [
      ...requestsText.matchAll(/^infersignal_requests_total\{[^}]*infersignal_queue_name="http"[^}]*\} (\d+)/gm),
    ].reduce((t, m) => t + Number(m[1]), 0);
    expect(recorded).toBe(sent);

    await s.shutdown();
    await tick();
    expect(unhandled.stop()).toEqual([]);
    figure('1 collector refused', {
      httpRequests: sent,
      inProcessRequests: 220_000,
      heapGrowthInProcessMiB: growth / MiB,
      heapGrowthHttp3000MiB: httpGrowth / MiB,
      metricsDropped: statsAfter.metricsDropped,
      tracesDropped: statsAfter.tracesDropped,
      warnings: warnings.length,
    });
  });
});

describe('case 2: collector that accepts and never answers', () => {
  it('exports time out, requests complete while an export hangs, in-flight exports bounded', async () => {
    const unhandled = captureUnhandled();
    cleanup.push(() => void unhandled.stop());
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    cleanup.push(() => agent.destroy());

    // Baseline: the same server and SDK without OTLP.
    const baseWarnings: string[] = [];
    const base = startTelemetry(false, baseWarnings);
    const baseServer = await fastifyOn(base);
    await load(baseServer.url, agent, 500, 8); // warm-up
    const without = await load(baseServer.url, agent, 2000, 8);
    await baseServer.close();
    await base.shutdown();

    const hole = await blackHole();
    cleanup.push(() => hole.close());
    const warnings: string[] = [];
    const timeoutMs = 150;
    const s = startTelemetry({ endpoint: hole.url, intervalMs: 200, timeoutMs }, warnings);
    const server = await fastifyOn(s);
    await load(server.url, agent, 500, 8);
    // Let several exports hang and time out before measuring.
    await until(() => s.exportStats().metricsDropped >= 3, 10_000, '3 timed-out exports');
    const dropped0 = s.exportStats().metricsDropped;
    const withHole = await load(server.url, agent, 2000, 8, hole);
    await until(() => s.exportStats().metricsDropped >= dropped0 + 3, 10_000, 'more timed-out exports');
    expect(without.failed + withHole.failed).toBe(0);
    // Requests that began while an export hung and had their answer before it ended: a request that waited
    // on an export could not be one of them. Exports hang 150 ms of every 200, so most requests are.
    expect(withHole.duringExport).toBeGreaterThan(0);

    // Latencies are figures: on a shared machine they measure the machine.
    const p99Without = quantile(without.ms, 0.99);
    const p99With = quantile(withHole.ms, 0.99);
    const p50Without = quantile(without.ms, 0.5);
    const p50With = quantile(withHole.ms, 0.5);

    // Exports time out and are counted; sockets do not pile up one per interval.
    const stats = s.exportStats();
    expect(stats.metricsDropped).toBeGreaterThanOrEqual(6);
    expect(hole.accepted()).toBeGreaterThanOrEqual(6);
    expect(hole.maxOpen()).toBeLessThanOrEqual(6);
    expect(warnings.filter((w) => w.includes('metrics export'))).toHaveLength(1);

    const shutdown = await timed(() => s.shutdown());
    const shutdownMs = shutdown.ms;
    // Bounded by one export timeout: waiting for a retry, or for one export after another, would take two. The
    // time the machine kept this thread off its CPUs is not shutdown's.
    expect(shutdown.ms - shutdown.waitedMs).toBeLessThan(2 * timeoutMs);
    await tick();
    expect(unhandled.stop()).toEqual([]);
    figure('2 collector black-holed', {
      p50WithoutMs: p50Without,
      p50WithMs: p50With,
      p99WithoutMs: p99Without,
      p99WithMs: p99With,
      requestsDuringOneExport: withHole.duringExport,
      exportsTimedOut: stats.metricsDropped,
      tracesDropped: stats.tracesDropped,
      connectionsAccepted: hole.accepted(),
      maxOpenExportSockets: hole.maxOpen(),
      shutdownMs,
      shutdownCpuWaitMs: shutdown.waitedMs,
    });
  });
});

describe('case 15: shutdown while everything is failing', () => {
  const child = fileURLToPath(new URL('./fixtures/failing-shutdown.ts', import.meta.url));
  const cwd = fileURLToPath(new URL('../..', import.meta.url));

  it('resolves within the export timeout and the process exits on its own', async () => {
    const hole = await blackHole();
    cleanup.push(() => hole.close());
    const timeoutMs = 300;
    // The webhook's attempts outlast everything else: a shutdown that waited for one, or a delivery left
    // running after it, would show as this long.
    const webhookTimeoutMs = 15_000;
    const t0 = performance.now();
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', child, hole.url, String(timeoutMs), String(webhookTimeoutMs)],
      {
        cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    let printedAt = 0;
    proc.stdout.on('data', (d) => {
      stdout += d;
      if (stdout.includes('\n') && printedAt === 0) printedAt = performance.now();
    });
    proc.stderr.on('data', (d) => (stderr += d));
    const killer = setTimeout(() => proc.kill('SIGKILL'), 25_000);
    const code = await new Promise<number | null>((r) => proc.on('exit', (c) => r(c)));
    clearTimeout(killer);
    const exitedAt = performance.now();
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const out = JSON.parse(stdout.trim()) as {
      shutdownMs: number;
      shutdownCpuWaitMs: number;
      webhookPending: number;
      exportAttempts: number;
      metricsDropped: number;
    };
    // Everything was really failing when shutdown began.
    expect(out.webhookPending).toBeGreaterThanOrEqual(1);
    expect(hole.accepted()).toBeGreaterThanOrEqual(2);
    // shutdown() resolved within one export timeout (two would mean it waited for a retry or went one export
    // after another) …
    expect(out.shutdownMs - out.shutdownCpuWaitMs).toBeLessThan(2 * timeoutMs);
    // … and nothing InferSignal left behind kept the process alive after it: no webhook attempt, no socket to
    // the black hole (that one would hold it until the test closes the hole).
    const lingerMs = exitedAt - printedAt;
    figure('15 shutdown while failing', {
      shutdownMs: out.shutdownMs,
      shutdownCpuWaitMs: out.shutdownCpuWaitMs,
      exitAfterShutdownMs: lingerMs,
      totalChildMs: exitedAt - t0,
      collectorConnections: hole.accepted(),
    });
    expect(lingerMs).toBeLessThan(webhookTimeoutMs);
  });
});
