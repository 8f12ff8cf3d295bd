/**
 * A real Fastify server on loopback with shedding on, under a step of held
 * requests: the queue's WARN and its shedding are announced before the
 * client reads the first 503, the episode lasts until none was shed for
 * queue.shedHoldSeconds, and a stuck queue's age is announced by the next
 * arrival. Requests are held by the test and the monitor runs on a manual
 * clock, so nothing depends on how fast the machine is.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, createMonitor, type Monitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/fastify';
import { collect, createMeterProvider, type TestReader } from '../../../test/support/otel';
import { gate, until } from '../../../test/support/async';

let app: FastifyInstance | undefined;
let monitor: Monitor | undefined;

afterEach(async () => {
  await app?.close();
  await monitor?.close();
  app = undefined;
  monitor = undefined;
});

function setup() {
  const { provider, reader } = createMeterProvider();
  const clock = { now: 1_000_000 };
  const log: string[] = [];
  monitor = createMonitor({
    meterProvider: provider,
    clock: () => clock.now,
    detectorIntervalMs: 0,
    traces: false,
    eventLoop: false,
    logger: { warn: () => {} },
  });
  monitor.onAlert((e) => log.push(`${e.signal}:${e.level}`));
  app = Fastify({ forceCloseConnections: true });
  return { app, monitor, reader: reader as TestReader, clock, log };
}

describe('Fastify: queue levels on the request path', () => {
  it('a step of 12 held requests into capacity 10: WARN, then shedding announced, then the first 503; the episode lasts until no 503 for shedHoldSeconds', async () => {
    const { app, monitor, clock, log } = setup();
    const release = gate();
    await app.register(inferSignal, { monitor, queue: { name: 'infer', concurrency: 2, capacity: 10 }, shed: true });
    app.get('/v1/infer', async (request) => {
      await request.inferSignal!.run(() => release.wait);
      return { ok: true };
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const get = async () => {
      const response = await fetch(`${url}/v1/infer`);
      await response.arrayBuffer();
      log.push(String(response.status));
      return response.status;
    };
    const step = Array.from({ length: 12 }, get);
    // The admission of the 10th finds 9 of 10 (90 %) held: it and the two after it are shed, whatever their order.
    await until(() => log.filter((entry) => entry === '503').length === 3, 5000, 'three 503s');
    const queue = monitor.snapshot().queues.infer!;
    expect(queue).toMatchObject({ waiting: 7, inFlight: 2, shedding: true });
    const first503 = log.indexOf('503');
    expect(log.indexOf('queue_occupancy:warn')).toBeGreaterThanOrEqual(0);
    expect(log.indexOf('queue_occupancy:warn')).toBeLessThan(log.indexOf('queue_occupancy:critical'));
    expect(log.indexOf('queue_occupancy:critical')).toBeLessThan(log.indexOf('queue_backpressure:critical'));
    expect(log.indexOf('queue_backpressure:critical')).toBeLessThan(first503);

    release.open();
    expect((await Promise.all(step)).sort()).toEqual([...Array(9).fill(200), 503, 503, 503]);
    // Drained: the episode admits (nothing ahead to wait for), but goes on until it has turned
    // none away for shedHoldSeconds (3 s) on this clock.
    expect(await get()).toBe(200);
    expect(monitor.snapshot().queues.infer!.shedding).toBe(true);
    clock.now += 3000;
    expect(await get()).toBe(200);
    expect(monitor.snapshot().queues.infer!.shedding).toBe(false);
    expect(log.filter((entry) => entry.startsWith('queue_backpressure'))).toEqual([
      'queue_backpressure:critical',
      'queue_backpressure:ok',
    ]);
  });

  it('a stuck queue: the age gauges read the held requests at collection, and the next arrival announces queue_age', async () => {
    const { app, monitor, reader, clock, log } = setup();
    const release = gate();
    await app.register(inferSignal, { monitor, queue: { name: 'stuck', concurrency: 1, capacity: 100 } });
    app.get('/v1/infer', async (request) => {
      await request.inferSignal!.run(() => release.wait);
      return { ok: true };
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const held = Array.from({ length: 3 }, () => fetch(`${url}/v1/infer`).then((r) => r.arrayBuffer()));
    await until(() => monitor.snapshot().queues.stuck?.waiting === 2, 5000, 'two waiting');
    clock.now += 2500;
    const metrics = await collect(reader);
    const at = { [ATTR.queue]: 'stuck' };
    expect(metrics.points<number>(METRICS.queueWaitOldest.name, at)[0]!.value).toBeCloseTo(2.5, 9);
    expect(metrics.points<number>(METRICS.queueWaitPending.name, at)[0]!.value).toBeCloseTo(5, 9);
    expect(log).toEqual([]);
    const next = fetch(`${url}/v1/infer`).then((r) => r.arrayBuffer());
    await until(() => log.length > 0, 5000, 'an alert');
    expect(log).toEqual(['queue_age:warn']);
    release.open();
    await Promise.all([...held, next]);
    expect(monitor.snapshot().queues.stuck).toMatchObject({ waiting: 0, oldestWaitSeconds: 0, pendingWaitSeconds: 0 });
  });
});
