/**
 * `pnpm demo`, run for real in a short mode: the Fastify + ONNX example
 * server as a child process, the capacity probe, the staged ramp past
 * capacity, the report, judged on the run's own numbers. (The ways it must
 * not leave a server behind are in demo-exit.test.ts.)
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { judgePrecursors, type TimedSample } from '../examples/demo/src/precursors';
import { quantile } from '../examples/demo/src/probe';
import { gone, runDemo, serverPid } from './support/demo';

const tmp = mkdtempSync(join(tmpdir(), 'infersignal-demo-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** One snapshot with the given series active (`capacity[infer]:1`, `event_loop:2`). */
function sample(atMs: number, ...active: string[]): TimedSample {
  return {
    atMs,
    active: active.map((entry) => {
      const [series, level] = entry.split(':');
      const match = /^(\w+)(?:\[(.+)\])?$/.exec(series)!;
      const queue = match[2] ?? null;
      return { series, signal: match[1], subject: queue ? `queue "${queue}"` : null, queue, level: Number(level) };
    }),
  };
}

const CONTEXT = { failingQueues: ['infer'], healthyUntilMs: 5000, injected: new Set(['model_load']) };

describe("the demo's precursor judgement", () => {
  it('an event-loop warning standing since the healthy stage is not the precursor; the queue warning is', () => {
    const samples = [
      sample(1000, 'event_loop:1'),
      sample(6000, 'event_loop:1'),
      sample(7000, 'event_loop:1', 'capacity[infer]:1'),
      sample(9000, 'event_loop:1', 'capacity[infer]:2'),
      sample(11_000, 'event_loop:1', 'capacity[infer]:2', 'queue_wait[infer]:2'),
    ];
    const verdict = judgePrecursors(samples, 10_000, CONTEXT);
    expect(verdict.precursor).toMatchObject({
      series: 'capacity[infer]',
      fromMs: 7000,
      firstLevel: 1,
      level: 2,
      leadSeconds: 3,
    });
    expect(verdict.runs.find((r) => r.signal === 'event_loop')?.verdict).toBe('standing-other');
    expect(verdict.runs.find((r) => r.signal === 'queue_wait')?.verdict).toBe('after-failure');
  });

  it("the queue's shedding (queue_backpressure) standing just before the client saw its 503 is the failure, not its precursor", () => {
    const samples = [
      sample(1000),
      sample(6000, 'queue_occupancy[infer]:1'),
      sample(6400, 'queue_occupancy[infer]:2', 'queue_backpressure[infer]:2'),
    ];
    const verdict = judgePrecursors(samples, 6500, CONTEXT);
    expect(verdict.precursor).toMatchObject({ series: 'queue_occupancy[infer]', fromMs: 6000 });
    expect(verdict.runs.find((r) => r.signal === 'queue_backpressure')?.verdict).toBe('shedding');
    const alone = judgePrecursors([sample(1000), sample(6400, 'queue_backpressure[infer]:2')], 6500, CONTEXT);
    expect(alone.precursor).toBeNull();
  });

  it('an event-loop block that rose under load and stood to the failure is a precursor', () => {
    const samples = [sample(1000), sample(6000, 'event_loop:1'), sample(8000, 'event_loop:1', 'capacity[infer]:1')];
    expect(judgePrecursors(samples, 9000, CONTEXT).precursor).toMatchObject({ series: 'event_loop', leadSeconds: 3 });
  });

  it('a warning that cleared before the failure is a false alarm; a warning on another queue is not counted', () => {
    const samples = [
      sample(1000, 'latency_anomaly[infer]:1'),
      sample(2000),
      sample(3000, 'capacity[completions]:1', 'model_load[m]:1'),
      sample(4000, 'capacity[completions]:1'),
    ];
    const verdict = judgePrecursors(samples, 4500, CONTEXT);
    expect(verdict.precursor).toBeNull();
    expect(verdict.runs.map((r) => [r.series, r.verdict])).toEqual([
      ['latency_anomaly[infer]', 'false-alarm'],
      ['capacity[completions]', 'standing-other'],
      ['model_load[m]', 'injected'],
    ]);
  });

  it('a failure before any warning is a missed precursor, with the first warning after it', () => {
    const samples = [sample(1000), sample(2000), sample(3000, 'queue_wait[infer]:2')];
    const verdict = judgePrecursors(samples, 2500, CONTEXT);
    expect(verdict.precursor).toBeNull();
    expect(verdict.firstAfter).toMatchObject({ series: 'queue_wait[infer]', leadSeconds: -0.5 });
  });

  it('without a failure every run is judged as such', () => {
    const verdict = judgePrecursors([sample(1000, 'capacity[infer]:1'), sample(2000)], null, CONTEXT);
    expect(verdict.runs[0]).toMatchObject({ verdict: 'no-failure', leadSeconds: null, clearedAtMs: 2000 });
  });
});

