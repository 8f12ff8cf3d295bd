import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, createMonitor, type Monitor } from '@infersignal/core';
import { UNKNOWN_MODEL } from '../../core/src/names';
import { inferSignal } from '@infersignal/fastify';
import { collect, createMeterProvider, type TestReader } from '../../../test/support/otel';
import { gate, sleep, until } from '../../../test/support/async';
import { readEventsThenAbort } from '../../../test/support/http';
// The client side and the assertions both adapters share; the servers are built here.
import * as cases from '../../../test/support/adapter-cases';
import { OPT_IN_NAMES } from '../../core/src/opt-in';

let app: FastifyInstance | undefined;
let monitor: Monitor | undefined;

afterEach(async () => {
  await app?.close();
  await monitor?.close();
  app = undefined;
  monitor = undefined;
});

function setup(): { app: FastifyInstance; monitor: Monitor; reader: TestReader; warnings: string[] } {
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
  // forceCloseConnections: an aborted or hanging stream must not hold app.close().
  app = Fastify({ forceCloseConnections: true });
  return { app, monitor, reader, warnings };
}

async function start(instance: FastifyInstance): Promise<string> {
  return instance.listen({ port: 0, host: '127.0.0.1' });
}

describe('Fastify plugin', () => {
  it('counts 200 requests at concurrency 20 exactly once each, with 200 queue-wait samples', async () => {
    const { app, monitor, reader } = setup();
    await app.register(inferSignal, { monitor, queue: { capacity: 64, concurrency: 4 } });
    let calls = 0;
    app.get('/v1/infer', async (request) => {
      calls++;
      const signal = request.inferSignal!;
      const mode = (request.query as { mode?: string }).mode;
      // Three ways a handler marks the start: run() through the FIFO, start() by hand, or nothing (the head).
      if (mode === 'run') await signal.run(() => sleep(1));
      else if (mode === 'start') {
        signal.start();
        await sleep(1);
      }
      return { ok: true };
    });
    await cases.twoHundredRequests({ url: await start(app), monitor, reader }, () => calls);
  });

  // GET and POST with a parsed body: the second is the case Fastify's
  // onRequestAbort would miss (Node does not mark a fully read request
  // aborted); core's raw `close` listener counts both.
  it.each(['GET', 'POST'] as const)(
    'counts an SSE client (%s) that aborts after 3 events as cancelled, once, with one TTFT sample',
    async (method) => {
      const { app, reader } = setup();
      await app.register(inferSignal, { monitor: monitor! });
      let endedAtClose: boolean | undefined;
      const handlerDone = gate();
      app.route({
        method,
        url: '/v1/stream',
        handler: async (request) => {
          const sse = request.inferSignal!.sse();
          // Registered after the plugin's own listener: sees the state right after the close.
          request.raw.socket.once('close', () => (endedAtClose = request.inferSignal!.ended));
          for (let i = 0; i < 2000 && !sse.closed; i++) {
            sse.send({ token: i });
            await sleep(5);
          }
          handlerDone.open();
        },
      });
      const url = await start(app);
      const events = await readEventsThenAbort(
        `${url}/v1/stream`,
        3,
        method === 'POST' ? { method, headers: { 'content-type': 'application/json' }, body: '{"prompt":"hi"}' } : {},
      );
      expect(events).toHaveLength(3);
      expect(events[2]).toBe('data: {"token":2}');
      await handlerDone.wait;

      expect(endedAtClose).toBe(true);
      await cases.expectOneCancelledStream(reader);
    },
  );

  it('counts a completed SSE stream: events as tokens, one TTFT and one time-per-token sample', async () => {
    const { app, monitor, reader } = setup();
    await app.register(inferSignal, { monitor });
    app.get('/v1/stream', async (request) => {
      const sse = request.inferSignal!.sse({ headers: { 'x-model': 'tiny' } });
      sse.comment('keep-alive');
      for (let i = 0; i < 5; i++) {
        sse.send({ i }, { event: 'token', id: String(i) });
        await sleep(2);
      }
      sse.end();
    });
    const { response, text } = await cases.oneCompletedStream({ url: await start(app), monitor, reader });
    expect(response.headers.get('x-model')).toBe('tiny');
    expect(text.startsWith(': keep-alive\n\nevent: token\nid: 0\ndata: {"i":0}\n\n')).toBe(true);
  });

  it('sheds at CRITICAL: 503 + Retry-After, the handler not called, counted as rejected', async () => {
    const { app, monitor, reader } = setup();
    let arrivals = 0;
    let calls = 0;
    const allArrived = gate();
    // Added before the plugin's hook, so it runs first and sees every request.
    app.addHook('onRequest', (_request, _reply, done) => {
      if (++arrivals === 10) allArrived.open();
      done();
    });
    await app.register(inferSignal, { monitor, queue: { capacity: 2 }, shed: true });
    app.get('/v1/slow', async (request) => {
      calls++;
      request.inferSignal!.start();
      // Hold the admitted requests until every request reached the server (bounded).
      await Promise.race([allArrived.wait, sleep(5000)]);
      return { ok: true };
    });
    await cases.tenSlowRequestsShed({ url: await start(app), monitor, reader }, () => calls);
  });

  it('counts a throwing handler as error and leaves the app error handling unchanged', async () => {
    const { app, monitor, reader } = setup();
    await app.register(inferSignal, { monitor });
    app.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) => {
      reply.code(error.statusCode ?? 500).send({ handledByApp: error.message });
    });
    app.get('/sync', () => {
      throw new Error('sync boom');
    });
    app.get('/async', async () => {
      await sleep(1);
      throw new Error('async boom');
    });
    app.get('/teapot', async () => {
      throw Object.assign(new Error('teapot'), { statusCode: 418 });
    });
    await cases.failingHandlers({ url: await start(app), monitor, reader }, [
      ['/sync', 500, 'sync boom'],
      ['/async', 500, 'async boom'],
      ['/teapot', 418, 'teapot'],
    ]);
  });

  it('counts a stream the handler fails after the head as error exactly once', async () => {
    const { app, monitor, reader } = setup();
    await app.register(inferSignal, { monitor });
    app.get('/v1/stream', async (request) => {
      const signal = request.inferSignal!;
      const sse = signal.sse();
      try {
        sse.send('first');
        await sleep(5);
        throw new Error('model crashed mid-stream');
      } catch {
        // After hijack Fastify no longer answers for the request: the handler reports and closes.
        signal.fail();
        request.raw.socket.destroy();
      }
    });
    await cases.streamFailingAfterHead({ url: await start(app), monitor, reader });
  });

  it('labels by route pattern (routeOptions.url), never by raw URL: 20 ids, one label', async () => {
    const { app, monitor, reader } = setup();
    await app.register(inferSignal, { monitor });
    app.get('/v1/models/:id', async (request) => ({
      id: (request.params as { id: string }).id,
      route: request.inferSignal!.route,
    }));
    await cases.twentyIdsOneLabel({ url: await start(app), monitor, reader });
  });

  it('counts requests made with fastify.inject() (light-my-request) by their outcome, an SSE stream included', async () => {
    const { app, monitor, reader } = setup();
    await app.register(inferSignal, { monitor });
    app.get('/v1/infer', async () => ({ ok: true }));
    app.get('/v1/fail', async (_request, reply) => reply.code(500).send({ failed: true }));
    app.get('/v1/sse', async (request) => {
      const sse = request.inferSignal!.sse();
      for (let i = 0; i < 3; i++) sse.send({ token: i });
      sse.end();
    });
    expect((await app.inject({ url: '/v1/infer' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/fail' })).statusCode).toBe(500);
    expect((await app.inject({ url: '/v1/sse' })).body.split('\n\n').filter(Boolean)).toHaveLength(3);
    await until(() => monitor.snapshot().queues.http.completed === 3, 2000, 'three requests counted');

    // Its stand-in socket never drains, so Node never reads these responses finished: ended with the socket open
    // is what says they were not cut off.
    const out = await collect(reader);
    expect(out.by(METRICS.requests.name, ATTR.outcome)).toEqual({ completed: 2, error: 1 });
    expect(out.sum(METRICS.streams.name, { [ATTR.outcome]: 'completed' })).toBe(1);
    expect(out.sum(METRICS.streamTokens.name)).toBe(3);
  });

  it('reads the route through the public routeOptions getter once a request, with the same labels, opt-out and 404s', async () => {
    const { app, monitor, reader } = setup();
    // The getter builds an object at every call: count the plugin's reads of it (an own accessor over the
    // prototype's, which Fastify makes non-configurable, set before the plugin's hook runs).
    let reads = 0;
    app.addHook('onRequest', (request, _reply, done) => {
      let owner: object | null = Object.getPrototypeOf(request);
      while (owner !== null && !Object.hasOwn(owner, 'routeOptions')) owner = Object.getPrototypeOf(owner);
      const getter = Object.getOwnPropertyDescriptor(owner!, 'routeOptions')!.get!;
      Object.defineProperty(request, 'routeOptions', {
        get() {
          reads++;
          return getter.call(this);
        },
      });
      done();
    });
    await app.register(inferSignal, { monitor });
    const tracked: boolean[] = [];
    app.get('/v1/models/:id', async (request) => ({ route: request.inferSignal!.route }));
    app.get('/v1/off', { config: { inferSignal: false } }, async (request) => {
      tracked.push(request.inferSignal != null);
      return {};
    });
    const url = await start(app);
    for (let i = 0; i < 10; i++)
      expect(await (await fetch(`${url}/v1/models/m${i}`)).json()).toEqual({ route: '/v1/models/:id' });
    for (let i = 0; i < 3; i++) await (await fetch(`${url}/v1/off`)).arrayBuffer();
    expect((await fetch(`${url}/missing`)).status).toBe(404);
    await until(() => monitor.snapshot().queues.http.completed === 10, 2000, 'completions');
    // One read a request, 404s included: no private route context, no second read.
    expect(reads).toBe(14);
    expect(tracked).toEqual([false, false, false]);
    expect((await collect(reader)).sum(METRICS.requests.name)).toBe(10);
  });

  it('labels by the model function (route params are parsed in onRequest); with modelFromRoute a throwing one falls back to the route', async () => {
    const { app, monitor, reader, warnings } = setup();
    await app.register(inferSignal, {
      monitor,
      modelFromRoute: true,
      model: (request) => {
        const model = (request.params as { model?: string }).model;
        if (model === 'broken') throw new Error('bad label function');
        return model;
      },
    });
    app.post('/v1/models/:model/infer', async () => ({ ok: true }));
    const url = await start(app);
    for (const model of ['llama', 'mistral', 'llama', 'broken']) {
      const response = await fetch(`${url}/v1/models/${model}/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(response.status).toBe(200);
    }
    await until(() => monitor.snapshot().queues.http.completed === 4, 2000, 'completions');
    const out = await collect(reader);
    expect(out.sum(METRICS.requests.name, { [ATTR.model]: 'llama' })).toBe(2);
    expect(out.sum(METRICS.requests.name, { [ATTR.model]: 'mistral' })).toBe(1);
    expect(out.sum(METRICS.requests.name, { [ATTR.model]: '/v1/models/:model/infer' })).toBe(1);
    expect(out.sum(METRICS.internalErrors.name, { [ATTR.errorSource]: 'fastify.model' })).toBe(1);
    expect(warnings).toHaveLength(1);
  });

  it('readiness answers 503 while CRITICAL and 200 again after recovery', async () => {
    const { app, monitor } = setup();
    const release = gate();
    await app.register(inferSignal, { monitor, queue: { capacity: 2 }, readiness: true });
    app.get('/v1/slow', async (request) => {
      request.inferSignal!.start();
      await release.wait;
      return { ok: true };
    });
    await cases.readinessFlips({ url: await start(app), monitor }, release.open, { head: false });
  });

  it('respects encapsulation: only routes in the registering scope are tracked, each scope its own queue', async () => {
    const { app, monitor, reader } = setup();
    const seen: Record<string, boolean> = {};
    await app.register(
      async (scope) => {
        await scope.register(inferSignal, { monitor, queue: 'chat' });
        scope.get('/infer', async (request) => {
          seen.chat = request.inferSignal != null;
          return { ok: true };
        });
        scope.get('/untracked', { config: { inferSignal: false } }, async (request) => {
          seen.optOut = request.inferSignal != null;
          return { ok: true };
        });
      },
      { prefix: '/chat' },
    );
    await app.register(
      async (scope) => {
        await scope.register(inferSignal, { monitor, queue: 'embed', modelFromRoute: true });
        scope.get('/infer', async (request) => {
          seen.embed = request.inferSignal != null;
          return { ok: true };
        });
      },
      { prefix: '/embed' },
    );
    app.get('/other', async (request) => {
      seen.other = request.inferSignal != null;
      return { ok: true };
    });
    const url = await start(app);
    for (const path of ['/chat/infer', '/chat/untracked', '/embed/infer', '/embed/infer', '/other', '/missing'])
      await (await fetch(url + path)).arrayBuffer();
    await until(
      () => monitor.snapshot().queues.embed?.completed === 2 && monitor.snapshot().queues.chat?.completed === 1,
      2000,
      'completions',
    );

    expect(seen).toEqual({ chat: true, optOut: false, embed: true, other: false });
    const out = await collect(reader);
    expect(out.sum(METRICS.requests.name, { [ATTR.queue]: 'chat' })).toBe(1);
    expect(out.sum(METRICS.requests.name, { [ATTR.queue]: 'embed' })).toBe(2);
    expect(out.sum(METRICS.requests.name)).toBe(3);
    // The route is the model only where a scope chose so.
    expect(out.values(METRICS.requests.name, ATTR.model)).toEqual(['/embed/infer', UNKNOWN_MODEL]);
  });

  it('tracks a request once when the plugin is registered in an enclosing scope too', async () => {
    const { app, monitor, reader } = setup();
    await app.register(inferSignal, { monitor, queue: 'outer' });
    await app.register(async (scope) => {
      await scope.register(inferSignal, { monitor, queue: 'inner' });
      scope.get('/v1/infer', async () => ({ ok: true }));
    });
    await cases.trackedOnce({ url: await start(app), monitor, reader }, 'outer');
  });

  it('frees the place of a client that leaves while waiting in run()', async () => {
    const { app, monitor, reader } = setup();
    const release = gate();
    let ran = 0;
    await app.register(inferSignal, { monitor, queue: { capacity: 8, concurrency: 1 } });
    app.get('/v1/infer', async (request, reply) => {
      try {
        await request.inferSignal!.run(async () => {
          ran++;
          await release.wait;
        });
        return { ok: true };
      } catch {
        return reply.code(503).send();
      }
    });
    await cases.leaverWhileWaiting({ url: await start(app), monitor, reader }, release.open, () => ran);
  });

  it('counts two pipelined requests whose client left before either was answered: both cancelled', async () => {
    const { app, monitor, reader } = setup();
    await app.register(inferSignal, { monitor });
    let arrived = 0;
    // Never answers: the client leaves first.
    app.get('/v1/hold', () => {
      arrived++;
      return new Promise(() => {});
    });
    await cases.pipelinedLeaver({ url: await start(app), monitor, reader }, () => arrived);
  });
});

describe('Fastify plugin options', () => {
  it('rejects bad options at registration, naming the field', async () => {
    const monitor = createMonitor({ detectorIntervalMs: 0 });
    for (const [options, field] of [
      [{ monitor, shedd: true }, /options\.shedd/],
      [{ monitor, errorStatus: 42 }, /options\.errorStatus/],
      [{ monitor, model: 5 }, /options\.model/],
      [{ monitor, queue: { name: 'q', concurrency: 0 } }, /options\.queue\.concurrency/],
      [{ monitor, queueOptions: { capacity: 2 } }, /options\.queueOptions/],
      [{ monitor, readiness: { path: 'ready' } }, /options\.readiness\.path/],
      [{}, /options\.monitor/],
    ] as const) {
      const instance = Fastify();
      await expect(instance.register(inferSignal, options as never).ready()).rejects.toThrow(field);
      await instance.close();
    }
  });
});
