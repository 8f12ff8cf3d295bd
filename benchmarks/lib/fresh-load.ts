/**
 * The fresh suite's overload, in a process of its own so that its CPU does
 * not delay the suite's scraper: `@infersignal/bench`'s open loop at a
 * fixed rate of POST /v1/infer for a fixed time, then one JSON line with
 * what it got on stdout (after a line saying when it started).
 *
 *   fresh-load.ts <base url> <rate req/s> <duration ms>
 */
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { runBench } from '@infersignal/bench';

/** The body the demo sends (examples/demo/src/probe.ts): one 512-wide row, tiled into the batch. */
export const INFER_BODY = { input: [0.5, -0.25, 1, 0.125] };

/** A request unanswered this long counts as failed (the scraper's limit too). */
export const TIMEOUT_MS = 2000;

export interface LoadSummary {
  offeredRate: number;
  sent: number;
  ok: number;
  statuses: Record<string, number>;
  /** Never sent: the generator's backlog was full (it could not keep up). */
  dropped: number;
  throughput: number;
  p50Ms: number;
  p99Ms: number;
}

// Run as a script (the suite's child), not when the suite imports its types and constants.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [url, rate, duration] = process.argv.slice(2);
  // When the first request goes out (epoch ms, as the suite's clock): its phases start here.
  process.stdout.write(`${JSON.stringify({ type: 'start', at: performance.timeOrigin + performance.now() })}\n`);
  const result = await runBench({
    target: `${url}/v1/infer`,
    method: 'POST',
    body: INFER_BODY,
    rate: Number(rate),
    durationMs: Number(duration),
    timeoutMs: TIMEOUT_MS,
    progress: false,
  });
  const t = result.total;
  const summary: LoadSummary = {
    offeredRate: t.offeredRate,
    sent: t.requests,
    ok: t.ok,
    statuses: t.statuses,
    dropped: t.errors.dropped,
    throughput: t.throughput,
    p50Ms: t.latency.p50,
    p99Ms: t.latency.p99,
  };
  process.stdout.write(`${JSON.stringify({ type: 'summary', ...summary })}\n`);
}
