/**
 * trackedRequestOf on the two kinds of response a tracked request can sit
 * on: a plain one (Node's own prototype, as Fastify's `reply.raw`) and one
 * re-parented with Object.setPrototypeOf (as Express does to every
 * response), on a real node:http server on 127.0.0.1:0.
 */
import { createServer, get, ServerResponse, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { createHttpTracking, trackedRequestOf, type TrackedHttpRequest } from '@infersignal/http';
import { until } from '../../../test/support/async';
import { testMonitor } from '../../../test/support/monitor';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

interface Seen {
  tracked: TrackedHttpRequest;
  /** trackedRequestOf(res) in the handler, before the response was written. */
  during: TrackedHttpRequest | undefined;
  /** trackedRequestOf of a response nobody tracked, made in the same handler. */
  untracked: TrackedHttpRequest | undefined;
  res: ServerResponse;
}

async function serve(
  reparent: boolean,
  proto = Object.create(ServerResponse.prototype) as ServerResponse,
  /** Run on each response before it is tracked (another library's hooks). */
  hooks: { before?: (res: ServerResponse) => void } = {},
) {
  const t = testMonitor({ exportMode: 'producer' });
  cleanup.push(() => t.close());
  const tracking = createHttpTracking(t.monitor, { model: 'tiny' }, { source: 'test' });
  // What Express does: every response re-parented onto one object made from Node's prototype.
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    if (reparent) Object.setPrototypeOf(res, proto);
    hooks.before?.(res);
    const tracked = tracking.open(req, res, '/infer')!;
    t.advance(5);
    seen.push({ tracked, during: trackedRequestOf(res), untracked: trackedRequestOf(new ServerResponse(req)), res });
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  for (let i = 0; i < 3; i++) {
    await new Promise<void>((resolve, reject) =>
      get({ host: '127.0.0.1', port, path: '/infer' }, (res) => res.resume().on('end', resolve)).on('error', reject),
    );
  }
  await until(() => seen.every((s) => s.tracked.ended), 5000, 'every request counted');
  return { t, seen };
}

describe('trackedRequestOf', () => {
  for (const reparent of [false, true]) {
    it(`finds the request on a ${reparent ? 're-parented' : 'plain'} response until it is counted (plain: after, too); the head started it`, async () => {
      const { t, seen } = await serve(reparent);
      expect(seen).toHaveLength(3);
      expect(Object.getPrototypeOf(seen[0]!.res) === ServerResponse.prototype).toBe(!reparent);
      for (const s of seen) {
        expect(s.during).toBe(s.tracked);
        expect(s.untracked).toBeUndefined();
        expect(s.tracked.ended).toBe(true);
        // Counted and finished: a plain response still holds its (ended) request; a re-parented one's WeakMap
        // entry is gone, so no dead entry is left for the collector.
        expect(trackedRequestOf(s.res)).toBe(reparent ? undefined : s.tracked);
      }
      const exported = await t.collect();
      const done = { [ATTR.queue]: 'http', [ATTR.model]: 'tiny', [ATTR.outcome]: 'completed' };
      expect(exported.value(METRICS.requests.name, done)).toBe(3);
      // Started by the head, 5 ms (injected clock) after arrival: three waits of 5 ms.
      expect(exported.histogram(METRICS.queueWait.name, { [ATTR.queue]: 'http', [ATTR.model]: 'tiny' })).toMatchObject({
        count: 3,
        sum: 0.015,
      });
    });
  }

  /** Each of the three requests waited 5 ms (injected clock) until its head was written. */
  async function startedByTheHead(t: Awaited<ReturnType<typeof serve>>['t']) {
    const waits = (await t.collect()).histogram(METRICS.queueWait.name, { [ATTR.queue]: 'http', [ATTR.model]: 'tiny' });
    expect(waits).toMatchObject({ count: 3, sum: 0.015 });
  }

  it("starts a plain response's request at its head through the writeHead another library wrapped first", async () => {
    // As on-headers (compression, morgan) does: a wrapper on the instance, before InferSignal sees the response.
    const heads: number[] = [];
    const { t, seen } = await serve(false, undefined, {
      before: (res) => {
        const writeHead = res.writeHead;
        res.writeHead = function wrapped(this: ServerResponse, ...args: unknown[]) {
          heads.push(this.statusCode);
          return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
        } as ServerResponse['writeHead'];
      },
    });
    expect(heads).toEqual([200, 200, 200]);
    expect(seen.every((s) => s.tracked.ended)).toBe(true);
    await startedByTheHead(t);
  });

  for (const reparent of [false, true]) {
    it(`passes each of writeHead's forms through the head hook of a ${reparent ? 're-parented' : 'plain'} response, and starts its request`, async () => {
      // The hook calls Node's writeHead with the three parameters it was given, so every form must arrive intact.
      const proto = Object.create(ServerResponse.prototype) as ServerResponse;
      const t = testMonitor({ exportMode: 'producer' });
      cleanup.push(() => t.close());
      const tracking = createHttpTracking(t.monitor, { model: 'tiny' }, { source: 'test' });
      const forms: Record<string, (res: ServerResponse) => void> = {
        '/reason-headers': (res) => res.writeHead(201, 'Made Here', { 'x-form': 'reason-headers' }),
        '/reason': (res) => res.writeHead(202, 'Fine'),
        '/headers': (res) => res.writeHead(203, { 'x-form': 'headers' }),
        '/flat-headers': (res) => res.writeHead(200, ['x-form', 'flat-headers']),
        '/status': (res) => res.writeHead(206),
      };
      const server = createServer((req, res) => {
        if (reparent) Object.setPrototypeOf(res, proto);
        tracking.open(req, res, '/infer');
        t.advance(5);
        forms[req.url!]!(res);
        res.end('ok');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
      const port = (server.address() as AddressInfo).port;
      const heads: Record<string, [number | undefined, string | undefined, unknown]> = {};
      for (const path of Object.keys(forms)) {
        heads[path] = await new Promise((resolve, reject) =>
          get({ host: '127.0.0.1', port, path }, (res) =>
            res.resume().on('end', () => resolve([res.statusCode, res.statusMessage, res.headers['x-form']])),
          ).on('error', reject),
        );
      }
      expect(heads).toEqual({
        '/reason-headers': [201, 'Made Here', 'reason-headers'],
        '/reason': [202, 'Fine', undefined],
        '/headers': [203, 'Non-Authoritative Information', 'headers'],
        '/flat-headers': [200, 'OK', 'flat-headers'],
        '/status': [206, 'Partial Content', undefined],
      });
      const waits = (await t.collect()).histogram(METRICS.queueWait.name, {
        [ATTR.queue]: 'http',
        [ATTR.model]: 'tiny',
      });
      expect(waits).toMatchObject({ count: 5, sum: 0.025 });
    });
  }

  it('reads writableFinished through the response prototype that overrides it, not Node getter', async () => {
    // A prototype whose responses never report finished: each close then reads as a cut-off response.
    const stubborn = Object.create(ServerResponse.prototype) as ServerResponse;
    Object.defineProperty(stubborn, 'writableFinished', { get: () => false });
    const overridden = await serve(true, stubborn);
    const outcomes = async (run: typeof overridden) =>
      (await run.t.collect()).by(METRICS.requests.name, ATTR.outcome, { [ATTR.queue]: 'http', [ATTR.model]: 'tiny' });
    expect(await outcomes(overridden)).toEqual({ cancelled: 3 });
    // Then an Express-like prototype in the same process: Node's getter again, every response completed.
    expect(await outcomes(await serve(true))).toEqual({ completed: 3 });
  });
});
