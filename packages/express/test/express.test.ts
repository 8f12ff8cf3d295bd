import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import express5 from 'express';
import express4 from 'express4';
import type { Express, NextFunction, Request, Response } from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, createMonitor, type Monitor } from '@infersignal/core';
import { UNKNOWN_MODEL } from '../../core/src/names';
import { inferSignal, inferSignalErrors, readinessRouter, type InferSignalRequest } from '@infersignal/express';
import { collect, createMeterProvider, type TestReader } from '../../../test/support/otel';
import { gate, sleep, until } from '../../../test/support/async';
import { readEventsThenAbort, serve, type Running } from '../../../test/support/http';
// The client side and the assertions both adapters share; the servers are built here.
import * as cases from '../../../test/support/adapter-cases';
import { OPT_IN_NAMES } from '../../core/src/opt-in';

const OUTCOME = ATTR.outcome;

setFlagsFromString('--expose-gc');
const fullGc = runInNewContext('gc') as () => void;

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
    monitor = createMonitor({
      // The shared cases read every request histogram, the opt-in ones too.
      optInMetrics: OPT_IN_NAMES,
      meterProvider: provider,
      detectorIntervalMs: 0,
      traces: false,
      logger: { warn: (m) => warnings.push(m) },
    });
    return { app: express(), monitor, reader, warnings };
  }

  async function start(app: Express): Promise<string> {
    running = await serve(app);
    return running.url;
  }

  it('counts 200 requests at concurrency 20 exactly once each, with 200 queue-wait samples', async () => {
    const { app, monitor, reader } = setup();
    app.use('/v1', inferSignal(monitor, { queue: { capacity: 64, concurrency: 4 } }));
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
    await cases.twoHundredRequests({ url: await start(app), monitor, reader }, () => calls);
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
    await cases.expectOneCancelledStream(reader);
  });

  it('lets go of a cut-off response once counted: a late signal is aborted, a late sse() writes nothing', async () => {
    const { app, monitor } = setup();
    let late: InferSignalRequest | undefined;
    let readLate: InferSignalRequest | undefined;
    let response: WeakRef<Response> | undefined;
    const handlerDone = gate();
    app.get('/v1/stream', inferSignal(monitor), async (req: Request, res: Response) => {
      late = req.inferSignal;
      response = new WeakRef(res);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 0\n\n');
      await until(() => late!.ended, 5000, 'the abort to be counted');
      // Read again once counted: still the same request, which late readers find ended.
      readLate = req.inferSignal;
      handlerDone.open();
    });
    const url = await start(app);
    await readEventsThenAbort(`${url}/v1/stream`, 1);
    await handlerDone.wait;

    expect(readLate).toBe(late);
    expect(late!.signal.aborted).toBe(true);
    const sse = late!.sse();
    expect(sse.closed).toBe(true);
    expect(sse.send('after the end')).toBe(false);
    // The lifecycle outlives its request here (the test holds it), the response does not:
    // a counted lifecycle must not reach its response (the WeakMap entry's key).
    await running!.close();
    running = undefined;
    for (let i = 0; i < 5 && response!.deref() !== undefined; i++) {
      await sleep(10);
      fullGc();
    }
    expect(response!.deref()).toBeUndefined();
    expect(late!.ended).toBe(true);
  });

  it('a finished response, once counted: a reference taken before reads it ended; req.inferSignal reads undefined', async () => {
    const { app, monitor } = setup();
    let held: InferSignalRequest | undefined;
    let readAfter: InferSignalRequest | null = null;
    const handlerDone = gate();
    app.get('/v1/infer', inferSignal(monitor), async (req: Request, res: Response) => {
      held = req.inferSignal;
      res.json({ ok: true });
      // The response finished: its request is counted on `close`, and its WeakMap entry goes with it.
      await until(() => held!.ended, 5000, 'the response to be counted');
      readAfter = req.inferSignal ?? null;
      handlerDone.open();
    });
    const url = await start(app);
    expect((await fetch(`${url}/v1/infer`)).status).toBe(200);
    await handlerDone.wait;
    expect(held!.ended).toBe(true);
    expect(held!.route).toBe('/v1/infer');
    expect(readAfter).toBeNull();
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
    const { text } = await cases.oneCompletedStream({ url: await start(app), monitor, reader });
    expect(text.startsWith('event: meta\ndata: hello\n\ndata: line 0\ndata: second\n\n')).toBe(true);
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
    app.use(inferSignal(monitor, { queue: { capacity: 2 }, shed: true }));
    app.get('/v1/slow', async (req: Request, res: Response) => {
      calls++;
      req.inferSignal!.start();
      // Hold the admitted requests until every request reached the server (bounded).
      await Promise.race([allArrived.wait, sleep(5000)]);
      res.json({ ok: true });
    });
    await cases.tenSlowRequestsShed({ url: await start(app), monitor, reader }, () => calls);
  });

  it('counts a throwing handler as error and leaves the app error handling unchanged', async () => {
    const { app, monitor, reader } = setup();
    app.use(inferSignal(monitor));
    app.get('/sync', () => {
      throw new Error('sync boom');
    });
    app.get('/next', (_req: Request, _res: Response, next: NextFunction) => next(new Error('next boom')));
    app.get('/teapot', (_req: Request, _res: Response, next: NextFunction) =>
      next(Object.assign(new Error('teapot'), { status: 418 })),
    );
    app.use((error: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
      res.status(error.status ?? 500).json({ handledByApp: error.message });
    });
    await cases.failingHandlers({ url: await start(app), monitor, reader }, [
      ['/sync', 500, 'sync boom'],
      ['/next', 500, 'next boom'],
      ['/teapot', 418, 'teapot'],
    ]);
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
    // Express destroys the socket when the head was already sent: the body read fails.
    await cases.streamFailingAfterHead({ url: await start(app), monitor, reader }, handlerDone.wait);
  });

  it('labels by route pattern, never by raw URL: 20 ids, one label', async () => {
    const { app, monitor, reader } = setup();
    app.get('/v1/models/:id', inferSignal(monitor), (req: Request, res: Response) => {
      res.json({ id: req.params.id, route: req.inferSignal!.route });
    });
    await cases.twentyIdsOneLabel({ url: await start(app), monitor, reader });
  });

  it('labels by the model function when given, capped by the monitor', async () => {
    const { app, monitor, reader } = setup();
    app.use(express.json());
    app.use(inferSignal(monitor, { model: (req) => req.body?.model }));
    app.post('/v1/infer', (_req: Request, res: Response) => void res.json({}));
    const url = await start(app);
    for (const model of ['llama', 'mistral', 'llama']) {
      await (
        await fetch(`${url}/v1/infer`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model }),
        })
      ).arrayBuffer();
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
    expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed', [ATTR.model]: UNKNOWN_MODEL })).toBe(1);
  });

  it('readiness answers 503 while CRITICAL and 200 again after recovery', async () => {
    const { app, monitor } = setup();
    const release = gate();
    app.use(readinessRouter(monitor));
    app.use('/v1', inferSignal(monitor, { queue: { capacity: 2 } }));
    app.get('/v1/slow', async (req: Request, res: Response) => {
      req.inferSignal!.start();
      await release.wait;
      res.json({ ok: true });
    });
    await cases.readinessFlips({ url: await start(app), monitor }, release.open, { head: true });
  });

  it('tracks a request once when the middleware is mounted twice on its path', async () => {
    const { app, monitor, reader } = setup();
    app.use(inferSignal(monitor));
    app.get('/v1/infer', inferSignal(monitor, { queue: 'inner' }), (_req: Request, res: Response) => void res.json({}));
    await cases.trackedOnce({ url: await start(app), monitor, reader }, 'http');
  });

  // Auto-start hooks writeHead once on app.response (no property on each response): responses of
  // untracked routes pass through it untouched, and a writeHead patched in later over app.response
  // (one that does not call ours) makes each tracked request fall back to a wrapper of its own.
  it('starts at the response head through app.response: untracked routes untouched, a later patch still starts', async () => {
    const { app, monitor, reader } = setup();
    app.get('/plain', (_req: Request, res: Response) => void res.set('x-plain', '1').json({ plain: true }));
    app.get('/v1/infer', inferSignal(monitor), (req: Request, res: Response) => {
      expect(req.inferSignal?.ended).toBe(false);
      setTimeout(() => res.json({ ok: true }), 25);
    });
    const url = await start(app);
    const get = async (path: string) => {
      const response = await fetch(`${url}${path}`);
      return { header: response.headers, body: (await response.json()) as unknown };
    };

    const plain = await get('/plain');
    expect(plain.header.get('x-plain')).toBe('1');
    expect(plain.body).toEqual({ plain: true });
    expect((await get('/v1/infer')).body).toEqual({ ok: true });

    const nodeWriteHead = Object.getPrototypeOf(express.response).writeHead as (...args: unknown[]) => unknown;
    (app.response as unknown as { writeHead: unknown }).writeHead = function patched(
      this: Response,
      ...args: unknown[]
    ) {
      this.setHeader('x-patched', '1');
      return nodeWriteHead.apply(this, args);
    };
    const patched = await get('/v1/infer');
    expect(patched.header.get('x-patched')).toBe('1');
    expect((await get('/plain')).header.get('x-plain')).toBe('1');

    await until(() => monitor.snapshot().queues.http.completed === 2, 2000, '2 completions');
    const out = await collect(reader);
    // Both tracked requests started at their head, 25 ms after arrival; the untracked ones are not counted.
    expect(out.count(METRICS.queueWait.name)).toBe(2);
    expect(out.histograms(METRICS.queueWait.name).reduce((total, h) => total + (h.sum ?? 0), 0)).toBeGreaterThanOrEqual(
      0.045,
    );
    expect(out.count(METRICS.inferenceDuration.name)).toBe(2);
    expect(out.sum(METRICS.requests.name)).toBe(2);
  });

  it('frees the place of a client that leaves while waiting in run()', async () => {
    const { app, monitor, reader } = setup();
    const release = gate();
    let ran = 0;
    app.use(inferSignal(monitor, { queue: { capacity: 8, concurrency: 1 } }));
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
    await cases.leaverWhileWaiting({ url: await start(app), monitor, reader }, release.open, () => ran);
  });

  it('counts two pipelined requests whose client left before either was answered: both cancelled', async () => {
    const { app, monitor, reader } = setup();
    app.use(inferSignal(monitor));
    let arrived = 0;
    // Never answers: the client leaves first.
    app.get('/v1/hold', () => arrived++);
    await cases.pipelinedLeaver({ url: await start(app), monitor, reader }, () => arrived);
  });
});

