/**
 * Cases 5 and 6: clients that go away at random points, and responses on
 * which both `error` and `close` fire. Raw TCP clients (node:net) so the
 * abort point is exact: before the body, mid-body, mid-SSE-stream, right
 * after the last event. Every request is counted exactly once.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, type Monitor } from '@infersignal/core';
import { inferSignal as expressSignal, inferSignalErrors } from '@infersignal/express';
import { inferSignal as fastifySignal } from '@infersignal/fastify';
import { figure, monitorWithReader, pool, rng, until, type Exported } from './helpers';
import {
  express,
  listenExpress,
  listenFastify,
  newExpress,
  newFastify,
  tick,
  type Listening,
  type NextFunction,
  type Request,
  type Response,
} from './servers';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const EVENTS = 10;
type Kind = 'before-body' | 'mid-body' | 'mid-sse' | 'after-last-event';
const KINDS: Kind[] = ['before-body', 'mid-body', 'mid-sse', 'after-last-event'];

/** Resolvers for "the server has seen request <id>" (fired by a hook after the InferSignal one). */
class Arrivals {
  private readonly waiting = new Map<string, () => void>();
  private readonly seen = new Set<string>();
  arrived(id: string | undefined): void {
    if (id === undefined) return;
    this.seen.add(id);
    this.waiting.get(id)?.();
  }
  wait(id: string): Promise<void> {
    if (this.seen.has(id)) return Promise.resolve();
    return new Promise((resolve) => this.waiting.set(id, resolve));
  }
}

/**
 * Sends the events 1 ms apart, then ends the stream. A client that will go
 * away after `cutAfter` events says so in its request: the stream then stays
 * open after that many until the client is gone, so it leaves mid-stream
 * however slowly it reads.
 */
async function sseEvents(
  send: (i: number) => void,
  end: () => void,
  closed: () => boolean,
  cutAfter: number | undefined,
): Promise<void> {
  for (let i = 0; i < (cutAfter ?? EVENTS) && !closed(); i++) {
    send(i);
    await new Promise((r) => setTimeout(r, 1));
  }
  if (cutAfter === undefined) return end();
  const deadline = Date.now() + 10_000;
  while (!closed() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
}

const cutAfter = (header: string | string[] | undefined): number | undefined =>
  typeof header === 'string' ? Number(header) : undefined;

function open(url: string): Promise<Socket> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });
}

function kill(socket: Socket, random: () => number): void {
  socket.removeAllListeners('error');
  socket.on('error', () => {});
  // Half the clients close (FIN), half reset (RST): both are what real clients do.
  if (random() < 0.5) socket.destroy();
  else socket.resetAndDestroy();
}

/** One client that aborts at `kind`; resolves once it has gone away. */
async function abortingClient(
  url: string,
  kind: Kind,
  id: string,
  arrivals: Arrivals,
  random: () => number,
): Promise<void> {
  const socket = await open(url);
  if (kind === 'before-body' || kind === 'mid-body') {
    const body = 'x'.repeat(1000);
    socket.write(
      `POST /upload HTTP/1.1\r\nhost: 127.0.0.1\r\nx-id: ${id}\r\ncontent-type: application/octet-stream\r\ncontent-length: ${body.length}\r\n\r\n`,
    );
    if (kind === 'mid-body') socket.write(body.slice(0, 1 + Math.floor(random() * (body.length - 2))));
    await arrivals.wait(id);
    return kill(socket, random);
  }
  // SSE: read k events, then go away (k = EVENTS: right after the last event).
  const k = kind === 'mid-sse' ? 1 + Math.floor(random() * (EVENTS - 1)) : EVENTS;
  const cut = kind === 'mid-sse' ? `x-cut-after: ${k}\r\n` : '';
  socket.write(`GET /sse HTTP/1.1\r\nhost: 127.0.0.1\r\nx-id: ${id}\r\n${cut}\r\n`);
  await new Promise<void>((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if ((text.match(/data: ev/g)?.length ?? 0) >= k) resolve();
    });
    socket.on('close', () => resolve());
  });
  kill(socket, random);
}

