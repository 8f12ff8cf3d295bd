/**
 * The server suite's goals (lib/servers.ts, SERVER_GOALS), each judged
 * with a confidence interval: only the servers the goals compare, two
 * processes of each variant, measured in mirrored rounds.
 *
 * The server suite measures a dozen variants a round, so the windows one
 * ratio compares lie up to half a minute apart, and this host's speed moves
 * by 10–15 % on that scale: one run's median ratio moved by ±7 % from one run
 * to the next (2026-12-06). Here a round measures each variant's first
 * process in rotated order and then each second process in the reverse
 * order (A₁ B₁ C₁ C₂ B₂ A₂), so the two windows of every variant are
 * centred on the same moment and a drift of the host's speed through the
 * round cancels from every ratio; a variant's figure in a round is the
 * geometric mean of its two processes (each process's own luck, a few per
 * cent for life, weighs half). Each goal's ratio is taken per round; its
 * estimate is the median over the rounds, with a 90 % interval from a
 * bootstrap of the rounds (seeded: the same rounds give the same interval).
 * A goal is *met* when the whole interval lies at or under its limit, *not
 * met* when it lies above, and *undecided* when the limit falls inside it:
 * the machine could not tell in that many rounds.
 *
 *   pnpm --filter @infersignal/benchmarks pairs [--node 24]
 *   BENCH_FRAMEWORKS=fastify  BENCH_ROUNDS=24 rounds  BENCH_PAIR_GOALS=all (the API export's goal too)
 *
 * Windows as the server suite's (lib/server-window.ts: wrk, a scrape and a
 * prime before each); servers pinned as there. Prints only;
 * docs/benchmarks.md cites what it showed.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { SMOKE, rounds, subset } from './lib/env';
import { measureWindow, warmUp } from './lib/server-window';
import {
  FRAMEWORKS,
  SERVER_GOALS,
  type Framework,
  type ServerGoal,
  type ServerHandle,
  type Variant,
  pinCpus,
  startServer,
} from './lib/servers';
import { judge, rotate, spread, verdictOf } from './lib/stats';

const ROUNDS = SMOKE ? 2 : rounds(24);
/** The API export's goal was met in every run of the suite: left out unless asked for. */
const ALL_GOALS = process.env.BENCH_PAIR_GOALS === 'all';
const FRAMEWORKS_RUN: readonly Framework[] = SMOKE ? ['fastify'] : subset('BENCH_FRAMEWORKS', FRAMEWORKS);

async function runFramework(framework: Framework, goals: readonly ServerGoal[]): Promise<void> {
  const variants = [...new Set(goals.flatMap(([, a, b]) => [a, b]))];
  const servers = new Map<Variant, [ServerHandle, ServerHandle]>();
  try {
    const started = await Promise.all(variants.flatMap((v) => [startServer(framework, v), startServer(framework, v)]));
    for (const [i, v] of variants.entries()) servers.set(v, [started[2 * i]!, started[2 * i + 1]!]);
    for (const s of started) await warmUp(s);
    /** Per round: each variant's two windows (CPU µs per request), first process and second. */
    const perRound: Array<Map<Variant, [number, number]>> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = rotate(variants, round);
      const cpu = new Map<Variant, [number, number]>(variants.map((v) => [v, [Number.NaN, Number.NaN]]));
      // Which process goes first alternates too, so neither is always the one measured at the round's edges.
      const first = round % 2;
      for (const v of order) cpu.get(v)![first] = (await measureWindow(servers.get(v)![first]!)).cpuPerRequestUs;
      for (const v of [...order].reverse())
        cpu.get(v)![1 - first] = (await measureWindow(servers.get(v)![1 - first]!)).cpuPerRequestUs;
      perRound.push(cpu);
    }
    const figure = (m: Map<Variant, [number, number]>, v: Variant) => Math.sqrt(m.get(v)![0] * m.get(v)![1]);
    console.log(`\n${framework} (${process.version}), ${ROUNDS} mirrored rounds, two processes a variant:`);
    for (const v of variants) {
      const us = spread(perRound.map((m) => figure(m, v)));
      // A/A: one process over the other, the luck a process keeps for life.
      const aa = spread(perRound.map((m) => m.get(v)![1] / m.get(v)![0]));
      console.log(
        `  ${v.padEnd(22)} ${us.median.toFixed(1)} µs a request (IQR ${us.q1.toFixed(1)}–${us.q3.toFixed(1)}); second process over first ${aa.median.toFixed(3)}×`,
      );
    }
    for (const [, a, b, limit, what] of goals) {
      const judged = judge(perRound.map((m) => figure(m, a) / figure(m, b)));
      console.log(
        `  ${framework}: ${what} ${judged.median.toFixed(3)}× ${b} (90 % interval ${judged.low.toFixed(3)}–${judged.high.toFixed(3)}) — goal ≤ ${limit.toFixed(2)}× ${verdictOf(judged, limit)}`,
      );
    }
  } finally {
    await Promise.all([...servers.values()].flat().map((s) => s.close()));
  }
}

console.log(`CPUs: ${pinCpus()}`);
for (const framework of FRAMEWORKS_RUN) {
  const goals = SERVER_GOALS.filter(([f, a]) => f === framework && (ALL_GOALS || a !== 'infersignal-api'));
  await runFramework(framework, goals);
}
