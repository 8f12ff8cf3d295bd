/**
 * Case 8: the alert webhook is down (connection refused), slow (answers
 * after the timeout) or failing (500) for the whole run, while alerts keep
 * firing and requests keep flowing. The queue stays bounded, each event is
 * retried with doubling backoff, then dropped and counted, and requests do
 * not wait on any of it: they all get their answers while the first
 * delivery to a receiver that never answers is still waiting.
 */
import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { METRICS } from '@infersignal/core';
import { inferSignal as expressSignal } from '@infersignal/express';
import {
  MiB,
  blackHole,
  figure,
  heapAfterGc,
  httpRequest,
  monitorWithReader,
  pool,
  quantile,
  receiver,
  refusedEndpoint,
  until,
} from './helpers';
import { listenExpress, newExpress } from './servers';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const OPTIONS = { timeoutMs: 100, retries: 2, backoffMs: 20, maxQueue: 10 };
const HANG_TIMEOUT_MS = 60_000;

describe('case 8: webhook sink down / slow / 500 for the whole run', () => {
  it('bounded queue, retries with backoff, drops counted, requests never delayed', async () => {
    // No alert collection here: the test's own array would be the only thing growing.
    const t = monitorWithReader({ onAlert: () => {} });
    cleanup.push(() => t.close());
    const app = newExpress();
    app.use(expressSignal(t.monitor, { queue: { name: 'q', capacity: 1000 } }));
    app.get('/infer', (_req, res) => void res.json({ ok: true }));
    const server = await listenExpress(app);
    cleanup.push(() => server.close());
    const agent = new Agent({ keepAlive: true, maxSockets: 10 });
    cleanup.push(() => agent.destroy());
    const load = async (n: number): Promise<number[]> => {
      const ms: number[] = [];
      await pool(n, 10, async () => {
        const reply = await httpRequest(`${server.url}/infer`, { agent });
        expect(reply.status).toBe(200);
        ms.push(reply.ms);
      });
      return ms;
    };
    await load(200); // warm-up
    const baseline = await load(600);

    const failing = await receiver((_req, res) => {
      res.statusCode = 500;
      res.end('nope');
    });
    cleanup.push(() => failing.close());
    const slowTimers = new Set<NodeJS.Timeout>();
    const slow = await receiver((_req, res) => {
      const timer = setTimeout(() => res.end('late'), 1000);
      slowTimers.add(timer);
    });
    cleanup.push(() => slow.close());
    cleanup.push(() => slowTimers.forEach(clearTimeout));
    const sinksAt = performance.now();
    const hole = await blackHole();
    cleanup.push(() => hole.close());
    const sinks = {
      down: t.monitor.webhook(`${await refusedEndpoint()}/hook`, OPTIONS),
      slow: t.monitor.webhook(`${slow.url}/hook`, OPTIONS),
      error500: t.monitor.webhook(`${failing.url}/hook`, OPTIONS),
      // Accepts and never answers, with a timeout longer than the test: its first attempt is never over.
      hang: t.monitor.webhook(`${hole.url}/hook`, { ...OPTIONS, timeoutMs: HANG_TIMEOUT_MS }),
    };

    // Alerts fire throughout: 5 WARN events (and their recoveries) every 5 ms while requests run —
    // 1 000 a second, far beyond any real alert rate.
    let pushed = 0;
    let reportNs = 0n;
    let maxQueued = 0;
    let accountingBroken = 0;
    const fire = setInterval(() => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 5; i++) {
        t.monitor.report('reliability', 'warn', 1, 0.5, { case: '8' });
        t.monitor.report('reliability', 'ok', 0, 0.5, { case: '8' });
        pushed++;
      }
      reportNs += process.hrtime.bigint() - t0;
      for (const sink of Object.values(sinks)) {
        maxQueued = Math.max(maxQueued, sink.queued);
        if (sink.delivered + sink.dropped + sink.queued !== pushed) accountingBroken++;
      }
    }, 5);
    const during = await load(600);
    // Every request has its answer and the hang sink's first attempt is still waiting (one connection, open):
    // no request waited on a delivery.
    const hangAttempts = { accepted: hole.accepted(), open: hole.open() };
    expect(hangAttempts).toEqual({ accepted: 1, open: 1 });
    // Alerts keep coming until every retry path has run (bounded poll).
    await until(
      () => failing.requests.length >= OPTIONS.retries + 1 && slow.requests.length >= OPTIONS.retries + 1,
      10_000,
      'every retry path',
    );
    clearInterval(fire);

    // Retries: the 500 receiver saw each event's attempts spaced by the doubling backoff.
    const firstAttempts = failing.requests.slice(0, OPTIONS.retries + 1).map((r) => r.at);
    const gaps = firstAttempts.slice(1).map((at, i) => at - firstAttempts[i]);
    expect(gaps).toHaveLength(2);
    expect(gaps[0]).toBeGreaterThanOrEqual(OPTIONS.backoffMs - 2);
    expect(gaps[1]).toBeGreaterThanOrEqual(2 * OPTIONS.backoffMs - 2);
    // The slow receiver: each attempt waits out the 100 ms timeout before the next one.
    expect(slow.requests.length).toBeGreaterThanOrEqual(OPTIONS.retries + 1);
    const slowGap = slow.requests[1].at - slow.requests[0].at;
    expect(slowGap).toBeGreaterThanOrEqual(OPTIONS.backoffMs - 2);
    // One event at a time, each costing 3 × 100 ms timeouts + 20 + 40 ms backoff: the attempts cannot outpace that.
    const perEventMs = (OPTIONS.retries + 1) * OPTIONS.timeoutMs + OPTIONS.backoffMs * 3;
    expect(slow.requests.length).toBeLessThanOrEqual(
      (OPTIONS.retries + 1) * (Math.ceil((performance.now() - sinksAt) / perEventMs) + 1),
    );

    // Bounded: never more than maxQueue events waiting per sink; nothing delivered; every event accounted for.
    expect(maxQueued).toBeLessThanOrEqual(OPTIONS.maxQueue);
    expect(accountingBroken).toBe(0);
    expect(hole.accepted()).toBeGreaterThanOrEqual(1);
    for (const sink of Object.values(sinks)) {
      expect(sink.delivered).toBe(0);
      expect(sink.delivered + sink.dropped + sink.queued).toBe(pushed);
    }
    const exported = await t.collect();
    const droppedCounter = exported.sum(METRICS.webhookDropped.name);
    const droppedSinks = sinks.down.dropped + sinks.slow.dropped + sinks.error500.dropped + sinks.hang.dropped;
    expect(droppedCounter).toBe(droppedSinks);

    // What a push and a request cost here are figures (the goals are `pnpm bench:hot-path`'s and
    // `pnpm bench:server`'s): on a shared machine they measure the machine.
    const perEventUs = Number(reportNs) / 1000 / (2 * pushed);
    const p99Base = quantile(baseline, 0.99);
    const p99During = quantile(during, 0.99);
    const p50Base = quantile(baseline, 0.5);
    const p50During = quantile(during, 0.5);
    const maxDuring = Math.max(...during);

    // Memory: another 20 000 events against the three failing sinks do not grow the heap.
    const heapBefore = await heapAfterGc();
    for (let i = 0; i < 20_000; i++) {
      t.monitor.report('reliability', 'warn', 1, 0.5, { case: '8' });
      t.monitor.report('reliability', 'ok', 0, 0.5, { case: '8' });
    }
    const heapGrowth = (await heapAfterGc()) - heapBefore;
    expect(heapGrowth).toBeLessThan(1 * MiB);
    pushed += 20_000;
    for (const sink of Object.values(sinks)) expect(sink.queued).toBeLessThanOrEqual(OPTIONS.maxQueue);

    for (const sink of Object.values(sinks)) sink.close();
    for (const sink of Object.values(sinks)) expect(sink.delivered + sink.dropped).toBe(pushed);
    figure('8 webhook failing', {
      events: pushed,
      maxQueued,
      droppedDown: sinks.down.dropped,
      droppedSlow: sinks.slow.dropped,
      dropped500: sinks.error500.dropped,
      droppedCounterBeforeClose: droppedCounter,
      attempts500: failing.requests.length,
      attemptsSlow: slow.requests.length,
      backoffGapsMs: gaps.map((g) => g.toFixed(1)).join('/'),
      reportUsPerEvent: perEventUs,
      p50BaselineMs: p50Base,
      p50DuringMs: p50During,
      p99BaselineMs: p99Base,
      p99DuringMs: p99During,
      maxDuringMs: maxDuring,
      heapGrowth20kEventsMiB: heapGrowth / MiB,
    });
  });
});
