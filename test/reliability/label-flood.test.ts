/**
 * Case 3: a flood of distinct model names and raw URLs. Series per
 * instrument stay capped (maxModels own slots + the `_other` overflow
 * slot), the overflow slot carries the rest, and memory stays flat.
 */
import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { inferSignal as expressSignal } from '@infersignal/express';
import { inferSignal as fastifySignal } from '@infersignal/fastify';
import { start } from '@infersignal/node';
import { MiB, figure, heapAfterGc, httpRequest, monitorWithReader, pool } from './helpers';
import { listenExpress, listenFastify, newExpress, newFastify } from './servers';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const MAX_MODELS = 50;

describe('case 3: label flood', () => {
  it('100 000 distinct model names in process: series capped at maxModels + _other, overflow exact, heap flat', async () => {
    const t = monitorWithReader({ maxModels: MAX_MODELS, traces: false });
    cleanup.push(() => t.close());
    const queue = t.monitor.queue('flood', { capacity: 1000 });
    const flood = (from: number, to: number): void => {
      for (let i = from; i < to; i++) {
        const name = `model-${i}-${'x'.repeat(i % 7)}`;
        const ticket = queue.enqueue(name);
        ticket.start();
        const stream = ticket.stream();
        stream.token(2);
        stream.end('completed');
        ticket.end('completed');
        t.monitor.label('route', `/v1/completions?id=${i}`);
      }
    };
    flood(0, 10_000);
    await t.collect(); // first collection allocates the SDK's per-series storage
    const heap10k = await heapAfterGc();
    flood(10_000, 100_000);
    const exported = await t.collect();
    const heap100k = await heapAfterGc();

    for (const name of [
      METRICS.requests.name,
      METRICS.requestDuration.name,
      METRICS.queueWait.name,
      METRICS.inferenceDuration.name,
      METRICS.timeToFirstToken.name,
      METRICS.streamTokens.name,
      METRICS.streams.name,
    ]) {
      const models = exported.values(name, ATTR.model);
      expect(models, name).toHaveLength(MAX_MODELS + 1);
      expect(models, name).toContain('_other');
      // Stream outcomes exist at 0 per known model: six series (five outcomes and the write-stall cancels) each.
      const perModel = name === METRICS.streams.name ? 6 : 1;
      expect(exported.points(name).length, name).toBeLessThanOrEqual((MAX_MODELS + 1) * perModel);
    }
    const byModel = exported.by(METRICS.requests.name, ATTR.model);
    expect(byModel._other).toBe(100_000 - MAX_MODELS);
    expect(exported.sum(METRICS.requests.name)).toBe(100_000);
    expect(exported.sum(METRICS.streamTokens.name)).toBe(200_000);
    expect(t.monitor.label('route', '/v1/completions?id=99999')).toBe('_other');
    const growth = heap100k - heap10k;
    expect(growth).toBeLessThan(2 * MiB);
    figure('3 label flood (in process, api mode)', {
      distinctNames: 100_000,
      seriesPerInstrument: exported.points(METRICS.requests.name).length,
      overflowCount: byModel._other,
      heapGrowth10kTo100kMiB: growth / MiB,
    });
  });

  it('distinct model headers and raw URLs over HTTP (Express + Fastify, producer mode, Prometheus scrape): ≤ 51 model labels per series family', async () => {
    const s = start({
      serviceName: 'flood',
      prometheus: { port: 0 },
      registerGlobals: false,
      detectorIntervalMs: 0,
      eventLoop: false,
      maxModels: MAX_MODELS,
      logger: { warn() {} },
    });
    cleanup.push(() => s.shutdown());
    const ex = newExpress();
    // A user mistake this must survive: the route label is the raw URL, query string included, and the model is the route.
    ex.use(expressSignal(s.monitor, { queue: 'express', route: (req) => req.originalUrl, modelFromRoute: true }));
    ex.get('/v1/*rest', (_req, res) => void res.json({ ok: true }));
    const exServer = await listenExpress(ex);
    cleanup.push(() => exServer.close());
    const fa = newFastify();
    await fa.register(fastifySignal, {
      monitor: s.monitor,
      queue: 'fastify',
      model: (request) => request.headers['x-model'] as string | undefined,
    });
    fa.get('/v1/infer', async () => ({ ok: true }));
    const faServer = await listenFastify(fa);
    cleanup.push(() => faServer.close());

    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    cleanup.push(() => agent.destroy());
    // 2 000 distinct labels, 20 times the cap: what a flood does past the cap, the in-process case above
    // repeats 100 000 times.
    const n = 1000;
    let failed = 0;
    await pool(n, 64, async (i) => {
      const a = await httpRequest(`${exServer.url}/v1/models/${i}/generate?nonce=${i}`, { agent });
      const b = await httpRequest(`${faServer.url}/v1/infer`, {
        agent,
        headers: { 'x-model': `tenant-${i}/model-${i}` },
      });
      if (a.status !== 200 || b.status !== 200) failed++;
    });
    expect(failed).toBe(0);

    const text = await (await fetch((await s.prometheus!.ready)!.url)).text();
    const lines = text.split('\n').filter((l) => l.startsWith('infersignal_requests_total{'));
    const models = new Set(lines.map((l) => /gen_ai_request_model="([^"]*)"/.exec(l)?.[1]));
    // Both queues share the monitor's model table: at most 50 own labels in all, then _other.
    expect(models.size).toBeLessThanOrEqual(MAX_MODELS + 1);
    expect(models.size).toBeGreaterThanOrEqual(MAX_MODELS);
    expect(models.has('_other')).toBe(true);
    const total = lines.reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    expect(total).toBe(2 * n);
    const otherTotal = lines
      .filter((l) => l.includes('gen_ai_request_model="_other"'))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    // Every own label was used by exactly one request (each URL and header is distinct): the rest went to _other.
    expect(otherTotal).toBe(2 * n - (models.size - 1));
    const durationSeries = new Set(
      text.split('\n').filter((l) => l.startsWith('gen_ai_server_request_duration_seconds_count{')),
    );
    expect(durationSeries.size).toBeLessThanOrEqual(2 * (MAX_MODELS + 1));
    // The raw URLs the user chose as labels are capped like any label: the first ones only.
    expect(lines.filter((l) => l.includes('nonce=')).length).toBeLessThanOrEqual(MAX_MODELS);
    figure('3 label flood (HTTP, producer mode)', {
      requests: 2 * n,
      distinctModelLabels: models.size,
      requestSeries: lines.length,
      durationSeries: durationSeries.size,
      overflowCount: otherTotal,
    });
  });
});