interface DemoJson {
  probe: { rps: number; windows: number[]; refused: string[] };
  factors: number[];
  rampOffsetMs: number;
  headline: string;
  failingQueues: string[];
  snapshots: { atMs: number; active: { series: string }[] }[];
  precursor: {
    series: string;
    signal: string;
    subject: string | null;
    queue: string | null;
    firstLevel: number;
    fromMs: number;
    leadSeconds: number;
    verdict: string;
  } | null;
  alertRuns: { series: string; fromMs: number; verdict: string; leadSeconds: number | null }[];
  ramp: {
    stages: { requests: number; targetRate: number; startMs: number; durationMs: number }[];
    firstFailure: { atMs: number; detail: string } | null;
  };
}

describe('pnpm demo', () => {
  it("short mode: stage rows, lanes, and a headline that follows from the run's own numbers", async () => {
    const out = join(tmp, 'demo.json');
    // A 12 s ramp (1.8 + 3.6 + 4.2 + 2.4 s): with start-up and probe, about 20 s. Every assertion below follows
    // from the run's own numbers, whatever the ramp did. The limits only catch a demo that hangs.
    const run = await runDemo({ DEMO_SECONDS: '12', DEMO_OUT: out }, 150_000);
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
      'stream_interruptions\\[matmul-chain\\]',
      'model_load\\[matmul-chain\\]',
    ]) {
      expect(stdout).toMatch(new RegExp(`^ {2}${series} +[.wC]+(\\|[.wC]+){3}$`, 'm'));
    }

    const result = JSON.parse(readFileSync(out, 'utf8')) as DemoJson;
    // The capacity is the lower quartile of the measured windows (at least 5 run; those with failed requests left
    // out), and the stages are multiples of it.
    expect(result.probe.windows.length).toBeGreaterThan(0);
    expect(result.probe.windows.length + result.probe.refused.length).toBeGreaterThanOrEqual(5);
    expect(result.probe.rps).toBeCloseTo(quantile(result.probe.windows, 0.25), 6);
    expect(result.factors).toEqual([0.5, 0.9, 1.1, 2]);
    expect(result.ramp.stages.map((stage) => stage.targetRate)).toEqual(
      result.factors.map((factor) => Math.max(1, Math.round(factor * result.probe.rps))),
    );
    for (const stage of result.ramp.stages) expect(stage.requests).toBeGreaterThan(0);

    // The headline, checked against this run's own snapshots and first failure (the ramp's clock).
    const failure = result.ramp.firstFailure;
    const samples = result.snapshots.map((s) => ({ atMs: s.atMs - result.rampOffsetMs, active: s.active }));
    const healthyUntil = result.ramp.stages[0].startMs + result.ramp.stages[0].durationMs;
    expect(stdout).toContain(`>>> ${result.headline}`);
    if (!failure) {
      expect(result.headline).toBe('no failed request in this run');
    } else if (result.precursor) {
      const p = result.precursor;
      expect(p.verdict).toBe('precursor');
      // Raised before the failure, and standing in every snapshot from then to the failure.
      expect(p.fromMs).toBeLessThan(failure.atMs);
      expect(p.leadSeconds).toBeCloseTo((failure.atMs - p.fromMs) / 1000, 6);
      const between = samples.filter((s) => s.atMs >= p.fromMs && s.atMs < failure.atMs);
      expect(between.length).toBeGreaterThan(0);
      for (const s of between) expect(s.active.map((a) => a.series)).toContain(p.series);
      // About the failing resource: one of its queues, or a process-wide signal that rose after the healthy stage.
      if (p.queue !== null) expect(result.failingQueues).toContain(p.queue);
      else expect(p.fromMs).toBeGreaterThanOrEqual(healthyUntil);
      // The earliest such run.
      for (const r of result.alertRuns)
        if (r.verdict === 'precursor') expect(r.fromMs).toBeGreaterThanOrEqual(p.fromMs);
      const level = ['OK', 'WARN', 'CRITICAL'][p.firstLevel];
      expect(result.headline).toContain(
        `first warning: ${p.signal} ${level}${p.subject ? ` on ${p.subject}` : ' (process-wide)'}, raised ${p.leadSeconds.toFixed(1)} s before the first failed request (${failure.detail} at ${(failure.atMs / 1000).toFixed(1)} s`,
      );
    } else {
      // Missed: nothing about the failing queues stood in the last snapshot before the failure.
      expect(result.headline).toMatch(/^missed precursor: the first request failed/);
      const last = samples.filter((s) => s.atMs < failure.atMs).at(-1);
      for (const a of last?.active ?? [])
        expect(result.failingQueues.some((q) => a.series === `${a.series.split('[')[0]}[${q}]`)).toBe(false);
    }
    // The alert list and the JSON agree: each run's lead is printed with the same figure.
    for (const r of result.alertRuns.slice(0, 40)) {
      if (r.leadSeconds === null || r.leadSeconds <= 0) continue;
      if (r.fromMs > 0) expect(stdout).toContain(`raised at ${(r.fromMs / 1000).toFixed(1)} s`);
      expect(stdout).toContain(`${r.leadSeconds.toFixed(1)} s before the first failure`);
    }
    expect(stdout).toContain(`JSON result: ${out}`);
    expect(await gone(serverPid(stdout))).toBe(true);
  }, 180_000);
});