interface Built {
  monitor: Monitor;
  server: Listening;
  arrivals: Arrivals;
  collect(): Promise<Exported>;
}

async function expressServer(): Promise<Built> {
  const t = monitorWithReader();
  cleanup.push(() => t.close());
  const arrivals = new Arrivals();
  const app = newExpress();
  app.use(expressSignal(t.monitor, { queue: { name: 'q', capacity: 2000 } }));
  app.use((req, _res, next) => {
    arrivals.arrived(req.get('x-id'));
    next();
  });
  app.post('/upload', express.raw({ type: '*/*' }), (_req, res) => void res.json({ ok: true }));
  app.get('/sse', (req, res) => {
    const signal = req.inferSignal!;
    const sse = signal.sse();
    signal.start();
    void sseEvents(
      (i) => sse.send(`ev${i}`),
      () => sse.end(),
      () => sse.closed,
      cutAfter(req.get('x-cut-after')),
    );
    void res;
  });
  app.use(inferSignalErrors());
  // The body parser's "request aborted" error lands here; the socket is gone already.
  app.use((_err: unknown, _req: Request, res: Response, _next: NextFunction) => void res.status(400).end());
  const server = await listenExpress(app);
  cleanup.push(() => server.close());
  return { monitor: t.monitor, server, arrivals, collect: t.collect };
}

async function fastifyServer(): Promise<Built> {
  const t = monitorWithReader();
  cleanup.push(() => t.close());
  const arrivals = new Arrivals();
  const app = newFastify();
  await app.register(fastifySignal, { monitor: t.monitor, queue: { name: 'q', capacity: 2000 } });
  app.addHook('onRequest', async (request) => arrivals.arrived(request.headers['x-id'] as string | undefined));
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.post('/upload', async () => ({ ok: true }));
  app.get('/sse', async (request) => {
    const signal = request.inferSignal!;
    const sse = signal.sse();
    signal.start();
    await sseEvents(
      (i) => sse.send(`ev${i}`),
      () => sse.end(),
      () => sse.closed,
      cutAfter(request.headers['x-cut-after']),
    );
  });
  const server = await listenFastify(app);
  cleanup.push(() => server.close());
  return { monitor: t.monitor, server, arrivals, collect: t.collect };
}

async function abortRun(name: string, build: () => Promise<Built>): Promise<void> {
  const { monitor, server, arrivals, collect } = await build();
  const random = rng(name === 'express' ? 5 : 11);
  const total = 1000;
  const kinds = Array.from({ length: total }, () => KINDS[Math.floor(random() * KINDS.length)]);
  const planned = Object.fromEntries(KINDS.map((k) => [k, kinds.filter((x) => x === k).length])) as Record<
    Kind,
    number
  >;
  await pool(total, 50, (i) => abortingClient(server.url, kinds[i], `${name}-${i}`, arrivals, random));
  await until(() => monitor.snapshot().queues.q?.completed === total, 10_000, `${total} requests counted`);
  // Anything counted twice would show up as more than `total` after a few more turns.
  await new Promise((r) => setTimeout(r, 50));

  const exported = await collect();
  const outcomes = exported.by(METRICS.requests.name, ATTR.outcome);
  const counted = Object.values(outcomes).reduce((a, b) => a + b, 0);
  expect(counted).toBe(total);
  expect(exported.count(METRICS.requestDuration.name)).toBe(total);
  const sse = planned['mid-sse'] + planned['after-last-event'];
  const bodyAborts = planned['before-body'] + planned['mid-body'];
  // Before the body and mid-body: the handler never answered; mid-stream: cut off. All cancelled.
  // Right after the last event: the server's end races the client's close — either outcome, once.
  expect(outcomes.error ?? 0).toBe(0);
  expect(outcomes.cancelled).toBeGreaterThanOrEqual(bodyAborts + planned['mid-sse']);
  expect((outcomes.completed ?? 0) + outcomes.cancelled).toBe(total);
  // Streams: one per SSE request, and their outcomes match the requests'.
  const streams = exported.by(METRICS.streams.name, ATTR.outcome);
  expect((streams.completed ?? 0) + (streams.cancelled ?? 0)).toBe(sse);
  expect(streams.completed ?? 0).toBe(outcomes.completed ?? 0);
  // TTFT is for successful responses only: one sample per completed stream.
  expect(exported.count(METRICS.timeToFirstToken.name)).toBe(streams.completed ?? 0);
  expect(monitor.snapshot().queues.q).toMatchObject({ inFlight: 0, waiting: 0, completed: total });
  figure(`5 ${name} aborts`, {
    total,
    ...planned,
    counted,
    cancelled: outcomes.cancelled,
    completed: outcomes.completed ?? 0,
    streams: sse,
    streamsCancelled: streams.cancelled ?? 0,
  });
}