describe('inferSignal options', () => {
  const monitor = createMonitor({ detectorIntervalMs: 0 });

  it('throws at creation naming the bad field', () => {
    expect(() => inferSignal(monitor, { shedd: true } as never)).toThrow(/options\.shedd/);
    expect(() => inferSignal(monitor, { errorStatus: 42 })).toThrow(/options\.errorStatus/);
    expect(() => inferSignal(monitor, { model: 5 as never })).toThrow(/options\.model/);
    expect(() => inferSignal(monitor, { route: 'llama' as never })).toThrow(/options\.route/);
    expect(() => inferSignal(monitor, { queue: { name: 'q', capacity: 0 } })).toThrow(/options\.queue\.capacity/);
    expect(() => inferSignal(monitor, { queue: { name: 'q', size: 2 } as never })).toThrow(/options\.queue\.size/);
    expect(() => inferSignal({} as never)).toThrow(/monitor/);
    expect(() => readinessRouter(monitor, { path: 'healthz' })).toThrow(/options\.path/);
  });

  it('accepts a shared tracker', () => {
    const tracker = monitor.queue('shared', { capacity: 4 });
    expect(() => inferSignal(monitor, { queue: tracker })).not.toThrow();
    // The options of before (`queueOptions` beside `queue`) are an unknown key now: refused, named.
    expect(() => inferSignal(monitor, { queue: tracker, queueOptions: { capacity: 2 } } as never)).toThrow(
      /options\.queueOptions/,
    );
    // A spec for a queue that exists with other settings is refused; with the same settings it is that queue.
    expect(() => inferSignal(monitor, { queue: { name: 'shared', capacity: 2 } })).toThrow(/options\.queue\.capacity/);
    expect(() => inferSignal(monitor, { queue: { name: 'shared', capacity: 4 } })).not.toThrow();
  });
});
