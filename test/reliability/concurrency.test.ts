/**
 * Case 4: 10 000 requests in flight together through the Fastify plugin and
 * through the Express middleware. The client fires all 10 000 at once over
 * 500 keep-alive sockets (the agent queues the rest); the first handlers
 * hold their requests until HELD are in flight together (however slow the
 * machine), then each holds its request for a few ms. Recorded = sent,
 * exactly; the in-flight and waiting gauges return to 0.
 */
import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, type Monitor } from '@infersignal/core';
import { inferSignal as expressSignal } from '@infersignal/express';
import { inferSignal as fastifySignal } from '@infersignal/fastify';
import { gate } from '../support/async';
import { figure, httpRequest, monitorWithReader, sleep } from './helpers';
import { listenExpress, listenFastify, newExpress, newFastify, type Listening } from './servers';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const N = 10_000;
const SOCKETS = 500;
/** Requests held until this many are in flight at once: the overlap the case is about, on any machine's speed. */
const HELD = 100;

/** A handler's wait: until HELD requests are in flight together (the HELD-th opens the gate), then a few ms. */
function holder(inFlight: () => number): { hold(): Promise<void>; peak(): number } {
  const together = gate();
  let peak = 0;
  return {
    async hold() {
      const now = inFlight();
      if (now > peak) peak = now;
      if (now >= HELD) together.open();
      await together.wait;
      await sleep(5);
    },
    peak: () => peak,
  };
}

async function fireAll(url: string): Promise<{ ok: number; failed: number; ms: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: SOCKETS });
  const t0 = performance.now();
  try {
    const replies = await Promise.all(
      Array.from({ length: N }, (_, i) => httpRequest(`${url}/infer?i=${i}`, { agent }).catch(() => ({ status: 0 }))),
    );
    const ok = replies.filter((r) => r.status === 200).length;
    return { ok, failed: N - ok, ms: performance.now() - t0 };
  } finally {
    agent.destroy();
  }
}

async function check(
  name: string,
  monitor: Monitor,
  collect: () => Promise<import('./helpers').Exported>,
  server: Listening,
  peak: () => number,
): Promise<void> {
  const sent = await fireAll(server.url);
  expect(sent.failed).toBe(0);
  const exported = await collect();
  const q = { [ATTR.queue]: name };
  expect(exported.sum(METRICS.requests.name, q)).toBe(N);
  expect(exported.by(METRICS.requests.name, ATTR.outcome, q)).toEqual({ completed: N });
  expect(exported.count(METRICS.requestDuration.name, q)).toBe(N);
  expect(exported.count(METRICS.queueWait.name, q)).toBe(N);
  expect(exported.count(METRICS.inferenceDuration.name, q)).toBe(N);
  expect(exported.sum(METRICS.queueInFlight.name, q)).toBe(0);
  expect(exported.sum(METRICS.queueWaiting.name, q)).toBe(0);
  expect(monitor.snapshot().queues[name]).toMatchObject({ inFlight: 0, waiting: 0, completed: N });
  // HELD requests (at least) really were in flight together.
  expect(peak()).toBeGreaterThanOrEqual(HELD);
  figure(`4 ${name} ${N} concurrent`, {
    sent: N,
    recorded: exported.sum(METRICS.requests.name, q),
    sockets: SOCKETS,
    peakInFlight: peak(),
    wallMs: sent.ms,
    inFlightAfter: 0,
  });
}

describe('case 4: 10 000 concurrent requests', () => {
  it('Fastify plugin: recorded count equals sent count; in-flight returns to 0', async () => {
    const t = monitorWithReader();
    cleanup.push(() => t.close());
    const app = newFastify();
    await app.register(fastifySignal, { monitor: t.monitor, queue: { name: 'fastify', capacity: N } });
    const queue = t.monitor.queue('fastify');
    const requests = holder(() => queue.inFlight);
    app.get('/infer', async (request) => {
      request.inferSignal!.start();
      await requests.hold();
      return { ok: true };
    });
    const server = await listenFastify(app);
    cleanup.push(() => server.close());
    await check('fastify', t.monitor, t.collect, server, requests.peak);
  });

  it('Express middleware: recorded count equals sent count; in-flight returns to 0', async () => {
    const t = monitorWithReader();
    cleanup.push(() => t.close());
    const app = newExpress();
    app.use(expressSignal(t.monitor, { queue: { name: 'express', capacity: N } }));
    const queue = t.monitor.queue('express');
    const requests = holder(() => queue.inFlight);
    app.get('/infer', async (req, res) => {
      req.inferSignal!.start();
      await requests.hold();
      res.json({ ok: true });
    });
    const server = await listenExpress(app);
    cleanup.push(() => server.close());
    await check('express', t.monitor, t.collect, server, requests.peak);
  });
});
