/**
 * What a WeakMap entry per request costs when it is left for the collector
 * to clear, against one deleted when the request ends: the question behind
 * `@infersignal/http` deleting a re-parented (Express) response's entry once
 * the finished response is counted. A loop stands in for a server: each
 * "request" makes a response-sized object, links it to a small lifecycle,
 * allocates ~1 KB of garbage, and ends the request started 64 before
 * (64 in flight). Each mode runs in a process of its own, rounds
 * interleaved; CPU time and GC pause time per request, medians.
 *
 *   pnpm --filter @infersignal/benchmarks weakmap-entries [--node 24]   BENCH_ROUNDS=5
 *
 * Prints only; docs/benchmarks.md cites what it showed.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { execFileSync } from 'node:child_process';
import { PerformanceObserver } from 'node:perf_hooks';

const MODES = ['none', 'entry-left', 'entry-deleted'] as const;
type Mode = (typeof MODES)[number];
// BENCH_SMOKE=1: a short run that only shows the tool works (test/benchmarks-smoke.test.ts).
const SMOKE = process.env.BENCH_SMOKE === '1';
const REQUESTS = SMOKE ? 20_000 : 400_000;
const IN_FLIGHT = 64;
const ROUNDS = SMOKE ? 1 : Math.max(1, Math.round(Number(process.env.BENCH_ROUNDS || 5)));

async function measure(mode: Mode): Promise<{ cpuNs: number; gcNs: number }> {
  let gcMs = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  });
  observer.observe({ entryTypes: ['gc'] });
  const links = new WeakMap<object, { res: object | undefined; started: number }>();
  const inFlight = new Array<Record<string, unknown> | undefined>(IN_FLIGHT);
  let sink = 0;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i++) {
    const res: Record<string, unknown> = { statusCode: 200, finished: false, req: null, headers: [] };
    for (let p = 0; p < 12; p++) res[`p${p}`] = p;
    if (mode !== 'none') links.set(res, { res, started: i });
    const garbage: { j: number; s: string }[] = [];
    for (let j = 0; j < 20; j++) garbage.push({ j, s: `k${j}` });
    sink += garbage.length;
    const ended = inFlight[i % IN_FLIGHT];
    inFlight[i % IN_FLIGHT] = res;
    if (ended === undefined || mode === 'none') continue;
    // The lifecycle lets go of its response when it settles, as the real one does.
    const lifecycle = links.get(ended);
    if (lifecycle !== undefined) {
      lifecycle.res = undefined;
      sink += lifecycle.started;
    }
    if (mode === 'entry-deleted') links.delete(ended);
  }
  const cpu = process.cpuUsage(cpu0);
  // The observer hears of the last collections a turn later.
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  if (sink < 0) throw new Error('unreachable');
  return { cpuNs: ((cpu.user + cpu.system) * 1000) / REQUESTS, gcNs: (gcMs * 1e6) / REQUESTS };
}

const child = process.env.WEAKMAP_ENTRIES_MODE as Mode | undefined;
if (child !== undefined) {
  process.stdout.write(JSON.stringify(await measure(child)));
} else {
  const results = new Map<Mode, { cpuNs: number; gcNs: number }[]>(MODES.map((m) => [m, []]));
  for (let round = 0; round < ROUNDS; round++)
    for (const mode of MODES) {
      const out = execFileSync(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname], {
        env: { ...process.env, WEAKMAP_ENTRIES_MODE: mode },
        encoding: 'utf8',
      });
      results.get(mode)!.push(JSON.parse(out) as { cpuNs: number; gcNs: number });
    }
  const median = (values: number[]): number => values.sort((a, b) => a - b)[values.length >> 1]!;
  console.log(`weakmap entries (${process.version}): ${REQUESTS} requests, ${IN_FLIGHT} in flight, ${ROUNDS} rounds`);
  for (const mode of MODES) {
    const rows = results.get(mode)!;
    console.log(
      `  ${mode.padEnd(14)} CPU ${median(rows.map((r) => r.cpuNs))
        .toFixed(0)
        .padStart(5)} ns/request, GC pauses ${median(rows.map((r) => r.gcNs))
        .toFixed(0)
        .padStart(4)} ns/request`,
    );
  }
}
