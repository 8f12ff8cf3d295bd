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
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { runLeakCell } from './support/heap-leak-cell';

const CHILD = fileURLToPath(new URL('./support/heap-leak-child.ts', import.meta.url));
const ROOT_TSCONFIG = fileURLToPath(new URL('../tsconfig.json', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

// The Node line this file runs on: CI runs every test on Node 20, 22 and 24 (scripts/on-node), so each line's V8
// is checked in its own leg.
const lines: [string, string][] = [[process.versions.node.split('.')[0]!, process.execPath]];

/** The healthy variant to its end: its output lines and exit code. */
function runHealthy(node: string): Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, ['--max-old-space-size=128', '--import', TSX, CHILD], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TSX_TSCONFIG_PATH: ROOT_TSCONFIG, LIVE_S: '30', CACHE_MIBS: '64', GARBAGE_MIBS: '10' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => {
      stdout += data.toString();
    });
    child.stderr.on('data', (data: Buffer) => {
      stderr = (stderr + data.toString()).slice(-5000);
    });
    const backstop = setTimeout(() => child.kill('SIGKILL'), 150_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(backstop);
      resolve({
        code,
        stderr,
        lines: stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as Record<string, unknown>),
      });
    });
  });
}

describe.each(lines)('heap_exhaustion in a process with --max-old-space-size=128 (Node %s)', (major, node) => {
  it('a 2 MiB/s leak: announced while the process runs, with a third of its life or more left', async () => {
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

  it('a steady cache of half the heap under garbage: major GCs come, nothing is raised', async () => {
    const run = await runHealthy(node);
    const context = JSON.stringify({ ...run, stderr: run.stderr.slice(-1500) }, null, 1);
    expect(run.code, context).toBe(0);
    expect(run.lines.filter((l) => 'alert' in l).map((l) => JSON.stringify(l))).toEqual([]);
    const done = run.lines.find((l) => 'done' in l)?.done as Record<string, unknown>;
    expect(done, context).toMatchObject({ level: 'ok', exhaustionLevel: 'ok', exhaustionSeconds: null });
    expect(done.majorGcs as number, context).toBeGreaterThanOrEqual(5);
    expect(done.liveRatio as number, context).toBeGreaterThan(0.4);
  }, 180_000);
});