describe('case 5: 1 000 client aborts at random points', () => {
  it('Express: every one counted exactly once; outcomes add up to the total', () => abortRun('express', expressServer));
  it('Fastify: every one counted exactly once; outcomes add up to the total', () => abortRun('fastify', fastifyServer));
});

// --- case 6 -------------------------------------------------------------------

/** Error and close events seen on each response of one route (response or its socket). */
class Fired {
  error = 0;
  close = 0;
  both = 0;
  watch(res: import('node:http').ServerResponse): void {
    let errored = false;
    const onError = (): void => {
      if (!errored) this.error++;
      errored = true;
    };
    res.on('error', onError);
    res.socket?.on('error', onError);
    res.on('close', () => {
      this.close++;
      if (errored) this.both++;
      else setImmediate(() => errored && this.both++);
    });
  }
}

/** Sends `n` GETs to `path` on raw sockets and waits for each socket to close. */
async function hit(url: string, path: string, n: number): Promise<void> {
  await pool(n, 20, async () => {
    const socket = await open(url);
    socket.on('error', () => {});
    socket.on('data', () => {});
    socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`);
    await new Promise((r) => socket.on('close', r));
  });
}

async function runRoutes(
  t: ReturnType<typeof monitorWithReader>,
  url: string,
  routes: Record<string, { fired: Fired; outcome: string }>,
  n: number,
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  let done = 0;
  for (const [path, route] of Object.entries(routes)) {
    await hit(url, path, n);
    done += n;
    await until(() => t.monitor.snapshot().queues.q?.completed === done, 5000, `${path} counted`);
    await new Promise((r) => setTimeout(r, 30));
    // Every request of the route saw an error event and a close event.
    expect(route.fired.error, path).toBe(n);
    expect(route.fired.close, path).toBe(n);
    expect(route.fired.both, path).toBe(n);
    counts[path] = route.fired.both;
  }
  const exported = await t.collect();
  expect(exported.sum(METRICS.requests.name)).toBe(done);
  expect(exported.count(METRICS.requestDuration.name)).toBe(done);
  expect(exported.count(METRICS.inferenceDuration.name)).toBe(done);
  const expected: Record<string, number> = {};
  for (const route of Object.values(routes)) expected[route.outcome] = (expected[route.outcome] ?? 0) + n;
  expect(exported.by(METRICS.requests.name, ATTR.outcome)).toEqual(expected);
  return {
    requests: done,
    counted: exported.sum(METRICS.requests.name),
    durationSamples: exported.count(METRICS.requestDuration.name),
    ...counts,
  };
}

describe('case 6: both error and close fire for one response', () => {
  const N = 100;

  it('Express: one duration sample and one count per request', async () => {
    const t = monitorWithReader();
    cleanup.push(() => t.close());
    const routes = {
      // Destroyed with an error mid-body: `error` on the socket, `close` on the response. No error marker ran: the peer-gone reading.
      '/destroy': { fired: new Fired(), outcome: 'cancelled' },
      // Written after end: `error` (ERR_STREAM_WRITE_AFTER_END) on the response after `finish`, then `close`.
      '/write-after-end': { fired: new Fired(), outcome: 'completed' },
      // Fails after the head: Express's error path destroys the socket with the error; the marker flags it.
      '/throw-after-head': { fired: new Fired(), outcome: 'error' },
    };
    const app = newExpress();
    app.use(expressSignal(t.monitor, { queue: 'q' }));
    app.use((req, res, next) => {
      routes[req.path as keyof typeof routes]?.fired.watch(res);
      next();
    });
    app.get('/destroy', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      setImmediate(() => res.destroy(new Error('boom')));
    });
    app.get('/write-after-end', (_req, res) => {
      res.end('done');
      res.write('more');
    });
    app.get('/throw-after-head', async (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      await tick();
      req.socket.destroy(new Error('boom'));
      throw new Error('boom');
    });
    app.use(inferSignalErrors());
    app.use((_err: unknown, _req: Request, _res: Response, _next: NextFunction) => {});
    const server = await listenExpress(app);
    cleanup.push(() => server.close());
    figure('6 express error+close', await runRoutes(t, server.url, routes, N));
  });

  it('Fastify: one duration sample and one count per request', async () => {
    const t = monitorWithReader();
    cleanup.push(() => t.close());
    const routes = {
      '/destroy': { fired: new Fired(), outcome: 'cancelled' },
      '/write-after-end': { fired: new Fired(), outcome: 'completed' },
      // Fails after the head: Fastify's onError runs, then the socket is destroyed with the error.
      '/throw-after-head': { fired: new Fired(), outcome: 'error' },
    };
    const app = newFastify();
    await app.register(fastifySignal, { monitor: t.monitor, queue: 'q' });
    app.addHook('onRequest', async (request, reply) =>
      routes[request.url as keyof typeof routes]?.fired.watch(reply.raw),
    );
    app.get('/destroy', (_request, reply) => {
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/plain' });
      reply.raw.write('partial');
      setImmediate(() => reply.raw.destroy(new Error('boom')));
    });
    app.get('/write-after-end', (_request, reply) => {
      reply.hijack();
      reply.raw.end('done');
      reply.raw.write('more');
    });
    app.get('/throw-after-head', async (request, reply) => {
      reply.raw.writeHead(200, { 'content-type': 'text/plain' });
      reply.raw.write('partial');
      await tick();
      request.raw.socket.destroy(new Error('boom'));
      throw new Error('boom');
    });
    const server = await listenFastify(app);
    cleanup.push(() => server.close());
    figure('6 fastify error+close', await runRoutes(t, server.url, routes, N));
  });

  it('core: a ticket and a stream ended twice (error, then close) count once', async () => {
    const t = monitorWithReader();
    cleanup.push(() => t.close());
    const queue = t.monitor.queue('q');
    for (let i = 0; i < N; i++) {
      const ticket = queue.enqueue('m');
      ticket.start();
      const stream = ticket.stream();
      stream.token();
      stream.end('error');
      ticket.end('error');
      stream.end('cancelled');
      ticket.end('cancelled');
      ticket.start();
    }
    const exported = await t.collect();
    expect(exported.by(METRICS.requests.name, ATTR.outcome)).toEqual({ error: N });
    expect(exported.count(METRICS.requestDuration.name)).toBe(N);
    // The other outcomes of the model exist at 0 from its first request (the rules' increase() needs them).
    expect(exported.by(METRICS.streams.name, ATTR.outcome)).toEqual({
      error: N,
      completed: 0,
      cancelled: 0,
      unavailable: 0,
      deadline_exceeded: 0,
    });
    expect(t.monitor.snapshot().queues.q).toMatchObject({ inFlight: 0, waiting: 0, completed: N });
  });
});
