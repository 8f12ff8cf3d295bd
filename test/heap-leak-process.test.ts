/**
 * The heap-exhaustion precursor in real processes: a child Node with
 * `--max-old-space-size=128` (test/support/heap-leak-child.ts) that leaks
 * 2 MiB/s of small objects under 10 MiB/s of garbage until V8 aborts it,
 * and the same process holding a steady cache of half its heap instead.
 * Everything is real: V8, its collector, its heap statistics, the
 * monitor's one-second tick. The leak is paced by the wall clock, so a
 * slow machine leaks as much per second; what decides the precursor (how
 * many major GCs the leak gets) and what kills the process are both set by
 * what was allocated. `pnpm heap-leak-cells` runs other rates and limits
 * and prints the leads.
 */
import { describe, expect, it } from 'vitest';
import { runHealthyCell, runLeakCell } from './support/heap-leak-cell';

// The Node line this file runs on: CI runs every test on Node 20, 22 and 24 (scripts/on-node), so each line's V8
// is checked in its own leg.
const lines: [string][] = [[process.versions.node.split('.')[0]!]];

// The two processes run side by side (it.concurrent): each is paced by the wall clock and waits on it, not on the CPU.
describe.each(lines)('heap_exhaustion in a process with --max-old-space-size=128 (Node %s)', (major) => {
  it.concurrent('a 2 MiB/s leak: announced while the process runs, with a third of its life or more left', async () => {
    const cell = await runLeakCell({ node: major, limitMiB: 128, leakMiBs: 2, garbageMiBs: 10 });
    const context = JSON.stringify({ ...cell, stderr: cell.stderr.slice(-1500) }, null, 1);
    // It died of heap exhaustion, the failure the precursor is for, after a life of tens of seconds.
    expect(cell.abort, context).not.toBeNull();
    expect(cell.diedSeconds, context).toBeGreaterThan(10);
    const first = cell.firstExhaustion!;
    expect(first, context).not.toBeNull();
    expect(first.message, context).toMatch(
      /^heap_exhaustion (WARN|CRITICAL) on this process: process \d+ leaks JS heap: its live set grows [\d.]+ MiB\/s .* of its 128\.0 MiB old-generation limit \(--max-old-space-size\)/,
    );
    // Raised with a share of the leak's life left that does not depend on the machine's speed: V8's collections
    // and its abort both come with what was allocated.
    expect(cell.diedSeconds! - first.seconds, context).toBeGreaterThan(0);
    expect((cell.diedSeconds! - first.seconds) / cell.diedSeconds!, context).toBeGreaterThanOrEqual(0.3);
  }, 180_000);

  it.concurrent('a steady cache of half the heap under garbage: major GCs come, nothing is raised', async () => {
    const run = await runHealthyCell({ node: major, limitMiB: 128, seconds: 30, cacheMiBs: 64, garbageMiBs: 10 });
    const context = JSON.stringify({ ...run, stderr: run.stderr.slice(-1500) }, null, 1);
    expect(run.code, context).toBe(0);
    expect(run.alerts.map((a) => JSON.stringify(a))).toEqual([]);
    const done = run.heap!;
    expect(done, context).toMatchObject({ level: 'ok', exhaustionLevel: 'ok', exhaustionSeconds: null });
    expect(done.majorGcs as number, context).toBeGreaterThanOrEqual(5);
    expect(done.liveRatio as number, context).toBeGreaterThan(0.4);
  }, 180_000);
});
