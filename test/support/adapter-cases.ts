// The client side and the exported-number checks of the cases every HTTP
// adapter must pass. Each adapter's test builds its own server
// (that part is framework glue) and hands the URL here, so Express and
// Fastify are held to the same requests and the same assertions.
import { once } from 'node:events';
import { connect } from 'node:net';
import { expect } from 'vitest';
import { ATTR, METRICS, type Monitor } from '@infersignal/core';
import { UNKNOWN_MODEL } from '../../packages/core/src/names';
import { pool, sleep, until, withUnhandledRejections } from './async';
import { collect, type TestReader } from './otel';

const OUTCOME = ATTR.outcome;

export interface Served {
  url: string;
  monitor: Monitor;
  reader: TestReader;
}

/**
 * 200 requests at concurrency 20 to `GET /v1/infer?mode=run|start|auto`:
 * every one counted once, completed, with a queue-wait sample each.
 */
export async function twoHundredRequests({ url, monitor, reader }: Served, calls: () => number): Promise<void> {
  const modes = ['run', 'start', 'auto'];
  const statuses: number[] = [];
  await pool(200, 20, async (i) => {
    const response = await fetch(`${url}/v1/infer?mode=${modes[i % 3]}`);
    await response.arrayBuffer();
    statuses.push(response.status);
  });
  // The last response's outcome may land a moment after the client read it.
  await until(() => monitor.snapshot().queues.http.completed === 200, 2000, '200 completions');

  expect(statuses.filter((s) => s === 200)).toHaveLength(200);
  expect(calls()).toBe(200);
  const out = await collect(reader);
  expect(out.sum(METRICS.requests.name)).toBe(200);
  expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed' })).toBe(200);
  expect(out.count(METRICS.queueWait.name)).toBe(200);
  expect(out.count(METRICS.requestDuration.name)).toBe(200);
  expect(out.count(METRICS.inferenceDuration.name)).toBe(200);
  expect(out.sum(METRICS.queueInFlight.name)).toBe(0);
  expect(out.sum(METRICS.queueWaiting.name)).toBe(0);
}

/**
 * One SSE client that left after 3 events: one cancelled stream and
 * request, and no TTFT sample (the GenAI conventions count successful
 * responses only).
 */
export async function expectOneCancelledStream(reader: TestReader): Promise<void> {
  const out = await collect(reader);
  expect(out.sum(METRICS.streams.name, { [OUTCOME]: 'cancelled' })).toBe(1);
  expect(out.sum(METRICS.streams.name, { [OUTCOME]: 'completed' })).toBe(0);
  expect(out.sum(METRICS.streams.name)).toBe(1);
  expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'cancelled' })).toBe(1);
  expect(out.sum(METRICS.requests.name)).toBe(1);
  expect(out.count(METRICS.timeToFirstToken.name)).toBe(0);
  expect(out.count(METRICS.requestDuration.name, { [ATTR.errorType]: 'cancelled' })).toBe(1);
  expect(out.count(METRICS.queueWait.name)).toBe(1);
  expect(out.sum(METRICS.streamTokens.name)).toBeGreaterThanOrEqual(3);
}

/**
 * `GET /v1/stream` whose handler sends 5 token events (plus control frames)
 * and ends: an event stream, one completed stream with 5 tokens, one TTFT
 * and one time-per-token sample. Returns the response for the adapter's own
 * checks of the frames and headers.
 */
export async function oneCompletedStream({
  url,
  monitor,
  reader,
}: Served): Promise<{ response: Response; text: string }> {
  const response = await fetch(`${url}/v1/stream`);
  const text = await response.text();
  await until(() => monitor.snapshot().queues.http.completed === 1, 2000, 'completion');

  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  const out = await collect(reader);
  expect(out.sum(METRICS.streams.name, { [OUTCOME]: 'completed' })).toBe(1);
  expect(out.sum(METRICS.streams.name)).toBe(1);
  expect(out.sum(METRICS.streamTokens.name)).toBe(5);
  expect(out.count(METRICS.timeToFirstToken.name)).toBe(1);
  expect(out.count(METRICS.timePerOutputToken.name)).toBe(1);
  expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed' })).toBe(1);
  return { response, text };
}

/**
 * 10 concurrent `GET /v1/slow` against a shedding queue of capacity 2 whose
 * admitted handlers wait for all 10 arrivals: 2 served, 8 answered 503 with
 * a Retry-After and the JSON body, without the handler, counted `rejected`.
 */
