/** `shedResponse` through the Fastify plugin: the answer a shed request gets, on a real server. */
import { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { InferSignalConfigError, createMonitor, type Monitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/fastify';
import { createMeterProvider } from '../../../test/support/otel';
import { gate, until } from '../../../test/support/async';
import { SHED_CASES, shedOne } from '../../../test/support/shed-cases';

let app: FastifyInstance | undefined;
let monitor: Monitor | undefined;
afterEach(async () => {
  await app?.close();
  await monitor?.close();
});

describe('Fastify: the shed answer', () => {
  it.each(SHED_CASES)('$name', async ({ shedResponse, check }) => {
    const { provider, reader } = createMeterProvider();
    monitor = createMonitor({ meterProvider: provider, detectorIntervalMs: 0, traces: false, eventLoop: false });
    const hold = gate();
    let calls = 0;
    app = Fastify();
    await app.register(inferSignal, { monitor, queue: { capacity: 1 }, shed: true, model: 'tiny', shedResponse });
    app.get('/v1/slow', async (request) => {
      calls++;
      await request.inferSignal!.run(() => hold.wait);
      return { ok: true };
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const answer = await shedOne({ url, monitor, reader, calls: () => calls, release: hold.open });
    check(answer, monitor);
  });

  it("gives a shedResponse handler Node's request and response, not Fastify's wrappers", async () => {
    monitor = createMonitor({ detectorIntervalMs: 0, traces: false, eventLoop: false });
    const hold = gate();
    let given: unknown[] = [];
    app = Fastify();
    await app.register(inferSignal, {
      monitor,
      queue: { capacity: 1 },
      shed: true,
      model: 'tiny',
      shedResponse: (req, res) => {
        given = [req, res];
        res.writeHead(503).end();
      },
    });
    app.get('/v1/slow', async (request) => {
      await request.inferSignal!.run(() => hold.wait);
      return { ok: true };
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const first = fetch(`${url}/v1/slow`);
    await until(() => monitor!.snapshot().queues.http.inFlight === 1, 5000, 'the first request running');
    expect((await fetch(`${url}/v1/slow`)).status).toBe(503);
    hold.open();
    expect((await first).status).toBe(200);
    expect(given[0]).toBeInstanceOf(IncomingMessage);
    expect(given[1]).toBeInstanceOf(ServerResponse);
  });

  it('refuses a bad shedResponse at registration, naming the field', async () => {
    monitor = createMonitor({ detectorIntervalMs: 0, traces: false, eventLoop: false });
    app = Fastify();
    await expect(app.register(inferSignal, { monitor, shedResponse: { status: 302 } } as never)).rejects.toThrow(
      InferSignalConfigError,
    );
    await expect(app.ready()).rejects.toMatchObject({ field: 'options.shedResponse.status' });
  });
});
