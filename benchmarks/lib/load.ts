/**
 * How the server suite loads a server, shared with the regimes tool so the
 * two load alike. A measured window is loaded by `wrk` when it is on PATH
 * (Debian's package; BENCH_LOADER=autocannon to choose autocannon), by
 * autocannon in this process otherwise; warm-up and the unmeasured prime
 * before each window are always autocannon's, by request count.
 *
 * Why wrk: under autocannon (one Node thread driving 32 connections) the
 * same server ran at one of a ladder of rates (~58 800 req/s divided by 1,
 * 1.5, 2, 2.5, 3, 4 or 5, Fastify bare on Node 24), both processes idle a
 * third of the time on the slower rungs, and each rung down cost the server
 * 15–40 % more CPU per request whatever its code: a dearer server fell a
 * rung more often, which made it dearer still. wrk (C, epoll, one thread on
 * the load generator's CPU) keeps the server 97–99 % busy, where every
 * variant is measured in the same regime.
 */
import autocannon from 'autocannon';
import { SMOKE, seconds } from './env';
import type { Framework } from './servers';
import { type WindowLoad, runWrk, wrkVersion } from './wrk';

export const CONNECTIONS = 32;

export type Loader = 'wrk' | 'autocannon';
/** wrk's version line (`wrk debian/4.1.0-3+b2`), for the docs; undefined without it. */
const WRK = wrkVersion();
export const LOADER: Loader = chooseLoader();
export const WRK_VERSION = WRK ?? '';

function chooseLoader(): Loader {
  const wanted = process.env.BENCH_LOADER?.trim() || undefined;
  if (wanted === 'autocannon') return 'autocannon';
  if (wanted !== undefined && wanted !== 'wrk')
    throw new Error(`BENCH_LOADER must be wrk or autocannon, got ${JSON.stringify(wanted)}`);
  if (WRK !== undefined) return 'wrk';
  if (wanted === 'wrk') throw new Error('BENCH_LOADER=wrk, but wrk is not on PATH (apt-get install wrk)');
  return 'autocannon';
}

/**
 * An autocannon window is a fixed number of requests, not a span of time:
 * every window of a framework then carries the same fixed costs (32
 * connections opened and closed) over the same count, whatever the
 * machine's speed. About half a second each on a quiet machine;
 * BENCH_SECONDS scales them (0.5: these).
 */
const WINDOW_SCALE = seconds(0.5) / 0.5;
// Smoke mode: enough for the batch span processor (512 spans a batch) to export within a window.
export const WINDOW_REQUESTS: Record<Framework, number> = SMOKE
  ? { fastify: 1000, express: 500 }
  : {
      fastify: Math.max(200, Math.round(6000 * WINDOW_SCALE)),
      express: Math.max(200, Math.round(3000 * WINDOW_SCALE)),
    };
/** A wrk window lasts whole seconds (its `-d`); the server counts what it served. */
export const WRK_SECONDS = Math.max(1, Math.round(seconds(1)));
/** Unmeasured requests just before each window (after its scrape): a server idle for seconds starts cold (caches, branch predictors). */
export const PRIME_REQUESTS = SMOKE ? 0 : Number(process.env.BENCH_PRIME ?? 500);

/** One measured window's load, by LOADER. */
export async function loadWindow(url: string, framework: Framework): Promise<WindowLoad> {
  if (LOADER === 'wrk') return runWrk(url, CONNECTIONS, WRK_SECONDS);
  const result = await load(url, WINDOW_REQUESTS[framework]);
  return { p99Ms: result.latency.p99, errors: result.errors + result.non2xx };
}

/**
 * `amount` requests over CONNECTIONS connections. autocannon notices it is
 * done only at one of its samples (every 1000 ms by default), so they come
 * every 50 ms: the idle tail after the last response costs the server no
 * CPU, but it would cost the suite time.
 */
export function load(url: string, amount: number): ReturnType<typeof autocannon> {
  return autocannon({ url, connections: CONNECTIONS, pipelining: 1, amount, sampleInt: 50 });
}
