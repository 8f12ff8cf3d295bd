/**
 * Loopback throughput regimes, the server suite's largest noise: one
 * server, loaded window after window exactly as the server suite loads it
 * (lib/load.ts: autocannon in this process on CPU 0, 32 connections, the
 * server on CPU 1, an unmeasured prime before each window), and per window its rate, the
 * server's CPU per request and busy share, and the load generator's.
 *
 * On this 2-vCPU machine the same server under the same load runs at a top
 * rate or at about 2/3 or 1/2 of it, with both processes idle a third of
 * the time, and the slower windows cost the server more CPU per request.
 * The suite's ratios are per round, so a round whose windows fell in
 * different regimes compares the regimes; its sets and medians absorb it.
 * Prints only (docs/benchmarks.md cites what it showed).
 *
 *   pnpm build && pnpm --filter @infersignal/benchmarks regimes [--node 24]
 *   BENCH_ROUNDS=40  windows; BENCH_FRAMEWORKS=express; BENCH_VARIANTS=infersignal-producer (one variant)
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { rounds, subset } from './lib/env';
import { PRIME_REQUESTS, WINDOW_REQUESTS, load as loadUrl } from './lib/load';
import { FRAMEWORKS, VARIANTS, pinCpus, startServer } from './lib/servers';
import { spread } from './lib/stats';

/** A window under this share of the fastest one seen ran in a slower regime (the regimes are ~1, ~2/3, ~1/2 of it). */
const SLOWER_REGIME = 0.85;

const framework = subset('BENCH_FRAMEWORKS', FRAMEWORKS)[0]!;
const variant = subset('BENCH_VARIANTS', VARIANTS)[0]!;
const windows = rounds(40);
console.log(
  `CPUs: ${pinCpus()}; ${framework}/${variant}, ${windows} windows of ${WINDOW_REQUESTS[framework]} requests`,
);

const server = await startServer(framework, variant);
const load = (amount: number) => loadUrl(server.url, amount);
try {
  for (let i = 0; i < 3; i++) await server.window(() => load(WINDOW_REQUESTS[framework] * 2), { scrape: false });
  const measured: Array<{ rate: number; cpuUs: number }> = [];
  for (let i = 0; i < windows; i++) {
    await load(PRIME_REQUESTS);
    const client = process.cpuUsage();
    const { server: w } = await server.window(() => load(WINDOW_REQUESTS[framework]), { scrape: false });
    const clientUs = process.cpuUsage(client);
    const rate = w.requests / (w.wallUs / 1e6);
    const cpuUs = w.cpuUs / w.requests;
    measured.push({ rate, cpuUs });
    const clientBusy = (clientUs.user + clientUs.system) / w.wallUs;
    console.log(
      `${String(i + 1).padStart(3)}  ${(rate / 1000).toFixed(1)}k req/s  server ${cpuUs.toFixed(1)} µs/req, busy ${((w.cpuUs / w.wallUs) * 100).toFixed(0)} %  load generator busy ${(clientBusy * 100).toFixed(0)} %`,
    );
  }
  const top = Math.max(...measured.map((m) => m.rate));
  const summary = (label: string, list: typeof measured) =>
    list.length === 0
      ? `${label}: none`
      : `${label}: ${list.length} windows, ${(spread(list.map((m) => m.rate)).median / 1000).toFixed(1)}k req/s, server ${spread(list.map((m) => m.cpuUs)).median.toFixed(1)} µs/req (${Math.min(...list.map((m) => m.cpuUs)).toFixed(1)}–${Math.max(...list.map((m) => m.cpuUs)).toFixed(1)})`;
  console.log(
    summary(
      'top regime',
      measured.filter((m) => m.rate >= SLOWER_REGIME * top),
    ),
  );
  console.log(
    summary(
      'slower regimes',
      measured.filter((m) => m.rate < SLOWER_REGIME * top),
    ),
  );
} finally {
  await server.close();
}
