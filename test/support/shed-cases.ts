// The shed answer through an adapter: the client side and the assertions both adapters share.
import { expect } from 'vitest';
import { ATTR, METRICS, type Monitor } from '@infersignal/core';
import { HTTP_SHED_BODY, type ShedResponseOption } from '../../packages/http/src/shed';
import { until } from './async';
import { collect, type TestReader } from './otel';

/** A server built by the adapter test: queue `http` of capacity 1, shedding on, `shedResponse` as given. */
export interface ShedServer {
  url: string;
  monitor: Monitor;
  reader: TestReader;
  /** Calls of the route's handler. */
  calls(): number;
  /** Lets the held request answer. */
  release(): void;
}

export interface ShedAnswerSeen {
  status: number;
  headers: Headers;
  body: string;
}

/**
 * One request takes the only slot (the route holds it until `release`);
 * once it is in flight, a second one finds the queue at CRITICAL and is
 * shed. Returns what the shed request was answered, after checking that
 * its handler never ran and that it was counted `rejected`.
 */
export async function shedOne(server: ShedServer): Promise<ShedAnswerSeen> {
  const held = fetch(`${server.url}/v1/slow`);
  await until(() => server.calls() === 1, 5000, 'the first request to hold the slot');
  const response = await fetch(`${server.url}/v1/slow`);
  const answer = { status: response.status, headers: response.headers, body: await response.text() };
  server.release();
  expect((await held).status).toBe(200);
  await until(() => server.monitor.snapshot().queues.http.completed === 1, 5000, 'the held request to end');
  expect(server.calls()).toBe(1);
  const out = await collect(server.reader);
  expect(out.sum(METRICS.requests.name, { [ATTR.outcome]: 'rejected' })).toBe(1);
  return answer;
}

/** The options each case registers the adapter with, and what its shed request must be answered. */
export const SHED_CASES: ReadonlyArray<{
  name: string;
  shedResponse: ShedResponseOption | undefined;
  check(answer: ShedAnswerSeen, monitor: Monitor): void;
}> = [
  {
    name: 'default: 503, Retry-After, the JSON body',
    shedResponse: undefined,
    check(answer) {
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(answer.body).toBe(HTTP_SHED_BODY);
    },
  },
  {
    name: 'status, headers and a JSON body of its own',
    shedResponse: { status: 429, headers: { 'x-shed-reason': 'busy' }, body: { error: 'busy', retry: true } },
    check(answer) {
      expect(answer.status).toBe(429);
      expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(answer.headers.get('x-shed-reason')).toBe('busy');
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(JSON.parse(answer.body)).toEqual({ error: 'busy', retry: true });
    },
  },
  {
    name: 'a text body with its own content type and Retry-After',
    shedResponse: { body: 'try later', headers: { 'content-type': 'text/plain', 'retry-after': '30' } },
    check(answer) {
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('30');
      expect(answer.headers.get('content-type')).toBe('text/plain');
      expect(answer.body).toBe('try later');
    },
  },
  {
    name: 'a handler that writes the answer on the raw response',
    shedResponse: (req, res, shed) => {
      res.writeHead(503, { 'retry-after': shed.retryAfter, 'content-type': 'text/plain' });
      res.end(`busy: ${req.method} ${req.url} (${shed.model})`);
    },
    check(answer, monitor) {
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(answer.body).toBe('busy: GET /v1/slow (tiny)');
      expect(monitor.snapshot().internalErrors).toBe(0);
    },
  },
  {
    name: 'a handler that throws: counted, and the default answer is sent',
    shedResponse: () => {
      throw new Error('shed handler bug');
    },
    check(answer, monitor) {
      expect(answer.status).toBe(503);
      expect(answer.body).toBe(HTTP_SHED_BODY);
      expect(monitor.snapshot().internalErrors).toBe(1);
    },
  },
];
