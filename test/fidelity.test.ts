/**
 * The fidelity suite in its short mode: one shortened run of each scenario
 * against the real fastify-onnx server (a child process), judged on the
 * run's own numbers: the measured capacity sizes the load, the bench's
 * first failed request is the reference every alert is timed against.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  describeRun,
  runFidelity,
  ARRIVAL_TOLERANCE_MS,
  type FidelityResult,
  type RunFigures,
} from '../fidelity/suite';

let result: FidelityResult;

beforeAll(async () => {
  result = await runFidelity({ short: true });
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
    near(ramp.toRps, 1.5, ramp.capacityRps);
    const step = only('step');
    near(step.fromRps, 0.5, step.capacityRps);
    near(step.toRps, 2, step.capacityRps);
  });

  it('ramp: the overload fails, and a true precursor came before the first failure', () => {
    const run = only('ramp');
    expect(run.failureAtSeconds, `1.5× the measured capacity should fail: ${describeRun(run)}`).not.toBeNull();
    expect(run.firstTruePrecursor, describeRun(run)).not.toBeNull();
    expect(run.leadSeconds!, describeRun(run)).toBeGreaterThan(0);
    expect(run.met).toBe(true);
  });

  it('step: a true precursor no later than the first failure (within the arrival tolerance)', () => {
    const run = only('step');
    expect(run.failureAtSeconds, `2× the measured capacity should fail: ${describeRun(run)}`).not.toBeNull();
    expect(run.firstTruePrecursor, describeRun(run)).not.toBeNull();
    expect(run.leadSeconds!, describeRun(run)).toBeGreaterThanOrEqual(-ARRIVAL_TOLERANCE_MS / 1000);
    expect(run.met).toBe(true);
  });

  it('steady with a CPU-bound neighbour: no alert while nothing fails, and no failure unannounced', () => {
    const run = only('steady');
    expect(run.neighbour).not.toBeNull();
    if (run.failureAtSeconds === null) {
      // A healthy run: any alert is a false alert.
      expect(run.alerts, describeRun(run)).toEqual([]);
      expect(run.met).toBe(true);
    } else {
      // The machine starved the server until requests failed (60 % was not healthy here): then the
      // failure must have been announced, as in the step.
      expect(run.firstTruePrecursor, describeRun(run)).not.toBeNull();
      expect(run.leadSeconds!, describeRun(run)).toBeGreaterThanOrEqual(-ARRIVAL_TOLERANCE_MS / 1000);
    }
  });
});
