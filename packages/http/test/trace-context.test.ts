/**
 * The trace a caller sent (`traceparent`) reaches a tracked request's span
 * when nothing else took it (no HTTP instrumentation): a real node:http
 * server on 127.0.0.1:0, plain and re-parented responses (Fastify's and
 * Express's kinds), failed and shed requests, the W3C propagator registered.
 */
import { createServer, request as httpRequest, ServerResponse, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR } from '@infersignal/core';
import { createHttpTracking, type HttpTrackingOptions } from '@infersignal/http';
import { until } from '../../../test/support/async';
import { testMonitor } from '../../../test/support/monitor';
import {
  CALLER_TRACEPARENT,
  expectChildOfCaller,
  expectOwnRoot,
  requestSpansInMemory,
  useW3CPropagator,
} from '../../../test/support/traces';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/**
 * A server tracking every request, whose `handle` answers it (or holds it):
 * spans in memory, no baseline share, so only outliers get one.
 */
async function tracedServer(
  options: HttpTrackingOptions<never>,
  handle: (res: ServerResponse, tracking: ReturnType<typeof createHttpTracking>) => void,
) {
  const { tracerProvider, requestSpans } = requestSpansInMemory();
  const t = testMonitor({ tracerProvider, traces: { baseline: 0 } });
  cleanup.push(() => t.close());
  const tracking = createHttpTracking(t.monitor, { model: 'tiny', ...options }, { source: 'test' });
  const server = createServer((_req: IncomingMessage, res) => handle(res, tracking));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  const send = (headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) =>
      httpRequest({ host: '127.0.0.1', port, path: '/infer', headers }, (res) =>
        res.resume().on('end', () => resolve(res.statusCode!)),
      )
        .on('error', reject)
        .end(),
    );
  return { send, requestSpans };
}

/** Every request fails (500): each one is an outlier, so each gets its span. */
function failingServer(reparent: boolean) {
  // What Express does: every response re-parented onto one object made from Node's prototype.
  const proto = Object.create(ServerResponse.prototype) as ServerResponse;
  return tracedServer({}, (res, tracking) => {
    if (reparent) Object.setPrototypeOf(res, proto);
    tracking.open(res.req, res, '/infer');
    res.writeHead(500).end('no');
  });
}

describe("a caller's trace context", () => {
  for (const reparent of [false, true]) {
    it(`a failed request's span continues the traceparent it came with (${reparent ? 're-parented' : 'plain'} response)`, async () => {
      cleanup.push(useW3CPropagator());
      const { send, requestSpans } = await failingServer(reparent);
      await send({ traceparent: CALLER_TRACEPARENT });
      await send({});
      await until(() => requestSpans().length === 2, 5000, 'two request spans');
      const [carried, fresh] = requestSpans();
      expectChildOfCaller(carried);
      // Without a traceparent: a root span of its own trace.
      expectOwnRoot(fresh);
    });
  }

  it('without a global propagator the header is not read: a root span', async () => {
    const { send, requestSpans } = await failingServer(false);
    await send({ traceparent: CALLER_TRACEPARENT });
    await until(() => requestSpans().length === 1, 5000, 'one request span');
    expectOwnRoot(requestSpans()[0]);
  });

  it("a shed request's span (503 at arrival) continues the traceparent it came with", async () => {
    cleanup.push(useW3CPropagator());
    const held: ServerResponse[] = [];
    const { send, requestSpans } = await tracedServer(
      { queue: { name: 'tight', capacity: 1 }, shed: true },
      (res, tracking) => {
        // Shed: answered already (503, Retry-After).
        if (tracking.open(res.req, res, '/infer') === undefined) return;
        held.push(res);
      },
    );
    // The one place of the queue taken and held: the next request finds it full and is shed.
    const first = send({});
    await until(() => held.length === 1, 5000, 'the first request held');
    expect(await send({ traceparent: CALLER_TRACEPARENT })).toBe(503);
    held[0]!.end('ok');
    expect(await first).toBe(200);
    const shed = requestSpans().filter((s) => s.attributes[ATTR.traceReason] === 'shed');
    expect(shed).toHaveLength(1);
    expectChildOfCaller(shed[0]);
  });
});
