/**
 * How the server suite loads a server, shared with the regimes tool so the
 * two load alike: autocannon in this process, fixed-count windows, an
 * unmeasured prime before each.
 */
import autocannon from 'autocannon';
import { SMOKE, seconds } from './env';
import type { Framework } from './servers';

export const CONNECTIONS = 32;
/**
 * A window is a fixed number of requests, not a span of time: every window
 * of a framework then carries the same fixed costs (32 connections opened
 * and closed) over the same count, whatever the machine's speed. About half
 * a second each on a quiet machine; BENCH_SECONDS scales them (0.5: these).
 */
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

/**
 * `amount` requests over CONNECTIONS connections. autocannon notices it is
 * done only at one of its samples (every 1000 ms by default), so they come
 * every 50 ms: the idle tail after the last response costs the server no
 * CPU, but it would cost the suite time.
 */
export function load(url: string, amount: number): ReturnType<typeof autocannon> {
  return autocannon({ url, connections: CONNECTIONS, pipelining: 1, amount, sampleInt: 50 });
}
