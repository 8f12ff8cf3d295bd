/**
 * The fidelity suite in its short mode: one shortened run of each scenario
 * against the real fastify-onnx server (a child process), judged on the
 * run's own numbers: the measured capacity sizes the load, the bench's
 * first failed request is the reference every alert is timed against.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAlertLine } from '../fidelity/server';
import {
  describeRun,
  judgeAlerts,
  runFidelity,
  ARRIVAL_TOLERANCE_MS,
  RAMP_TO,
  SCENARIOS,
  type FidelityResult,
  type RunFigures,
} from '../fidelity/suite';

let result: FidelityResult;

beforeAll(async () => {
  // The load scenarios; each fault scenario has its own test file.
  // (halving is a long-mode scenario: its queue fills at a fifth of the capacity, too slow for a short run.)
  result = await runFidelity({ short: true, scenarios: SCENARIOS.filter((s) => s !== 'halving') });
  // Every alert of the run, for a look after a red test.
  const dir = fileURLToPath(new URL('../.tmp/fidelity/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}short-test.json`, `${JSON.stringify(result, null, 2)}\n`);
}, 300_000);

function only(scenario: RunFigures['scenario']): RunFigures {
  const runs = result.runs.filter((r) => r.scenario === scenario);
  expect(runs).toHaveLength(1);
  return runs[0];
}

describe('fidelity, judging alerts', () => {
  it("reads the server's alert lines with their subjects", () => {
    expect(
      parseAlertLine(
        '[alert] queue_wait warn -> critical: queue_wait CRITICAL on queue "infer": queue wait P95 1.2 s > 1 s',
      ),
    ).toMatchObject({ signal: 'queue_wait', level: 'critical', labels: { queue: 'infer' } });
    expect(
      parseAlertLine('[alert] model_load ok -> warn: model_load WARN on model "m", queue "a b": 2.1 > 1.5'),
    ).toMatchObject({ signal: 'model_load', level: 'warn', labels: { model: 'm', queue: 'a b' } });
    expect(parseAlertLine('[alert] event_loop ok -> warn: event_loop WARN on this process: 310 ms')).toMatchObject({
      signal: 'event_loop',
      labels: {},
    });
    expect(parseAlertLine('InferSignal fastify-onnx example on http://127.0.0.1:1')).toBeNull();
  });

  it('true before the failure, late after it, false about another subject or where nothing failed', () => {
    const record = (signal: string, labels: Record<string, string>, atMs: number) => ({
      signal,
      level: 'warn',
      labels,
      atMs,
      source: 'callback' as const,
    });
    const records = [
      record('capacity', { queue: 'infer' }, 1000),
      record('capacity', { queue: 'completions' }, 1500),
      record('event_loop', {}, 1800),
      record('queue_wait', { queue: 'infer' }, 2030),
      record('queue_occupancy', { queue: 'infer' }, 2100),
      // Announced by the request it sheds, at the failure: the failure itself.
      record('queue_backpressure', { queue: 'infer' }, 2000),
    ];
    expect(judgeAlerts(records, 2000, 50).map((a) => a.verdict)).toEqual([
      'true',
      'false',
      'process',
      'shedding',
      'true',
      'late',
    ]);
    expect(judgeAlerts(records, null, 50).every((a) => a.verdict === 'false')).toBe(true);
  });
});

describe('fidelity, short mode', () => {
  it('sizes every load from a capacity measured on that server', () => {
    expect(result.capacities).toHaveLength(3);
    for (const capacity of result.capacities) {
      expect(capacity.windows).toHaveLength(5);
      expect(capacity.rps).toBeGreaterThan(0);
    }
    const near = (rate: number, factor: number, capacity: number): void =>
      expect(Math.abs(rate - factor * capacity)).toBeLessThanOrEqual(1);
    const steady = only('steady');
    near(steady.fromRps, 0.6, steady.capacityRps);
    const ramp = only('ramp');
    near(ramp.fromRps, 0.3, ramp.capacityRps);
    near(ramp.toRps, RAMP_TO.short, ramp.capacityRps);
    const step = only('step');
    near(step.fromRps, 0.5, step.capacityRps);
    near(step.toRps, 2, step.capacityRps);
    // Capacities are measured in the runs' order. Steady is sized from the measured figure; the overloads from
    // no less than the fastest window / 1.25, as a neighbour's load slows windows and may ease before the peak.
    const capacityOf = (run: (typeof result.runs)[number]) => result.capacities[result.runs.indexOf(run)]!;
    expect(steady.capacityRps).toBe(capacityOf(steady).rps);
    for (const run of [ramp, step]) {
      const capacity = capacityOf(run);
      expect(capacity.peakRps).toBe(Math.max(...capacity.windows.map((w) => w.throughputRps)));
      expect(run.capacityRps).toBe(Math.max(capacity.rps, capacity.peakRps / 1.25));
    }
  });

  it('ramp: the overload fails, and a true precursor came no later than the first failure (within the arrival tolerance)', () => {
    const run = only('ramp');
    expect(
      run.failureAtSeconds,
      `${RAMP_TO.short}× the measured capacity should fail: ${describeRun(run)}`,
    ).not.toBeNull();
    expect(run.firstTruePrecursor, describeRun(run)).not.toBeNull();
    // Ordering only, as step: the short ramp fills its queue too fast for a predictive lead (see goalMet).
    expect(run.leadSeconds!, describeRun(run)).toBeGreaterThanOrEqual(-ARRIVAL_TOLERANCE_MS / 1000);
    expect(run.met).toBe(true);
  });

  it('step: a true precursor no later than the first failure (within the arrival tolerance)', () => {
    const run = only('step');
    expect(run.failureAtSeconds, `2× the measured capacity should fail: ${describeRun(run)}`).not.toBeNull();
    expect(run.firstTruePrecursor, describeRun(run)).not.toBeNull();
    expect(run.leadSeconds!, describeRun(run)).toBeGreaterThanOrEqual(-ARRIVAL_TOLERANCE_MS / 1000);
    expect(run.met).toBe(true);
    // What led up to it is kept: the seconds around the first failure, each with the generator's lateness.
    const failureSecond = Math.floor(run.failureAtSeconds!);
    expect(run.nearFirstTrouble.map((p) => p.second)).toContain(failureSecond);
    expect(run.nearFirstTrouble.every((p) => p.second >= failureSecond - 15 && p.second <= failureSecond + 5)).toBe(
      true,
    );
    expect(run.nearFirstTrouble.every((p) => typeof p.sendLagMs === 'number')).toBe(true);
    expect(run.worstSendLag).not.toBeNull();
    // And the server's main thread over the same seconds. The first failure comes a fraction of a second after
    // the step, so its second is mostly the 0.5× stage; in the seconds after it, at 2× its capacity, the thread
    // is busy (on a CPU or waiting for one) most of each second, however busy the machine. No second holds
    // more than a second of it.
    if (existsSync('/proc/self/task')) {
      const thread = run.threadNearFirstTrouble;
      expect(thread.map((s) => s.second)).toContain(failureSecond);
      const busy = (s: (typeof thread)[number]) => s.onCpuMs + s.waitMs;
      const after = thread.filter((s) => s.second >= failureSecond && s.second <= failureSecond + 3);
      expect(Math.max(...after.map(busy)), JSON.stringify(thread)).toBeGreaterThan(500);
      expect(Math.max(...thread.map(busy)), JSON.stringify(thread)).toBeLessThan(1500);
    }
  });

  it('steady with a CPU-bound neighbour: every alert judged, no failure unannounced', () => {
    const run = only('steady');
    expect(run.neighbour).not.toBeNull();
    // "No alert while nothing fails" is the steady goal, judged by `pnpm fidelity` over repeated 10-minute
    // runs and written into docs/fidelity.md: on a shared 2-core machine one 10 s run is not yet quiet (the
    // capacity signal's service time, measured in wall time, grows when the neighbour takes the CPU).
    // What one short run can show for certain: every alert is judged false where nothing failed, and a
    // failure (the machine starving the server) was announced, as in the step.
    if (run.failureAtSeconds === null) {
      expect(run.falseAlerts).toEqual(run.alerts);
      expect(run.met).toBe(run.alerts.length === 0);
    } else {
      expect(run.firstTruePrecursor, describeRun(run)).not.toBeNull();
      expect(run.leadSeconds!, describeRun(run)).toBeGreaterThanOrEqual(-ARRIVAL_TOLERANCE_MS / 1000);
    }
  });
});
