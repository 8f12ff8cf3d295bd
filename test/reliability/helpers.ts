/**
 * Shared pieces of the reliability suite: a monitor on the real OTel SDK
 * (its reader and exported-number checks come from test/support), real
 * loopback servers (collectors that refuse, black-hole or record), a
 * bounded client pool, heap measurement after a forced GC, and a capture
 * of unhandled rejections. Nothing here mocks InferSignal itself.
 */
import {
  createServer as createHttpServer,
  type Agent,
  request,
  type IncomingMessage,
  type Server as HttpServer,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gunzipSync } from 'node:zlib';
import type { MonitorOptions } from '@infersignal/core';
import { sleep } from '../support/async';
import { testMonitor, type TestMonitor } from '../support/monitor';

export const MiB = 2 ** 20;
export { sleep };

export type { Exported } from '../support/otel';

/** A monitor on a real SDK MeterProvider with a pull reader, on the real clock; detectors on manual tick unless told otherwise. */
export function monitorWithReader(options: MonitorOptions = {}): TestMonitor {
  return testMonitor({ clock: undefined, eventLoop: false, ...options });
}

// --- heap -----------------------------------------------------------------

setFlagsFromString('--expose-gc');
const gcFn = runInNewContext('gc') as (options?: unknown) => void;

/** Heap used after two full GCs (a second pass collects what finalizers of the first released). */
export async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 2; i++) {
    await new Promise((r) => setImmediate(r));
    gcFn();
  }
  return process.memoryUsage().heapUsed;
}

// --- unhandled rejections ---------------------------------------------------

/** Starts recording unhandled rejections and uncaught exceptions; `stop()` returns them. */
export function captureUnhandled(): { seen: unknown[]; stop(): unknown[] } {
  const seen: unknown[] = [];
  const onRejection = (reason: unknown): void => void seen.push(reason);
  process.on('unhandledRejection', onRejection);
  return {
    seen,
    stop() {
      process.off('unhandledRejection', onRejection);
      return seen;
    },
  };
}

// --- servers ----------------------------------------------------------------

export { refusedEndpoint } from '../support/http';

export { blackHole, type BlackHole } from '../support/http';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** The body as received on the wire (gunzipped when content-encoding says gzip). */
  body: Buffer;
  at: number;
}

export interface Receiver {
  url: string;
  requests: RecordedRequest[];
  server: HttpServer;
  close(): Promise<void>;
}

/**
 * An HTTP server that records every request (OTLP collector, webhook target)
 * and answers with `respond` (default 200 + empty protobuf/JSON body).
 */
export async function receiver(
  respond?: (req: RecordedRequest, res: import('node:http').ServerResponse) => void,
): Promise<Receiver> {
  const requests: RecordedRequest[] = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const recorded = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        at: performance.now(),
      };
      requests.push(recorded);
      if (respond) return respond(recorded, res);
      res.statusCode = 200;
      res.setHeader('content-type', req.headers['content-type'] ?? 'application/json');
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// --- clients ----------------------------------------------------------------

export async function until(condition: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Runs `total` jobs with at most `concurrency` at a time. */
export async function pool(total: number, concurrency: number, job: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) await job(next++);
  };
  await Promise.all(Array.from({ length: Math.min(total, concurrency) }, worker));
}

export interface Reply {
  status: number;
  body: string;
  ms: number;
}

/** One request over node:http through `agent`; resolves with status, body and latency. */
export function httpRequest(
  url: string,
  options: { agent?: Agent; method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { agent: options.agent, method: options.method ?? 'GET', headers: options.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            ms: performance.now() - t0,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** P-quantile (nearest rank) of a list of numbers. */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** Deterministic PRNG for reproducible "random" abort points. */
export { seededRandom as rng } from '../support/random';

/** Prints one figure line for docs/reliability.md (grep `[reliability]` in the test output). */
export function figure(caseName: string, values: Record<string, number | string>): void {
  const text = Object.entries(values)
    .map(([k, v]) => `${k}=${typeof v === 'number' ? Number(v.toFixed(3)) : v}`)
    .join(' ');
  console.log(`[reliability] ${caseName}: ${text}`);
}