export async function tenSlowRequestsShed({ url, monitor, reader }: Served, calls: () => number): Promise<void> {
  const responses = await Promise.all(
    Array.from({ length: 10 }, async () => {
      const response = await fetch(`${url}/v1/slow`);
      return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() };
    }),
  );
  await until(() => monitor.snapshot().queues.http.completed === calls(), 2000, 'completions');

  const shed = responses.filter((r) => r.status === 503);
  const ok = responses.filter((r) => r.status === 200);
  expect(shed.length).toBeGreaterThan(0);
  expect(ok.length + shed.length).toBe(10);
  // Capacity 2: two admitted (occupancy 1.0 > 0.85 afterwards), the other eight shed.
  expect(ok).toHaveLength(2);
  expect(calls()).toBe(ok.length);
  for (const r of shed) {
    expect(r.retryAfter).toMatch(/^[1-9]\d*$/);
    expect(JSON.parse(r.body)).toMatchObject({ error: 'overloaded' });
  }
  const out = await collect(reader);
  expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'rejected' })).toBe(shed.length);
  expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed' })).toBe(ok.length);
  expect(out.count(METRICS.queueWait.name)).toBe(ok.length);
}

/**
 * Three failing handlers, the app's own error handler answering
 * `{ handledByApp: message }`: answers unchanged, no unhandled rejection,
 * the two 500s counted `error`, the 4xx `completed`.
 */
export async function failingHandlers(
  { url, monitor, reader }: Served,
  cases: ReadonlyArray<readonly [path: string, status: number, message: string]>,
): Promise<void> {
  const unhandled = await withUnhandledRejections(async () => {
    for (const [path, status, message] of cases) {
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
}

/** `GET /v1/stream` whose handler fails after the SSE head: the body read fails, counted `error` once. */
export async function streamFailingAfterHead(
  { url, monitor, reader }: Served,
  handlerDone: Promise<void> = Promise.resolve(),
): Promise<void> {
  const response = await fetch(`${url}/v1/stream`);
  // The socket is destroyed once the head was sent: the body read fails.
  await expect(response.text()).rejects.toThrow();
  await handlerDone;
  await until(() => monitor.snapshot().queues.http.completed === 1, 2000, 'completion');
  await sleep(20);

  const out = await collect(reader);
  expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'error' })).toBe(1);
  expect(out.sum(METRICS.requests.name)).toBe(1);
  expect(out.count(METRICS.requestDuration.name)).toBe(1);
  expect(out.sum(METRICS.streams.name, { [OUTCOME]: 'error' })).toBe(1);
  expect(out.sum(METRICS.streams.name)).toBe(1);
}

/**
 * 20 requests to `/v1/models/abc<i>?token=secret<i>` answered with
 * `{ id, route }`: the route is the pattern; no id or query in any
 * attribute; and the route is not taken for the model (`_unknown`, as
 * nothing named one).
 */
export async function twentyIdsOneLabel({ url, monitor, reader }: Served): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const response = await fetch(`${url}/v1/models/abc${i}?token=secret${i}`);
    expect(await response.json()).toEqual({ id: `abc${i}`, route: '/v1/models/:id' });
  }
  await until(() => monitor.snapshot().queues.http.completed === 20, 2000, 'completions');

  const out = await collect(reader);
  expect(out.values(METRICS.requests.name, ATTR.model)).toEqual([UNKNOWN_MODEL]);
  expect(out.values(METRICS.queueWait.name, ATTR.model)).toEqual([UNKNOWN_MODEL]);
  expect(out.sum(METRICS.requests.name)).toBe(20);
  expect(out.allAttributeValues().filter((v) => v.includes('abc') || v.includes('secret'))).toEqual([]);
}

/**
 * `/healthz/ready` with a capacity-2 queue whose `GET /v1/slow` handlers wait
 * for `release`: 200 → 503 with two in flight (HEAD too, where `head`) → 200
 * after they finish; the probe itself is not counted.
 */
