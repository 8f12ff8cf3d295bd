/**
 * Loopback throughput regimes: one server, loaded window after window
 * exactly as the server suite loads it (lib/load.ts: a measured window by
 * wrk, or by autocannon where wrk is missing or BENCH_LOADER=autocannon;
 * the load generator on CPU 0, 32 connections, the server on CPU 1, an
 * unmeasured prime before each window), and per window its rate, the
 * server's CPU per request and busy share, and (autocannon, which runs in
 * this process) the load generator's.
 *
 * Under autocannon, on this 2-vCPU machine, the same server under the same
 * load ran at a top rate or at about 2/3 or 1/2 of it, with both processes
 * idle a third of the time, and the slower windows cost the server more CPU
 * per request; under wrk the server is 97–99 % busy in every window. Prints
 * only (docs/benchmarks.md cites what it showed).
 *
 *   pnpm build && pnpm --filter @infersignal/benchmarks regimes [--node 24]
 *   BENCH_ROUNDS=40  windows; BENCH_FRAMEWORKS=express; BENCH_VARIANTS=infersignal-producer (one variant); BENCH_LOADER
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { rounds, subset } from './lib/env';
import { LOADER, PRIME_REQUESTS, WINDOW_REQUESTS, WRK_SECONDS, load as loadUrl, loadWindow } from './lib/load';
import { FRAMEWORKS, VARIANTS, pinCpus, startServer } from './lib/servers';
import { spread } from './lib/stats';

/** A window under this share of the fastest one seen ran in a slower regime (the regimes are ~1, ~2/3, ~1/2 of it). */
const SLOWER_REGIME = 0.85;

const framework = subset('BENCH_FRAMEWORKS', FRAMEWORKS)[0]!;
const variant = subset('BENCH_VARIANTS', VARIANTS)[0]!;
const windows = rounds(40);
console.log(
  `CPUs: ${pinCpus()}; ${framework}/${variant}, ${windows} windows of ${LOADER === 'wrk' ? `${WRK_SECONDS} s (wrk)` : `${WINDOW_REQUESTS[framework]} requests (autocannon)`}`,
);

const server = await startServer(framework, variant);
const load = (amount: number) => loadUrl(server.url, amount);
try {
  for (let i = 0; i < 3; i++) await server.window(() => load(WINDOW_REQUESTS[framework] * 2), { scrape: false });
  const measured: Array<{ rate: number; cpuUs: number }> = [];
  for (let i = 0; i < windows; i++) {
    await load(PRIME_REQUESTS);
    const client = process.cpuUsage();
    const { server: w } = await server.window(() => loadWindow(server.url, framework), { scrape: false });
    const clientUs = process.cpuUsage(client);
    const rate = w.requests / (w.wallUs / 1e6);
    const cpuUs = w.cpuUs / w.requests;
    measured.push({ rate, cpuUs });
    // wrk runs in a process of its own: this process's CPU is not its.
    const clientBusy =
      LOADER === 'autocannon'
        ? `  load generator busy ${(((clientUs.user + clientUs.system) / w.wallUs) * 100).toFixed(0)} %`
        : '';
    console.log(
      `${String(i + 1).padStart(3)}  ${(rate / 1000).toFixed(1)}k req/s  server ${cpuUs.toFixed(1)} µs/req, busy ${((w.cpuUs / w.wallUs) * 100).toFixed(0)} %${clientBusy}`,
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
