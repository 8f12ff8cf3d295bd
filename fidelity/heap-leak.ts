/**
 * The heap-leak scenario of the fidelity suite: real processes
 * (test/support/heap-leak-child.ts) with `--max-old-space-size=LIMIT` that
 * leak RATE MiB/s of small objects under 10 MiB/s of garbage until V8
 * aborts them, over a grid of leak rates × heap limits, and healthy
 * processes (a steady cache of half the heap under the same garbage) that
 * must raise nothing for the healthy run's length.
 *
 * The leak is paced by the wall clock and a cell spends its life waiting on
 * it, so the repeats of a cell and the cells themselves run side by side,
 * as many at once as a memory budget allows (each process reaches its limit
 * before it dies), the longest first. A cell whose expected life (the leak
 * filling 80 % of the limit) exceeds the life bound is left out, and the
 * doc says so.
 */
import { runHealthyCell, runLeakCell, type HealthyCell, type LeakCell } from '../test/support/heap-leak-cell';

/** Where the leak must be announced: ≥ 10 s and ≥ 30 % of the leak's life before the abort. */
export const HEAP_LEAD_GOAL = { seconds: 10, share: 0.3 } as const;

export interface HeapLeakOptions {
  /** Node majors (default 20). */
  nodes?: readonly string[];
  /** Heap limits, MiB (`--max-old-space-size`). */
  limitsMiB?: readonly number[];
  /** Leak rates, MiB/s. */
  ratesMiBs?: readonly number[];
  repeats: number;
  /** Garbage churned beside the leak, MiB/s. */
  garbageMiBs?: number;
  /** Cells whose expected life exceeds this are left out (s). */
  lifeBoundSeconds?: number;
  /** Length of each healthy run (s). */
  healthySeconds?: number;
  /** Sum of the heap limits of the processes running at once (MiB). */
  memoryBudgetMiB?: number;
  /**
   * Leak cells running at once (default 3): a cell waits on the wall clock, but its collections near the limit
   * are seconds of CPU, and cells that starve each other leak in bursts their collections then misread.
   */
  concurrency?: number;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

export interface HeapLeakRun {
  node: string;
  limitMiB: number;
  leakMiBs: number;
  repeat: number;
  /** Seconds from the leak's start to the abort; null when the backstop killed it. */
  diedSeconds: number | null;
  abort: string | null;
  firstExhaustion: { level: string; seconds: number } | null;
  firstHeadroom: { level: string; seconds: number } | null;
  leadSeconds: number | null;
  leadShare: number | null;
  met: boolean;
  /** The end of its stderr where it missed (JSON only). */
  stderrTail?: string;
}

interface HeapHealthyRun {
  node: string;
  limitMiB: number;
  cacheMiBs: number;
  seconds: number;
  alerts: HealthyCell['alerts'];
  majorGcs: number | null;
  liveRatio: number | null;
  met: boolean;
  stderrTail?: string;
}

export interface HeapLeakFigures {
  garbageMiBs: number;
  lifeBoundSeconds: number;
  memoryBudgetMiB: number;
  concurrency: number;
  /** Cells left out: expected life over the bound. */
  dropped: { node: string; limitMiB: number; leakMiBs: number; expectedLifeSeconds: number }[];
  runs: HeapLeakRun[];
  healthy: HeapHealthyRun[];
  wallSeconds: number;
}

/** The leak's expected life: it fills ~80 % of the limit (where V8 gives up, see core's heap signal). */
function expectedLifeSeconds(limitMiB: number, leakMiBs: number): number {
  return (0.8 * limitMiB) / leakMiBs;
}

function leakRunMet(cell: Pick<HeapLeakRun, 'leadSeconds' | 'leadShare' | 'abort'>): boolean {
  return (
    cell.abort !== null &&
    cell.leadSeconds !== null &&
    cell.leadSeconds >= HEAP_LEAD_GOAL.seconds &&
    (cell.leadShare ?? 0) >= HEAP_LEAD_GOAL.share
  );
}

function toRun(cell: LeakCell, limitMiB: number, leakMiBs: number, repeat: number): HeapLeakRun {
  const run = {
    node: cell.version,
    limitMiB,
    leakMiBs,
    repeat,
    diedSeconds: cell.diedSeconds,
    abort: cell.abort,
    firstExhaustion: cell.firstExhaustion && {
      level: cell.firstExhaustion.level,
      seconds: cell.firstExhaustion.seconds,
    },
    firstHeadroom: cell.firstHeadroom && { level: cell.firstHeadroom.level, seconds: cell.firstHeadroom.seconds },
    leadSeconds: cell.leadSeconds,
    leadShare: cell.leadShare,
  };
  const met = leakRunMet(run);
  return { ...run, met, ...(met ? {} : { stderrTail: cell.stderr.slice(-600) }) };
}

export async function runHeapLeak(options: HeapLeakOptions): Promise<HeapLeakFigures> {
  const started = Date.now();
  const log = options.log ?? (() => {});
  const nodes = options.nodes ?? ['20'];
  const limits = options.limitsMiB ?? [128, 512, 1024];
  const rates = options.ratesMiBs ?? [0.5, 2, 5];
  const garbageMiBs = options.garbageMiBs ?? 10;
  const lifeBoundSeconds = options.lifeBoundSeconds ?? 450;
  const memoryBudgetMiB = options.memoryBudgetMiB ?? 12 * 1024;
  const healthySeconds = options.healthySeconds ?? 600;
  const concurrency = options.concurrency ?? 3;
  const figures: HeapLeakFigures = {
    garbageMiBs,
    lifeBoundSeconds,
    memoryBudgetMiB,
    concurrency,
    dropped: [],
    runs: [],
    healthy: [],
    wallSeconds: 0,
  };
  const jobs: { node: string; limitMiB: number; leakMiBs: number; repeat: number; life: number }[] = [];
  for (const node of nodes)
    for (const limitMiB of limits)
      for (const leakMiBs of rates) {
        const life = expectedLifeSeconds(limitMiB, leakMiBs);
        if (life > lifeBoundSeconds) {
          figures.dropped.push({ node, limitMiB, leakMiBs, expectedLifeSeconds: life });
          continue;
        }
        for (let repeat = 1; repeat <= options.repeats; repeat++) jobs.push({ node, limitMiB, leakMiBs, repeat, life });
      }
  // Longest first, so the run ends with the short cells filling the gaps.
  jobs.sort((a, b) => b.life - a.life || b.limitMiB - a.limitMiB);

  // The healthy runs, one per Node line and limit, from the start and beside everything else; their heaps count
  // against the budget for their whole length.
  let inUseMiB = 0;
  const healthy = nodes.flatMap((node) =>
    limits.map((limitMiB) => {
      inUseMiB += limitMiB;
      const cacheMiBs = Math.round(limitMiB / 2);
      return runHealthyCell({ node, limitMiB, seconds: healthySeconds, cacheMiBs, garbageMiBs }).then((cell) => {
        inUseMiB -= limitMiB;
        const heap = cell.heap ?? {};
        const run: HeapHealthyRun = {
          node,
          limitMiB,
          cacheMiBs,
          seconds: healthySeconds,
          alerts: cell.alerts,
          majorGcs: typeof heap.majorGcs === 'number' ? heap.majorGcs : null,
          liveRatio: typeof heap.liveRatio === 'number' ? heap.liveRatio : null,
          met: cell.code === 0 && cell.alerts.length === 0 && cell.heap !== null,
          ...(cell.code === 0 ? {} : { stderrTail: cell.stderr.slice(-600) }),
        };
        log(
          `heap-leak healthy: Node ${node}, limit ${limitMiB} MiB, cache ${cacheMiBs} MiB, ${healthySeconds} s: ` +
            `${run.alerts.length} alert(s), ${run.majorGcs ?? '?'} major GCs, live ratio ${run.liveRatio?.toFixed(2) ?? '?'} — ${run.met ? 'met' : 'NOT met'}`,
        );
        figures.healthy.push(run);
      });
    }),
  );

  const running = new Set<Promise<void>>();
  while (jobs.length > 0 && !options.signal?.aborted) {
    const at = running.size >= concurrency ? -1 : jobs.findIndex((job) => inUseMiB + job.limitMiB <= memoryBudgetMiB);
    if (at < 0) {
      await Promise.race(running);
      continue;
    }
    const [job] = jobs.splice(at, 1);
    inUseMiB += job.limitMiB;
    const done: Promise<void> = runLeakCell({
      node: job.node,
      limitMiB: job.limitMiB,
      leakMiBs: job.leakMiBs,
      garbageMiBs,
    })
      .then((cell) => {
        const run = toRun(cell, job.limitMiB, job.leakMiBs, job.repeat);
        figures.runs.push(run);
        log(`  ${describeLeakRun(run)}`);
      })
      .catch((error: unknown) => log(`  heap-leak cell failed to run: ${(error as Error).message}`))
      .finally(() => {
        inUseMiB -= job.limitMiB;
        running.delete(done);
      });
    running.add(done);
    // Starts are spread a little: each process's start-up (tsx, the monitor) is a second of CPU.
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  await Promise.all(running);
  await Promise.all(healthy);
  figures.runs.sort(
    (a, b) => a.node.localeCompare(b.node) || a.limitMiB - b.limitMiB || a.leakMiBs - b.leakMiBs || a.repeat - b.repeat,
  );
  figures.healthy.sort((a, b) => a.node.localeCompare(b.node) || a.limitMiB - b.limitMiB);
  figures.wallSeconds = (Date.now() - started) / 1000;
  return figures;
}

function raised(r: { level: string; seconds: number } | null, name: string): string {
  return r ? `${name} ${r.level.toUpperCase()} at ${r.seconds.toFixed(1)} s` : `${name} never`;
}

function describeLeakRun(run: HeapLeakRun): string {
  return (
    `heap-leak Node ${run.node}, limit ${run.limitMiB} MiB, leak ${run.leakMiBs} MiB/s #${run.repeat}: ` +
    `died ${run.diedSeconds?.toFixed(1) ?? 'no'} s after the leak began (${run.abort ?? 'killed by the backstop'}); ` +
    `${raised(run.firstExhaustion, 'heap_exhaustion')}, ${raised(run.firstHeadroom, 'heap_headroom')}; ` +
    `lead ${run.leadSeconds?.toFixed(1) ?? '—'} s = ${run.leadShare === null ? '—' : (run.leadShare * 100).toFixed(0)} % of its life — ${run.met ? 'met' : 'NOT met'}`
  );
}
