/**
 * `pnpm demo`, run for real in a short mode: the Fastify + ONNX example
 * server as a child process, the capacity probe, the staged ramp past
 * capacity, the report. Plus the two ways it must not leave a server
 * behind: a server that fails to start, and Ctrl-C mid-run.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const DEMO_MAIN = join(ROOT, 'examples/demo/src/main.ts');
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const tmp = mkdtempSync(join(tmpdir(), 'infersignal-demo-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the demo the way `pnpm demo` does (tsx, root tsconfig paths); `onStdout` may act on the output as it comes. */
function runDemo(
  env: Record<string, string>,
  timeoutMs: number,
  onStdout?: (text: string, child: ReturnType<typeof spawn>) => void,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, DEMO_MAIN], {
      cwd: ROOT,
      env: { ...process.env, TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      onStdout?.(stdout, child);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`demo did not finish within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

function serverPid(stdout: string): number {
  const match = /\(pid (\d+), metrics http:\/\/127\.0\.0\.1:\d+\/metrics/.exec(stdout);
  expect(match, stdout).not.toBeNull();
  return Number(match![1]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The server gets up to its shutdown grace to exit after the demo did. */
async function gone(pid: number, withinMs = 6000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !alive(pid);
}

describe('pnpm demo', () => {
  it('short mode: stage rows with numbers, alerts, and the lead time of the first warning', async () => {
    const out = join(tmp, 'demo.json');
    // A 16 s ramp (2.4 + 4.8 + 5.6 + 3.2 s): with start-up and probe, about 25 s. The limits below only catch a
    // demo that hangs.
    const run = await runDemo({ DEMO_SECONDS: '16', DEMO_OUT: out }, 120_000);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const { stdout } = run;

    // One row per stage: name, seconds, requests, sent/s, ok/s, latencies …
    for (const stage of ['0.5x', '0.9x', '1.1x', '2x']) {
      expect(stdout).toMatch(
        new RegExp(
          `^${stage.replace('.', '\\.')} \\d+/s +\\d+\\.\\d +\\d+ +\\d+\\.\\d +\\d+\\.\\d +(\\d+\\.\\d|-) `,
          'm',
        ),
      );
    }
    expect(stdout).toMatch(/^total +\d+\.\d +\d+ /m);
    expect(stdout).toContain('signal levels per second');
    // A lane per signal: one mark per second, a bar between stages.
    for (const series of [
      'capacity\\[infer\\]',
      'queue_wait\\[infer\\]',
      'queue_occupancy\\[infer\\]',
      'event_loop',
      'stream_interruptions',
      'model_load',
    ]) {
      expect(stdout).toMatch(new RegExp(`^ {2}${series} +[.wC]+(\\|[.wC]+){3}$`, 'm'));
    }

    const result = JSON.parse(readFileSync(out, 'utf8')) as {
      probe: { rps: number };
      factors: number[];
      ramp: {
        stages: { requests: number; targetRate: number }[];
        alerts: unknown[];
        firstFailure: unknown;
        leadTimes: { text: string }[];
      };
    };
    expect(result.probe.rps).toBeGreaterThan(0);
    expect(result.ramp.stages).toHaveLength(4);
    // The stages are derived from the capacity this run measured: 0.5×, 0.9×, 1.1×, 2× of it, in whole requests per second.
    expect(result.factors).toEqual([0.5, 0.9, 1.1, 2]);
    expect(result.ramp.stages.map((stage) => stage.targetRate)).toEqual(
      result.factors.map((factor) => Math.max(1, Math.round(factor * result.probe.rps))),
    );
    for (const stage of result.ramp.stages) expect(stage.requests).toBeGreaterThan(0);
    // Twice the capacity for 3 s raises at least one alert. The capacity was measured by this run on this machine,
    // and utilization warns above 0.8: only a server 2.5× faster during the ramp than during the probe could pass
    // the 2× stage without one.
    expect(result.ramp.alerts.length).toBeGreaterThan(0);
    expect(stdout).toMatch(/^alerts, first of each signal and level \(scraped from \/metrics by the bench\):$/m);
    if (result.ramp.firstFailure) {
      expect(stdout).toMatch(/^first failure: \w+ \(.+\) at \d+\.\d s$/m);
      expect(stdout).toMatch(/fired \d+\.\d s (before|after) the first/);
      expect(stdout).toMatch(
        /^>>> (first warning: .+ raised \d+\.\d s before the first failed request|no warning was standing when the first request failed) \(.+\)$/m,
      );
    } else {
      expect(stdout).toContain('>>> no failed request in this run');
    }
    expect(stdout).toContain(`JSON result: ${out}`);
    expect(await gone(serverPid(stdout))).toBe(true);
  }, 150_000);

  it('exits 1 with the reason when the server cannot start', async () => {
    // MODEL_PATH reaches the server through the environment: a missing model fails its start-up.
    const run = await runDemo({ MODEL_PATH: join(tmp, 'missing.onnx'), DEMO_SECONDS: '8' }, 60_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/failed to start/);
    expect(run.stderr).toMatch(/model file does not exist/);
  }, 90_000);

  it('Ctrl-C during the run stops the server and exits 130', async () => {
    let sent = false;
    const run = await runDemo({ DEMO_SECONDS: '16' }, 60_000, (text, child) => {
      if (!sent && text.includes('measuring capacity')) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    expect(sent).toBe(true);
    expect(run.code).toBe(130);
    expect(run.stdout).toContain('interrupted');
    expect(await gone(serverPid(run.stdout))).toBe(true);
  }, 90_000);
});
