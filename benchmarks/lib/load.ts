/**
 * How the server suite loads a server: `@infersignal/bench`'s closed loop
 * (runBench) in the parent process, CONNECTIONS keep-alive connections, each
 * sending its next request when the last one is answered, for a fixed
 * number of requests. No load generator outside npm, so CI and a fresh
 * clone run the suite as they are.
 *
 * A window is a fixed number of requests, not a span of time: every window
 * of a framework then carries the same fixed costs (connections opened and
 * closed) over the same count, whatever the machine's speed. The server's
 * own CPU per request is what the suite reads (its `process.cpuUsage()`
 * over the window, server-child.ts), so the load generator's speed moves
 * req/s and P99, not the figure the goals are about.
 */
import { runBench } from '@infersignal/bench';
import { SMOKE, seconds } from './env';
import type { Framework } from './servers';

export const CONNECTIONS = 32;

/** What the suite reads from the load generator's side of a window. */
export interface WindowLoad {
  p99Ms: number;
  /** Requests that did not end in a 2xx answer (errors, timeouts, other statuses). */
  errors: number;
}

/** About half a second each on a quiet machine; BENCH_SECONDS scales them (0.5: these). */
const WINDOW_SCALE = seconds(0.5) / 0.5;
// Smoke mode: enough for the batch span processor (512 spans a batch) to export within a window.
export const WINDOW_REQUESTS: Record<Framework, number> = SMOKE
  ? { fastify: 1000, express: 500 }
  : {
      fastify: Math.max(200, Math.round(6000 * WINDOW_SCALE)),
      express: Math.max(200, Math.round(3000 * WINDOW_SCALE)),
    };
/** Unmeasured requests just before each window (after its scrape): a server idle for seconds starts cold (caches, branch predictors). */
export const PRIME_REQUESTS = SMOKE ? 0 : Number(process.env.BENCH_PRIME ?? 500);

/** `amount` requests over CONNECTIONS connections, closed loop. */
export async function load(url: string, amount: number): Promise<WindowLoad> {
  const result = await runBench({
    target: url,
    method: 'GET',
    connections: CONNECTIONS,
    // The request count ends the run; the duration only bounds a server that stopped answering.
    durationMs: 120_000,
    maxRequests: amount,
    progress: false,
  });
  return { p99Ms: result.total.latency.p99, errors: result.total.responses - result.total.ok };
}

/** One measured window's load. */
export function loadWindow(url: string, framework: Framework): Promise<WindowLoad> {
  return load(url, WINDOW_REQUESTS[framework]);
}
