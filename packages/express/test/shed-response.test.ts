/** `shedResponse` through the Express middleware: the answer a shed request gets, on a real server. */
import express from 'express';
import type { Request, Response } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { InferSignalConfigError, createMonitor, type Monitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/express';
import { createMeterProvider } from '../../../test/support/otel';
import { gate } from '../../../test/support/async';
import { serve, type Running } from '../../../test/support/http';
import { SHED_CASES, shedOne } from '../../../test/support/shed-cases';

let running: Running | undefined;
let monitor: Monitor | undefined;
afterEach(async () => {
  await running?.close();
  await monitor?.close();
});

describe('Express: the shed answer', () => {
  it.each(SHED_CASES)('$name', async ({ shedResponse, check }) => {
    const { provider, reader } = createMeterProvider();
    monitor = createMonitor({ meterProvider: provider, detectorIntervalMs: 0, traces: false, eventLoop: false });
    const hold = gate();
    let calls = 0;
    const app = express();
    app.use(inferSignal(monitor, { queue: { capacity: 1 }, shed: true, model: 'tiny', shedResponse }));
    app.get('/v1/slow', async (req: Request, res: Response) => {
      calls++;
      await req.inferSignal!.run(() => hold.wait);
      res.json({ ok: true });
    });
    running = await serve(app);
    const answer = await shedOne({ url: running.url, monitor, reader, calls: () => calls, release: hold.open });
    check(answer, monitor);
  });

  it('refuses a bad shedResponse at creation, naming the field', () => {
    monitor = createMonitor({ detectorIntervalMs: 0, traces: false, eventLoop: false });
    const field = (shedResponse: unknown) => {
      try {
        inferSignal(monitor!, { shedResponse } as never);
      } catch (error) {
        expect(error).toBeInstanceOf(InferSignalConfigError);
        return (error as InferSignalConfigError).field;
      }
      return undefined;
    };
    expect(field({ status: 200 })).toBe('options.shedResponse.status');
    expect(field({ headers: { 'bad name': 'x' } })).toBe('options.shedResponse.headers.bad name');
    expect(field({ code: 503 })).toBe('options.shedResponse.code');
    expect(field('503')).toBe('options.shedResponse');
  });
});
