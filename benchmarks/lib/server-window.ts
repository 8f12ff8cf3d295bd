/**
 * One server's measured window, as the server suite (server.ts) takes it:
 * the warm-up of a fresh server, then per window a scrape measured apart,
 * an unmeasured prime and the window's load.
 */
import { SMOKE } from './env';
import { PRIME_REQUESTS, WINDOW_REQUESTS, load, loadWindow } from './load';
import type { ServerHandle } from './servers';

/** One measured window of one server. */
export interface Sample {
  cpuPerRequestUs: number;
  /** CPU per request over the round's baseline (bare and bare again; bare again: over bare alone; NaN for bare). */
  vsBare: number;
  rps: number;
  p99Ms: number;
  spans: number;
  requests: number;
  /** Server CPU of the one scrape before this window, µs (0: no Prometheus endpoint). */
  scrapeUs: number;
  /** Shares of the window's server CPU: on threads other than the event loop's, in GC pauses. */
  helperShare: number;
  gcShare: number;
  /** Share of the window's server CPU spent in the kernel (system time). */
  systemShare: number;
  /** GC pauses per 1000 requests, and the new space (MiB) as the window began. */
  gcsPerKiloRequest: number;
  /** Of them, the old generation's (mark-compact, incremental marking steps), per 1000 requests. */
  majorGcsPerKiloRequest: number;
  newSpaceMiB: number;
  /** Share of the window's wall time the server's event loop was runnable but off its CPU (a neighbour had it). */
  waitShare: number;
  errors: number;
}

/** One scrape, read to the end, as Prometheus does it. */
async function scrapeOnce(url: string): Promise<void> {
  const res = await fetch(url);
  await res.text();
  if (!res.ok) throw new Error(`scrape of ${url}: HTTP ${res.status}`);
}

/**
 * Warm-up by requests, not seconds: JIT tiers follow call counts, and on a
 * busy host 4 s of load was a few thousand requests, after which the JIT
 * compiler threads still took 20–50 % of a window's CPU (and the event loop
 * ran code not yet optimised). Each fresh server takes chunks of load (and
 * a scrape, so the exporter's code is compiled too) until the share of
 * its CPU spent outside its event-loop thread falls under HELPER_SETTLED or
 * stops falling (within HELPER_PLATEAU of the chunk before: Express servers
 * on Node 20 still spent ~20 % there after 48 000 requests), WARM_UP_CHUNKS at least,
 * WARM_UP_MAX_CHUNKS at most.
 */
const WARM_UP_CHUNKS = SMOKE ? 1 : Number(process.env.BENCH_WARM_UP ?? 2);
const WARM_UP_MAX_CHUNKS = SMOKE ? 1 : 6;
const HELPER_SETTLED = 0.05;
const HELPER_PLATEAU = 0.03;
/** Warms a fresh server up (above); returns how many chunks it took. */
export async function warmUp(server: ServerHandle): Promise<number> {
  const chunk = WINDOW_REQUESTS[server.framework] * 2;
  let before = Number.NaN;
  for (let i = 1; ; i++) {
    const { server: w } = await server.window(() => load(server.url, chunk), { scrape: false });
    if (server.metricsUrl) await scrapeOnce(server.metricsUrl);
    const helpers = (w.cpuUs - w.mainUs) / w.cpuUs;
    const settled = helpers <= HELPER_SETTLED || Math.abs(helpers - before) <= HELPER_PLATEAU || Number.isNaN(helpers);
    before = helpers;
    if ((settled && i >= WARM_UP_CHUNKS) || i >= WARM_UP_MAX_CHUNKS) {
      return i;
    }
  }
}

/**
 * One window against one server: a scrape (its own CPU measured apart, with
 * no load), an unmeasured prime, then the measured requests. The scrape
 * stays out of the request window: at one per window it was 30× a 15 s
 * scrape interval's share, and whether it fell early or late in a short
 * window moved the figure; every instrumented variant is scraped the same
 * way, so the exporter's code and aggregates stay as hot as in production.
 */
export async function measureWindow(server: ServerHandle): Promise<Sample> {
  const metricsUrl = server.metricsUrl;
  const scrapeUs = metricsUrl ? (await server.window(() => scrapeOnce(metricsUrl), { scrape: false })).server.cpuUs : 0;
  if (PRIME_REQUESTS > 0) await load(server.url, PRIME_REQUESTS);
  const { result, server: w } = await server.window(() => loadWindow(server.url, server.framework), { scrape: false });
  if (w.requests === 0)
    throw new Error(
      `${server.framework}/${server.variant}${server.packagesFrom ? '@baseline' : ''} served no requests`,
    );
  return {
    cpuPerRequestUs: w.cpuUs / w.requests,
    vsBare: Number.NaN,
    // Per-sample averages depend on sampleInt; the rate over the whole run does not.
    rps: w.requests / (w.wallUs / 1e6),
    p99Ms: result.p99Ms,
    spans: w.spans,
    requests: w.requests,
    scrapeUs,
    helperShare: (w.cpuUs - w.mainUs) / w.cpuUs,
    gcShare: w.gcUs / w.cpuUs,
    systemShare: w.systemUs / w.cpuUs,
    gcsPerKiloRequest: (w.gcs * 1000) / w.requests,
    majorGcsPerKiloRequest: (w.majorGcs * 1000) / w.requests,
    newSpaceMiB: w.newSpaceBytes / 2 ** 20,
    waitShare: w.waitUs / w.wallUs,
    errors: result.errors,
  };
}
