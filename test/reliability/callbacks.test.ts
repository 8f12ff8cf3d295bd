/**
 * Case 7: user callbacks that throw — the alert listener, the model and
 * route label functions, device-memory source functions (what the
 * readiness probe reports on), and the logger itself. Requests complete
 * normally; each error is counted in `infersignal.internal.errors` under
 * its source, exactly.
 */
import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { inferSignal as expressSignal, readinessRouter } from '@infersignal/express';
import { inferSignal as fastifySignal } from '@infersignal/fastify';
import { figure, httpRequest, monitorWithReader, pool } from './helpers';
import { listenExpress, listenFastify, newExpress, newFastify } from './servers';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('case 7: user callbacks that throw', () => {
  it('requests complete normally; every error is counted in infersignal.internal.errors by source', async () => {
    const delivered: string[] = [];
    const t = monitorWithReader({
      onAlert: () => {
        throw new Error('listener bug');
      },
      // The logger is user code too: the one-time warning about each source throws as well.
      logger: {
        warn: () => {
          throw new Error('logger bug');
        },
      },
    });
    cleanup.push(() => t.close());
    t.monitor.onAlert((e) => delivered.push(`${e.signal}:${e.level}`));

    const ex = newExpress();
    ex.use(readinessRouter(t.monitor));
    ex.use(
      expressSignal(t.monitor, {
        queue: 'express',
        model: () => {
          throw new Error('model label bug');
        },
        route: () => {
          throw new Error('route label bug');
        },
      }),
    );
    ex.get('/infer', (req, res) => void res.json({ ok: true, model: req.inferSignal!.model }));
    const exServer = await listenExpress(ex);
    cleanup.push(() => exServer.close());

    const fa = newFastify();
    await fa.register(fastifySignal, {
      monitor: t.monitor,
      queue: 'fastify',
      readiness: true,
      model: () => {
        throw new Error('model label bug');
      },
    });
    fa.get('/infer', async (request) => ({ ok: true, model: request.inferSignal!.model }));
    const faServer = await listenFastify(fa);
    cleanup.push(() => faServer.close());

    // A device-memory source whose reader throws; the readiness probe reports on the monitor meanwhile.
    const memory = t.monitor.deviceMemory({
      allocated: () => {
        throw new Error('allocated() bug');
      },
      reserved: () => 1024,
      intervalMs: 0,
      source: 'user',
    });
    cleanup.push(() => memory.stop());

    const N = 200;
    const agent = new Agent({ keepAlive: true, maxSockets: 20 });
    cleanup.push(() => agent.destroy());
    const bodies: string[] = [];
    let failed = 0;
    await pool(N, 20, async () => {
      for (const url of [exServer.url, faServer.url]) {
        const reply = await httpRequest(`${url}/infer`, { agent });
        if (reply.status !== 200) failed++;
        bodies.push(reply.body);
      }
    });
    expect(failed).toBe(0);
    // Both fell back to the default model: nothing named one (the route is a model only with modelFromRoute).
    expect(new Set(bodies)).toEqual(new Set(['{"ok":true,"model":"_unknown"}']));

    const TICKS = 25;
    for (let i = 0; i < TICKS; i++) t.monitor.tick();
    const ALERTS = 40;
    for (let i = 0; i < ALERTS; i++) t.monitor.report('user_signal', i % 2 === 0 ? 'warn' : 'ok', i, 1);

    const readyEx = await httpRequest(`${exServer.url}/healthz/ready`);
    const readyFa = await httpRequest(`${faServer.url}/healthz/ready`);
    expect(readyEx.status).toBe(200);
    expect(readyFa.status).toBe(200);

    const exported = await t.collect();
    const bySource = exported.by(METRICS.internalErrors.name, ATTR.errorSource);
    // The throwing listener did not stop delivery to the next one: every reported alert reached it. The ticks run
    // the real detectors on the real clock, so a paused machine may add an alert of its own (a stalled loop):
    // the listener threw once for each alert delivered, whatever raised it.
    expect(delivered.filter((alert) => alert.startsWith('user_signal:'))).toHaveLength(ALERTS);
    expect(bySource).toEqual({
      'express.model': N,
      'express.route': N,
      'fastify.model': N,
      'deviceMemory.allocated': TICKS,
      onAlert: delivered.length,
    });
    expect(t.monitor.snapshot().internalErrors).toBe(3 * N + TICKS + delivered.length);
    expect(exported.sum(METRICS.requests.name, { [ATTR.outcome]: 'completed' })).toBe(2 * N);
    // A source that cannot be read is "not measured": nothing invented in its place.
    expect(t.monitor.snapshot().deviceMemory.user).toMatchObject({ allocated: null, fragmentation: null });
    figure('7 throwing callbacks', { requests: 2 * N, failedRequests: failed, ...bySource });
  });

  it('a loader that throws is rethrown unchanged (user error), not counted as internal', async () => {
    const t = monitorWithReader();
    cleanup.push(() => t.close());
    const mine = new RangeError('my loader failed');
    const caught = await t.monitor.modelLoad('m', 'load', () => Promise.reject(mine)).catch((e: unknown) => e);
    expect(caught).toBe(mine);
    const exported = await t.collect();
    expect(exported.sum(METRICS.internalErrors.name)).toBe(0);
    expect(exported.count(METRICS.modelLoadDuration.name, { [ATTR.outcome]: 'error' })).toBe(1);
  });
});
