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
        timeout: 150_000,
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
  // Load suites need a few seconds of server start-up and autocannon's whole-second windows.
  const cases: Array<[suite: string, goals: number]> = [
    ['hot-path', 3],
    ['detectors', 2],
    ['memory', 2],
    ['gpu', 2],
    ['loadgen', 3],
    ['server', 4],
    ['llama', 2],
    ['growth', 4],
    ['idle', 4],
  ];
  for (const [suite, goals] of cases) {
    it(`${suite} runs and prints its verdict line with figures`, { timeout: 180_000 }, async ({ expect }) => {
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
    });
  }
});

describe('allocations tool (smoke: BENCH_SMOKE=1)', () => {
  it('samples what each server allocates and finds what InferSignal adds, by origin', { timeout: 180_000 }, async ({
    expect,
  }) => {
    const { code, stdout, stderr } = await runSuite('allocations');
    expect(code, `exit code; stderr:\n${stderr.slice(-2000)}`).toBe(0);
    // `  infersignal-producer   8705    894 over bare  (windows …)`: a Fastify request allocates kilobytes, and the
    // producer export more than bare, its tracking object, ticket and hook among them.
    const row = (variant: string) =>
      new RegExp(`^  ${variant} +(\\d+) +(-?\\d+) over bare`, 'm').exec(stdout)?.slice(1).map(Number);
    const bare = row('bare');
    const producer = row('infersignal-producer');
    expect(bare, stdout.slice(-2000)).toBeDefined();
    expect(producer, stdout.slice(-2000)).toBeDefined();
    expect(bare![0]).toBeGreaterThan(1000);
    expect(producer![1]).toBeGreaterThan(50);
    expect(stdout).toMatch(/^ +\d+ {2}@infersignal\/core \(0 → \d+\)$/m);
  });
});

describe('weakmap-entries (smoke: BENCH_SMOKE=1)', () => {
  it('measures each mode in a process of its own and prints CPU and GC pauses per request', {
    timeout: 180_000,
  }, async ({ expect }) => {
    const { code, stdout, stderr } = await runSuite('weakmap-entries');
    expect(code, `exit code; stderr:\n${stderr.slice(-2000)}`).toBe(0);
    // `  entry-left     CPU  2006 ns/request, GC pauses  264 ns/request`
    for (const mode of ['none', 'entry-left', 'entry-deleted']) {
      const row = new RegExp(`^  ${mode} +CPU +(\\d+) ns/request, GC pauses +(\\d+) ns/request$`, 'm').exec(stdout);
      expect(row, stdout).not.toBeNull();
      // A request makes ~1 KB of objects: it cannot take no CPU at all.
      expect(Number(row![1])).toBeGreaterThan(0);
    }
  });
});

describe('paired tool (smoke: BENCH_SMOKE=1)', () => {
  it('judges each Fastify goal with an interval and a verdict', { timeout: 180_000 }, async ({ expect }) => {
    const { code, stdout, stderr } = await runSuite('pairs');
    expect(code, `exit code; stderr:\n${stderr.slice(-2000)}`).toBe(0);
    // `  fastify: producer export 1.081× bare (90 % interval 1.052–1.110; sets 1.08 1.07) — goal ≤ 1.10× undecided`
    const lines = stdout.match(
      /^ {2}fastify: .* \d\.\d{3}× \S+ \(90 % interval \d\.\d{3}–\d\.\d{3}; sets [\d. ]+\) — goal ≤ .*$/gm,
    );
    expect(lines, stdout.slice(-2000)).toHaveLength(3);
    // Two sets in smoke mode: too few to judge.
    for (const line of lines!) expect(line).toMatch(/ undecided$/);
    expect(stdout).not.toMatch(/NaN|Infinity/);
  });
});
