/**
 * Smoke run of the benchmark suites (benchmarks/*.ts) with tiny durations
 * (BENCH_SMOKE=1): each must run to the end and print its verdict line
 * with numbers. Goals are not asserted here — tiny runs on a shared
 * machine say nothing about them; `pnpm bench:<suite>` does — and smoke
 * mode must leave docs/benchmarks.md alone.
 */
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const DOC = `${ROOT}docs/benchmarks.md`;

function runSuite(suite: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', `benchmarks/${suite}.ts`],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          TSX_TSCONFIG_PATH: `${ROOT}benchmarks/tsconfig.json`,
          BENCH_SMOKE: '1',
          BENCH_SECONDS: '',
          BENCH_ROUNDS: '',
          BENCH_TASK_MS: '',
        },
        // Ten suites at once on two cores, under a CPU-bound neighbour in CI: the server suite alone takes ~50 s.
        timeout: 360_000,
        maxBuffer: 16 * 2 ** 20,
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function docStamp(): string {
  return existsSync(DOC) ? `${statSync(DOC).mtimeMs}:${statSync(DOC).size}` : 'absent';
}

// The suites are separate processes that assert no goal in smoke mode: run side by side, the file takes as long
// as its longest suite.
describe.concurrent('benchmark suites (smoke: BENCH_SMOKE=1)', () => {
  // Load suites need a few seconds of server start-up and warm-up.
  const cases: Array<[suite: string, goals: number]> = [
    ['hot-path', 4],
    ['detectors', 2],
    ['memory', 2],
    ['gpu', 2],
    ['loadgen', 3],
    ['server', 4],
    ['llama', 2],
    ['growth', 4],
    ['idle', 4],
    ['fresh', 5],
  ];
  for (const [suite, goals] of cases) {
    it(`${suite} runs and prints its verdict line with figures`, { timeout: 400_000 }, async ({ expect }) => {
      const before = docStamp();
      const { code, stdout, stderr } = await runSuite(suite);
      expect(code, `exit code; stderr:\n${stderr.slice(-2000)}`).toBe(0);
      const lines = stdout.trim().split('\n');
      const verdict = [...lines].reverse().find((line) => line.startsWith(`verdict ${suite}: `));
      expect(verdict, `no 'verdict ${suite}:' line in:\n${stdout.slice(-2000)}`).toBeDefined();
      // Each goal is stated with its measured figure and judged.
      expect(verdict).toMatch(new RegExp(`\\[\\d/${goals} goals met\\]$`));
      expect(verdict!.match(/goal [^;]* (met|NOT met)/g)).toHaveLength(goals);
      expect(verdict).toMatch(/\d+(\.\d+)?\s*(×|µs|ns|ms|%|KiB|MiB|B)/);
      expect(verdict).not.toMatch(/NaN|Infinity|undefined/);
      expect(docStamp()).toBe(before);
      if (suite === 'fresh') {
        // Every endpoint of every run has its three phases (overload, block, overall), each P50 / P99 / max
        // overall. A smoke run's phases are short: a prober starved of CPU through the 1 s block sends nothing in
        // it, and its phase says so ('–'); the full run's verdict judges a phase without answers as not met.
        const triple = /^\d+(\.\d+)? \/ \d+(\.\d+)? \/ \d+(\.\d+)?$/;
        const rows = lines.filter((line) => line.startsWith('| Node'));
        expect(rows.length).toBeGreaterThanOrEqual(2);
        for (const row of rows) {
          const [overload, block, overall] = row
            .split('|')
            .map((c) => c.trim())
            .slice(3, 6);
          for (const phase of [overload, block]) expect(phase === '–' || triple.test(phase!), row).toBe(true);
          expect(overall).toMatch(triple);
        }
        expect(stdout).toMatch(
          /live values in the block: of \d+ scrapes sent in it, \d+ answered in it: \d+ equal, \d+ stale/,
        );
      }
    });
  }
});
