/**
 * The server suite's goals (lib/servers.ts, SERVER_GOALS), each judged
 * with a confidence interval: only the servers the goals compare, in sets
 * of freshly started processes, measured in mirrored rounds.
 *
 * Two noises decide a ratio on this host. Its speed drifts by 10–15 % over
 * tens of seconds, and the server suite measures a dozen variants a round,
 * so the windows one ratio compares lie up to half a minute apart: here a
 * round measures the goals' few variants in rotated order and then again
 * in the reverse order (A B C C B A), so each variant's two windows are
 * centred on the same moment and a steady drift through the round cancels
 * from every ratio (a variant's figure in the round is the geometric mean
 * of its two windows). And a process keeps its own luck for life: two bare
 * processes side by side read 7 % apart over 24 rounds (2026-12-06, Node 24),
 * more than the goals' margins, and no number of rounds on the same
 * processes averages that away. So each set starts one fresh process per
 * variant, warms them up as the server suite does, measures a few rounds
 * and stops them; a goal's figure in a set is the median of its per-round
 * ratios, its estimate the median over the sets, and its 90 % interval a
 * bootstrap over the sets (seeded: the same sets give the same interval),
 * so the interval carries the processes' luck as well as the host's. A
 * goal is *met* when the whole interval lies at or under its limit, *not
 * met* when it lies above, *undecided* when the limit falls inside it.
 *
 *   pnpm --filter @infersignal/benchmarks pairs [--node 24]
 *   BENCH_SETS=8 sets  BENCH_ROUNDS=4 rounds a set  BENCH_FRAMEWORKS=fastify
 *   BENCH_PAIR_GOALS=all (the API export's goal too: met in every run of the suite)
 *   BENCH_PAIR_VARIANTS=bare,bare-garbage,… instead of the goals: each variant over the first, no verdict
 *
 * Windows as the server suite's (lib/server-window.ts: wrk, a scrape and a
 * prime before each); servers pinned as there. Prints only;
 * docs/benchmarks.md cites what it showed.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { SMOKE, orderedSubset, positive, rounds, subset } from './lib/env';
import { measureWindow, warmUp, type Sample } from './lib/server-window';
import {
  DIAGNOSTIC_VARIANTS,
  FRAMEWORKS,
  SERVER_GOALS,
  VARIANTS,
  type Framework,
  type ServerGoal,
  type Variant,
  pinCpus,
  startServer,
} from './lib/servers';
import { judge, rotate, spread, verdictOf } from './lib/stats';

const SETS = SMOKE ? 2 : Math.round(positive('BENCH_SETS', 8));
const ROUNDS_PER_SET = SMOKE ? 1 : rounds(4);
/** The API export's goal was met in every run of the suite: left out unless asked for. */
const ALL_GOALS = process.env.BENCH_PAIR_GOALS === 'all';
/** Instead of the goals: these variants, each over the first, with intervals and no verdict (BENCH_PAIR_VARIANTS). */
const COMPARED = orderedSubset<Variant>('BENCH_PAIR_VARIANTS', [...VARIANTS, ...DIAGNOSTIC_VARIANTS], []);
const FRAMEWORKS_RUN: readonly Framework[] = SMOKE ? ['fastify'] : subset('BENCH_FRAMEWORKS', FRAMEWORKS);

/** One set: per round, each variant's figure (CPU µs per request, the geometric mean of its two windows). */
type SetRounds = Array<Map<Variant, number>>;
/** One set's rounds, and every window's split (below) by variant. */
interface SetResult {
  rounds: SetRounds;
  splits: Map<Variant, Split[]>;
}
/** Every window's CPU a request split by where it went (µs): the event-loop thread's user time, the kernel, other threads. */
interface Split {
  user: number;
  kernel: number;
  helpers: number;
}

function splitOf(sample: Sample): Split {
  const cpu = sample.cpuPerRequestUs;
  // Other threads (JIT compilers, GC helpers) run user code; the kernel share is the whole process's.
  return {
    user: cpu * (1 - sample.helperShare - sample.systemShare),
    kernel: cpu * sample.systemShare,
    helpers: cpu * sample.helperShare,
  };
}

async function measureSet(framework: Framework, variants: readonly Variant[], set: number): Promise<SetResult> {
  const started = await Promise.all(variants.map((v) => startServer(framework, v)));
  try {
    const servers = new Map(variants.map((v, i) => [v, started[i]!]));
    for (const s of started) await warmUp(s);
    const rounds: SetRounds = [];
    const splits = new Map(variants.map((v): [Variant, Split[]] => [v, []]));
    for (let round = 0; round < ROUNDS_PER_SET; round++) {
      const order = rotate(variants, set + round);
      const window = async (v: Variant) => {
        const sample = await measureWindow(servers.get(v)!);
        splits.get(v)!.push(splitOf(sample));
        return sample.cpuPerRequestUs;
      };
      const first = new Map<Variant, number>();
      for (const v of order) first.set(v, await window(v));
      const figures = new Map<Variant, number>();
      for (const v of [...order].reverse()) figures.set(v, Math.sqrt(first.get(v)! * (await window(v))));
      rounds.push(figures);
    }
    return { rounds, splits };
  } finally {
    await Promise.all(started.map((s) => s.close()));
  }
}

async function runFramework(framework: Framework, goals: readonly ServerGoal[]): Promise<void> {
  const variants = [...new Set(goals.flatMap(([, a, b]) => [a, b]))];
  const results: SetResult[] = [];
  for (let set = 0; set < SETS; set++) results.push(await measureSet(framework, variants, set));
  const sets = results.map((result) => result.rounds);
  console.log(
    `\n${framework} (${process.version}), ${SETS} sets of fresh processes, ${ROUNDS_PER_SET} mirrored round${ROUNDS_PER_SET === 1 ? '' : 's'} each:`,
  );
  for (const v of variants) {
    // Each set's median: how far apart the sets' processes land is the luck the interval has to carry.
    const perSet = spread(sets.map((rounds) => spread(rounds.map((m) => m.get(v)!)).median));
    const windows = results.flatMap((result) => result.splits.get(v)!);
    const part = (key: keyof Split) => spread(windows.map((split) => split[key])).median.toFixed(1);
    console.log(
      `  ${v.padEnd(22)} ${perSet.median.toFixed(1)} µs a request (sets ${perSet.min.toFixed(1)}–${perSet.max.toFixed(1)}); medians of its windows: event-loop thread's user time ${part('user')}, kernel ${part('kernel')}, other threads ${part('helpers')}`,
    );
  }
  for (const [, a, b, limit, what] of goals) {
    const judged = judge(sets.map((rounds) => spread(rounds.map((m) => m.get(a)! / m.get(b)!)).median));
    const verdict = Number.isFinite(limit) ? ` — goal ≤ ${limit.toFixed(2)}× ${verdictOf(judged, limit)}` : '';
    console.log(
      `  ${framework}: ${what} ${judged.median.toFixed(3)}× ${b} (90 % interval ${judged.low.toFixed(3)}–${judged.high.toFixed(3)}; sets ${judged.ratios.map((r) => r.toFixed(2)).join(' ')})${verdict}`,
    );
  }
}

console.log(`CPUs: ${pinCpus()}`);
for (const framework of FRAMEWORKS_RUN) {
  const goals =
    COMPARED.length > 1
      ? COMPARED.slice(1).map((v): ServerGoal => [framework, v, COMPARED[0]!, Number.NaN, v])
      : SERVER_GOALS.filter(([f, a]) => f === framework && (ALL_GOALS || a !== 'infersignal-api'));
  await runFramework(framework, goals);
}
