/** A client that stops reading an SSE stream served through the Express middleware: cut off after the stall timeout. */
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Request, Response } from 'express';
import { afterEach, describe, it } from 'vitest';
import { createMonitor, type Monitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/express';
import { createMeterProvider } from '../../../test/support/otel';
import { serve, type Running } from '../../../test/support/http';
import { BIG_EVENT, expectStalledStream, stopReadingAfterHead } from '../../../test/support/stall-client';

let running: Running | undefined;
let monitor: Monitor | undefined;
let socket: Socket | undefined;
afterEach(async () => {
  socket?.destroy();
  await running?.close();
  await monitor?.close();
});

describe('Express: SSE write stall', () => {
  it('a client that stops reading is cut off: write_stall, cancelled, nothing in flight', async () => {
    const { provider, reader } = createMeterProvider();
    monitor = createMonitor({ meterProvider: provider, detectorIntervalMs: 0, traces: false, eventLoop: false });
    let endReason: string | undefined;
    const app = express();
    app.use(inferSignal(monitor, { queue: { name: 'sse', capacity: 4 } }));
    app.get('/v1/stream', async (req: Request, _res: Response) => {
      const signal = req.inferSignal!;
      await signal.run(async () => {
        const sse = signal.sse({ stallTimeoutMs: 200 });
        while (!sse.closed) if (!sse.send(BIG_EVENT) && !(await sse.drained())) break;
        endReason = sse.endReason;
      });
    });
    running = await serve(app);
    socket = stopReadingAfterHead((running.server.address() as AddressInfo).port, '/v1/stream');
    await expectStalledStream(monitor, reader, 'sse', () => endReason);
  }, 30_000);
});
