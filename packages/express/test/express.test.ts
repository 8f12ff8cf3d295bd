import express5 from 'express';
import express4 from 'express4';
import type { Express, NextFunction, Request, Response } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, createMonitor, type Monitor } from '@infersignal/core';
import { inferSignal, inferSignalErrors, readinessRouter } from '@infersignal/express';
import { collect, createMeterProvider, type TestReader } from './otel';
import { gate, pool, readEventsThenAbort, serve, sleep, until, withUnhandledRejections, type Running } from './helpers';

const OUTCOME = ATTR.outcome;

describe.each([
  ['Express 5', express5],
  ['Express 4', express4],
] as const)('%s', (_name, express) => {
  let running: Running | undefined;
  let monitor: Monitor | undefined;

  afterEach(async () => {
    await running?.close();
    await monitor?.close();
    running = undefined;
    monitor = undefined;
  });

  function setup(): { app: Express; monitor: Monitor; reader: TestReader; warnings: string[] } {
    const { provider, reader } = createMeterProvider();
    const warnings: string[] = [];
    monitor = createMonitor({ meterProvider: provider, detectorIntervalMs: 0, traces: false, logger: { warn: (m) => warnings.push(m) } });
    return { app: express(), monitor, reader, warnings };
  }

  async function start(app: Express): Promise<string> {
    running = await serve(app);
    return running.url;
  }

  it('counts 200 requests at concurrency 20 exactly once each, with 200 queue-wait samples', async () => {
    const { app, monitor, reader } = setup();
    app.use('/v1', inferSignal(monitor, { queueOptions: { capacity: 64, concurrency: 4 } }));
    let calls = 0;
    app.get('/v1/infer', (req: Request, res: Response, next: NextFunction) => {
      calls++;
      const signal = req.inferSignal!;
      const mode = req.query.mode;
      // Three ways a handler marks the start: run() through the FIFO, start() by hand, or nothing (the head).
      if (mode === 'run') {
        signal.run(() => sleep(1)).then(() => res.json({ ok: true }), next);
      } else if (mode === 'start') {
        signal.start();
        setTimeout(() => res.json({ ok: true }), 1);
      } else {
        res.json({ ok: true });
      }
    });
    const url = await start(app);
    const modes = ['run', 'start', 'auto'];
    const statuses: number[] = [];
    await pool(200, 20, async (i) => {
      const response = await fetch(`${url}/v1/infer?mode=${modes[i % 3]}`);
      await response.arrayBuffer();
      statuses.push(response.status);
    });
    // The last response's 'finish' may land a moment after the client read it.
    await until(() => monitor.snapshot().queues.http.completed === 200, 2000, '200 completions');

    expect(statuses.filter((s) => s === 200)).toHaveLength(200);
    expect(calls).toBe(200);
    const out = await collect(reader);
    expect(out.sum(METRICS.requests.name)).toBe(200);
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed' })).toBe(200);
    expect(out.count(METRICS.queueWait.name)).toBe(200);
    expect(out.count(METRICS.requestDuration.name)).toBe(200);
    expect(out.count(METRICS.inferenceDuration.name)).toBe(200);
    expect(out.sum(METRICS.queueInFlight.name)).toBe(0);
    expect(out.sum(METRICS.queueWaiting.name)).toBe(0);
  });

  it('counts an SSE client that aborts after 3 events as cancelled, once, with one TTFT sample', async () => {
    const { app, monitor, reader } = setup();
    let endedAtClose: boolean | undefined;
    const handlerDone = gate();
    app.get('/v1/stream', inferSignal(monitor), async (req: Request, res: Response) => {
      // Registered after the middleware's own listener: sees the state right after the close.
      res.on('close', () => (endedAtClose = req.inferSignal!.ended));
      const sse = req.inferSignal!.sse();
      for (let i = 0; i < 2000 && !sse.closed; i++) {
        sse.send({ token: i });
        await sleep(5);
      }
      handlerDone.open();
    });
    const url = await start(app);
    const events = await readEventsThenAbort(`${url}/v1/stream`, 3);
    expect(events).toHaveLength(3);
    expect(events[0]).toBe('data: {"token":0}');
    await handlerDone.wait;

    expect(endedAtClose).toBe(true);
    const out = await collect(reader);
    expect(out.sum(METRICS.streams.name, { [OUTCOME]: 'cancelled' })).toBe(1);
    expect(out.sum(METRICS.streams.name, { [OUTCOME]: 'completed' })).toBe(0);
    expect(out.sum(METRICS.streams.name)).toBe(1);
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'cancelled' })).toBe(1);
    expect(out.sum(METRICS.requests.name)).toBe(1);
    expect(out.count(METRICS.timeToFirstToken.name)).toBe(1);
    expect(out.count(METRICS.queueWait.name)).toBe(1);
    expect(out.sum(METRICS.streamTokens.name)).toBeGreaterThanOrEqual(3);
  });

  it('counts a completed SSE stream: events as tokens, one TTFT and one time-per-token sample', async () => {
    const { app, reader, monitor } = setup();
    app.get('/v1/stream', inferSignal(monitor), async (req: Request) => {
      const sse = req.inferSignal!.sse();
      sse.send('hello', { event: 'meta', tokens: 0 });
      for (let i = 0; i < 5; i++) {
        sse.send(`line ${i}\nsecond`);
        await sleep(2);
      }
      sse.end();
    });
    const url = await start(app);
    const response = await fetch(`${url}/v1/stream`);
    const text = await response.text();
    await until(() => monitor.snapshot().queues.http.completed === 1, 2000, 'completion');

    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(text.startsWith('event: meta\ndata: hello\n\ndata: line 0\ndata: second\n\n')).toBe(true);
    const out = await collect(reader);
    expect(out.sum(METRICS.streams.name, { [OUTCOME]: 'completed' })).toBe(1);
    expect(out.sum(METRICS.streamTokens.name)).toBe(5);
    expect(out.count(METRICS.timeToFirstToken.name)).toBe(1);
    expect(out.count(METRICS.timePerOutputToken.name)).toBe(1);
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed' })).toBe(1);
  });

  it('sheds at CRITICAL: 503 + Retry-After, the handler not called, counted as rejected', async () => {
    const { app, monitor, reader } = setup();
    let arrivals = 0;
    let calls = 0;
    const allArrived = gate();
    app.use((_req: Request, _res: Response, next: NextFunction) => {
      if (++arrivals === 10) allArrived.open();
      next();
    });
    app.use(inferSignal(monitor, { queueOptions: { capacity: 2 }, shed: true }));
    app.get('/v1/slow', async (req: Request, res: Response) => {
      calls++;
      req.inferSignal!.start();
      // Hold the admitted requests until every request reached the server (bounded).
      await Promise.race([allArrived.wait, sleep(5000)]);
      res.json({ ok: true });
    });
    const url = await start(app);
    const responses = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const response = await fetch(`${url}/v1/slow`);
        return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() };
      }),
    );
    await until(() => monitor.snapshot().queues.http.completed === calls, 2000, 'completions');

    const shed = responses.filter((r) => r.status === 503);
    const ok = responses.filter((r) => r.status === 200);
    expect(shed.length).toBeGreaterThan(0);
    expect(ok.length + shed.length).toBe(10);
    // Capacity 2: two admitted (occupancy 1.0 > 0.85 afterwards), the other eight shed.
    expect(ok).toHaveLength(2);
    expect(calls).toBe(ok.length);
    for (const r of shed) {
      expect(r.retryAfter).toMatch(/^[1-9]\d*$/);
      expect(JSON.parse(r.body)).toMatchObject({ error: 'overloaded' });
    }
    const out = await collect(reader);
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'rejected' })).toBe(shed.length);
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed' })).toBe(ok.length);
    expect(out.count(METRICS.queueWait.name)).toBe(ok.length);
  });

  it('counts a throwing handler as error and leaves the app error handling unchanged', async () => {
    const { app, monitor, reader } = setup();
    app.use(inferSignal(monitor));
    app.get('/sync', () => {
      throw new Error('sync boom');
    });
    app.get('/next', (_req: Request, _res: Response, next: NextFunction) => next(new Error('next boom')));
    app.get('/teapot', (_req: Request, _res: Response, next: NextFunction) => next(Object.assign(new Error('teapot'), { status: 418 })));
    app.use((error: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
      res.status(error.status ?? 500).json({ handledByApp: error.message });
    });
    const url = await start(app);
    const unhandled = await withUnhandledRejections(async () => {
      for (const [path, status, message] of [
        ['/sync', 500, 'sync boom'],
        ['/next', 500, 'next boom'],
        ['/teapot', 418, 'teapot'],
      ] as const) {
        const response = await fetch(url + path);
        expect(response.status).toBe(status);
        expect(await response.json()).toEqual({ handledByApp: message });
      }
      await until(() => monitor.snapshot().queues.http.completed === 3, 2000, 'completions');
    });

    expect(unhandled).toEqual([]);
    const out = await collect(reader);
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'error' })).toBe(2);
    // A 4xx is the client's problem, not a failed inference.
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed' })).toBe(1);
    expect(out.sum(METRICS.requests.name)).toBe(3);
  });

  it('counts a failure after the SSE head as error exactly once (error and close both fire)', async () => {
    const { app, monitor, reader } = setup();
    const handlerDone = gate();
    app.get('/v1/stream', inferSignal(monitor), (req: Request, _res: Response, next: NextFunction) => {
      const sse = req.inferSignal!.sse();
      sse.send('first');
      setTimeout(() => {
        next(new Error('model crashed mid-stream'));
        handlerDone.open();
      }, 10);
    });
    app.use(inferSignalErrors());
    const url = await start(app);
    const response = await fetch(`${url}/v1/stream`);
    // Express destroys the socket when the head was already sent: the body read fails.
    await expect(response.text()).rejects.toThrow();
    await handlerDone.wait;
    await until(() => monitor.snapshot().queues.http.completed === 1, 2000, 'completion');
    await sleep(20);

    const out = await collect(reader);
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'error' })).toBe(1);
    expect(out.sum(METRICS.requests.name)).toBe(1);
    expect(out.count(METRICS.requestDuration.name)).toBe(1);
    expect(out.sum(METRICS.streams.name, { [OUTCOME]: 'error' })).toBe(1);
    expect(out.sum(METRICS.streams.name)).toBe(1);
  });

  it('labels by route pattern, never by raw URL: 20 ids, one label', async () => {
    const { app, monitor, reader } = setup();
    app.get('/v1/models/:id', inferSignal(monitor), (req: Request, res: Response) => {
      res.json({ id: req.params.id, route: req.inferSignal!.route });
    });
    const url = await start(app);
    for (let i = 0; i < 20; i++) {
      const response = await fetch(`${url}/v1/models/abc${i}?token=secret${i}`);
      expect(await response.json()).toEqual({ id: `abc${i}`, route: '/v1/models/:id' });
    }
    await until(() => monitor.snapshot().queues.http.completed === 20, 2000, 'completions');

    const out = await collect(reader);
    expect(out.values(METRICS.requests.name, ATTR.model)).toEqual(['/v1/models/:id']);
    expect(out.values(METRICS.queueWait.name, ATTR.model)).toEqual(['/v1/models/:id']);
    expect(out.sum(METRICS.requests.name)).toBe(20);
    expect(out.allAttributeValues().filter((v) => v.includes('abc') || v.includes('secret'))).toEqual([]);
  });

  it('labels by the model function when given, capped by the monitor', async () => {
    const { app, monitor, reader } = setup();
    app.use(express.json());
    app.use(inferSignal(monitor, { model: (req) => req.body?.model }));
    app.post('/v1/infer', (_req: Request, res: Response) => void res.json({}));
    const url = await start(app);
    for (const model of ['llama', 'mistral', 'llama']) {
      await (await fetch(`${url}/v1/infer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }) })).arrayBuffer();
    }
    await until(() => monitor.snapshot().queues.http.completed === 3, 2000, 'completions');
    const out = await collect(reader);
    expect(out.sum(METRICS.requests.name, { [ATTR.model]: 'llama' })).toBe(2);
    expect(out.sum(METRICS.requests.name, { [ATTR.model]: 'mistral' })).toBe(1);
  });

  it('survives a model function that throws: request served, error counted internally', async () => {
    const { app, monitor, reader, warnings } = setup();
    app.use(
      inferSignal(monitor, {
        model: () => {
          throw new Error('bad label function');
        },
      }),
    );
    app.get('/v1/infer', (_req: Request, res: Response) => void res.json({ ok: true }));
    const url = await start(app);
    const response = await fetch(`${url}/v1/infer`);
    expect(response.status).toBe(200);
    await until(() => monitor.snapshot().queues.http.completed === 1, 2000, 'completion');
    const out = await collect(reader);
    expect(out.sum(METRICS.internalErrors.name, { [ATTR.errorSource]: 'express.model' })).toBe(1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/express\.model.*bad label function/s);
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed', [ATTR.model]: 'default' })).toBe(1);
  });

  it('readiness answers 503 while CRITICAL and 200 again after recovery', async () => {
    const { app, monitor } = setup();
    const release = gate();
    app.use(readinessRouter(monitor));
    app.use('/v1', inferSignal(monitor, { queueOptions: { capacity: 2 } }));
    app.get('/v1/slow', async (req: Request, res: Response) => {
      req.inferSignal!.start();
      await release.wait;
      res.json({ ok: true });
    });
    const url = await start(app);

    const before = await fetch(`${url}/healthz/ready`);
    expect(before.status).toBe(200);
    expect(await before.json()).toMatchObject({ level: 'ok', queues: { http: { inFlight: 0, capacity: 2 } } });

    const slow = [fetch(`${url}/v1/slow`), fetch(`${url}/v1/slow`)];
    await until(() => monitor.snapshot().queues.http.inFlight === 2, 5000, 'two in flight');
    const during = await fetch(`${url}/healthz/ready`);
    expect(during.status).toBe(503);
    expect(await during.json()).toMatchObject({ level: 'critical', queues: { http: { inFlight: 2, occupancy: 1 } } });
    const head = await fetch(`${url}/healthz/ready`, { method: 'HEAD' });
    expect(head.status).toBe(503);

    release.open();
    await Promise.all(slow.map(async (p) => (await p).arrayBuffer()));
    await until(() => monitor.snapshot().queues.http.completed === 2, 2000, 'completions');
    const after = await fetch(`${url}/healthz/ready`);
    expect(after.status).toBe(200);
    expect(await after.json()).toMatchObject({ level: 'ok' });
    // The probe is not an inference request.
    expect(monitor.snapshot().queues.http.completed).toBe(2);
  });

  it('tracks a request once when the middleware is mounted twice on its path', async () => {
    const { app, monitor, reader } = setup();
    app.use(inferSignal(monitor));
    app.get('/v1/infer', inferSignal(monitor, { queue: 'inner' }), (_req: Request, res: Response) => void res.json({}));
    const url = await start(app);
    await (await fetch(`${url}/v1/infer`)).arrayBuffer();
    await until(() => monitor.snapshot().queues.http.completed === 1, 2000, 'completion');
    await sleep(10);
    const out = await collect(reader);
    expect(out.sum(METRICS.requests.name)).toBe(1);
    expect(out.sum(METRICS.requests.name, { [ATTR.queue]: 'http' })).toBe(1);
    expect(monitor.snapshot().queues.inner.waiting).toBe(0);
  });

  it('frees the place of a client that leaves while waiting in run()', async () => {
    const { app, monitor, reader } = setup();
    const release = gate();
    let ran = 0;
    app.use(inferSignal(monitor, { queueOptions: { capacity: 8, concurrency: 1 } }));
    app.get('/v1/infer', (req: Request, res: Response) => {
      req
        .inferSignal!.run(async () => {
          ran++;
          await release.wait;
        })
        .then(
          () => res.json({ ok: true }),
          () => res.destroyed || res.status(503).end(),
        );
    });
    const url = await start(app);
    const first = fetch(`${url}/v1/infer`);
    await until(() => monitor.snapshot().queues.http.inFlight === 1, 5000, 'first in flight');
    const controller = new AbortController();
    const second = fetch(`${url}/v1/infer`, { signal: controller.signal }).catch((error: Error) => error);
    await until(() => monitor.snapshot().queues.http.waiting === 1, 5000, 'second waiting');
    controller.abort();
    await until(() => monitor.snapshot().queues.http.waiting === 0, 5000, 'second gone');
    release.open();
    expect((await first).status).toBe(200);
    expect(await second).toBeInstanceOf(Error);
    await until(() => monitor.snapshot().queues.http.completed === 2, 2000, 'completions');

    expect(ran).toBe(1);
    const out = await collect(reader);
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'cancelled' })).toBe(1);
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed' })).toBe(1);
    expect(out.count(METRICS.queueWait.name)).toBe(1);
  });
});

describe('inferSignal options', () => {
  const monitor = createMonitor({ detectorIntervalMs: 0 });

  it('throws at creation naming the bad field', () => {
    expect(() => inferSignal(monitor, { shedd: true } as never)).toThrow(/options\.shedd/);
    expect(() => inferSignal(monitor, { errorStatus: 42 })).toThrow(/options\.errorStatus/);
    expect(() => inferSignal(monitor, { model: 'llama' as never })).toThrow(/options\.model/);
    expect(() => inferSignal({} as never)).toThrow(/monitor/);
    expect(() => readinessRouter(monitor, { path: 'healthz' })).toThrow(/options\.path/);
  });

  it('accepts a shared tracker', () => {
    const tracker = monitor.queue('shared', { capacity: 4 });
    expect(() => inferSignal(monitor, { queue: tracker })).not.toThrow();
    expect(() => inferSignal(monitor, { queue: tracker, queueOptions: { capacity: 2 } })).toThrow(/options\.queueOptions/);
  });
});
