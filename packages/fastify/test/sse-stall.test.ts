/** A client that stops reading an SSE stream served by the Fastify plugin (hijacked reply): cut off after the stall timeout. */
import Fastify, { type FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import { afterEach, describe, it } from 'vitest';
import { createMonitor, type Monitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/fastify';
import { createMeterProvider } from '../../../test/support/otel';
import { BIG_EVENT, expectStalledStream, stopReadingAfterHead } from '../../../test/support/stall-client';

let app: FastifyInstance | undefined;
let monitor: Monitor | undefined;
let socket: Socket | undefined;
afterEach(async () => {
  socket?.destroy();
  await app?.close();
  await monitor?.close();
});

describe('Fastify: SSE write stall', () => {
  it('a client that stops reading is cut off: write_stall, cancelled, nothing in flight', async () => {
    const { provider, reader } = createMeterProvider();
    monitor = createMonitor({ meterProvider: provider, detectorIntervalMs: 0, traces: false, eventLoop: false });
    let endReason: string | undefined;
    app = Fastify();
    await app.register(inferSignal, { monitor, queue: { name: 'sse', capacity: 4 } });
    app.get('/v1/stream', async (request, reply) => {
      const signal = request.inferSignal!;
      await signal.run(async () => {
        const sse = signal.sse({ stallTimeoutMs: 200 });
        while (!sse.closed) if (!sse.send(BIG_EVENT) && !(await sse.drained())) break;
        endReason = sse.endReason;
      });
      return reply;
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    socket = stopReadingAfterHead((app.server.address() as AddressInfo).port, '/v1/stream');
    await expectStalledStream(monitor, reader, 'sse', () => endReason);
  }, 30_000);
});