export async function readinessFlips(
  { url, monitor }: Pick<Served, 'url' | 'monitor'>,
  release: () => void,
  options: { head: boolean },
): Promise<void> {
  const before = await fetch(`${url}/healthz/ready`);
  expect(before.status).toBe(200);
  expect(await before.json()).toMatchObject({ level: 'ok', queues: { http: { inFlight: 0, capacity: 2 } } });

  const slow = [fetch(`${url}/v1/slow`), fetch(`${url}/v1/slow`)];
  await until(() => monitor.snapshot().queues.http.inFlight === 2, 5000, 'two in flight');
  const during = await fetch(`${url}/healthz/ready`);
  expect(during.status).toBe(503);
  expect(await during.json()).toMatchObject({ level: 'critical', queues: { http: { inFlight: 2, occupancy: 1 } } });
  if (options.head) {
    const head = await fetch(`${url}/healthz/ready`, { method: 'HEAD' });
    expect(head.status).toBe(503);
  }

  release();
  await Promise.all(slow.map(async (p) => (await p).arrayBuffer()));
  await until(() => monitor.snapshot().queues.http.completed === 2, 2000, 'completions');
  const after = await fetch(`${url}/healthz/ready`);
  expect(after.status).toBe(200);
  // The occupancy CRITICAL lowered as the requests ended; the WARN it fell to stays for queue.keepFiringSeconds.
  const recovered = (await after.json()) as { active: { signal: string; level: string }[] };
  expect(recovered).toMatchObject({ level: 'warn', queues: { http: { level: 'ok', occupancy: 0 } } });
  expect(recovered.active.map((a) => `${a.signal}:${a.level}`)).toEqual(['queue_occupancy:warn']);
  // The probe is not an inference request.
  expect(monitor.snapshot().queues.http.completed).toBe(2);
}

/** One `GET /v1/infer` seen by two registrations: counted once, in `outer`; nothing left waiting in `inner`. */
export async function trackedOnce({ url, monitor, reader }: Served, outer: string): Promise<void> {
  await (await fetch(`${url}/v1/infer`)).arrayBuffer();
  await until(() => monitor.snapshot().queues[outer].completed === 1, 2000, 'completion');
  await sleep(10);
  const out = await collect(reader);
  expect(out.sum(METRICS.requests.name)).toBe(1);
  expect(out.sum(METRICS.requests.name, { [ATTR.queue]: outer })).toBe(1);
  expect(monitor.snapshot().queues.inner.waiting).toBe(0);
}

/**
 * `GET /v1/infer` through run() at concurrency 1, the first held by
 * `release`: a second client that leaves while waiting frees its place, its
 * work never runs, it counts `cancelled` without a queue-wait sample.
 */
export async function leaverWhileWaiting(
  { url, monitor, reader }: Served,
  release: () => void,
  ran: () => number,
): Promise<void> {
  const first = fetch(`${url}/v1/infer`);
  await until(() => monitor.snapshot().queues.http.inFlight === 1, 5000, 'first in flight');
  const controller = new AbortController();
  const second = fetch(`${url}/v1/infer`, { signal: controller.signal }).catch((error: Error) => error);
  await until(() => monitor.snapshot().queues.http.waiting === 1, 5000, 'second waiting');
  controller.abort();
  await until(() => monitor.snapshot().queues.http.waiting === 0, 5000, 'second gone');
  release();
  expect((await first).status).toBe(200);
  expect(await second).toBeInstanceOf(Error);
  await until(() => monitor.snapshot().queues.http.completed === 2, 2000, 'completions');

  expect(ran()).toBe(1);
  const out = await collect(reader);
  expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'cancelled' })).toBe(1);
  expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'completed' })).toBe(1);
  expect(out.count(METRICS.queueWait.name)).toBe(1);
}

/**
 * Two `GET /v1/hold` (a handler that never answers) pipelined on one
 * connection, and the client gone before either is answered: both counted
 * `cancelled`, nothing left waiting or in flight. The second response waits
 * behind the first for the connection, and Node 20 and 22 never emit
 * `close` on such a response when the connection goes away: only its
 * request closes. Counted from the response alone, the second would stay
 * waiting for ever, and the queue's depth with it.
 */
export async function pipelinedLeaver({ url, monitor, reader }: Served, arrived: () => number): Promise<void> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  socket.write('GET /v1/hold HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/hold HTTP/1.1\r\nHost: x\r\n\r\n');
  await until(() => arrived() === 2, 5000, 'both requests at their handler');
  const queue = () => monitor.snapshot().queues.http;
  expect(queue().waiting + queue().inFlight).toBe(2);
  socket.destroy();
  await until(() => queue().completed === 2, 5000, 'both requests counted');
  expect(queue().waiting).toBe(0);
  expect(queue().inFlight).toBe(0);
  const out = await collect(reader);
  expect(out.sum(METRICS.requests.name, { [OUTCOME]: 'cancelled' })).toBe(2);
  expect(out.sum(METRICS.requests.name)).toBe(2);
  expect(out.sum(METRICS.queueWaiting.name)).toBe(0);
}
