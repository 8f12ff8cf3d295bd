import { describe, expect, it } from 'vitest';
import { METRICS } from '../src/index';
import { sleep, until } from '../../../test/support/async';
import { setup } from './helpers';

type TestMonitor = ReturnType<typeof setup>;

/** Loads `model` once per duration (s) on the test's clock; returns the model_load level after each. */
async function loadAll(t: TestMonitor, seconds: readonly number[], model = 'resnet'): Promise<string[]> {
  const levels: string[] = [];
  for (const s of seconds) {
    await t.monitor.modelLoad(model, 'reload', () => {
      t.advance(s * 1000);
    });
    levels.push(t.monitor.snapshot().models[model].level);
  }
  return levels;
}

const modelLoadAlerts = (t: TestMonitor) => t.alerts.filter((a) => a.signal === 'model_load');

/** A monitor on the real clock (no detector tick) with resnet's baseline set, and a reload of it held until `finish()`. */
function heldReload(baselineSeconds: number, minSpikeSeconds: number) {
  const t = setup({
    clock: undefined,
    thresholds: { modelLoad: { baselineSeconds: { resnet: baselineSeconds }, minSpikeSeconds } },
  });
  let finish!: () => void;
  const reload = t.monitor.modelLoad('resnet', 'reload', () => new Promise<void>((resolve) => (finish = resolve)));
  return { t, finish: () => finish(), reload };
}

/** Mulberry32: a small seeded generator, so the noise is the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

describe('model_load baseline', () => {
  const HEALTHY = [0.5, 0.48, 0.52, 0.49, 0.51];

  it('a store degrading by steps (1.5×, 2.5×, 3.5×, 5×, two loads each) warns at the first step past 3× the healthy baseline', async () => {
    const t = setup();
    const steps = [1.5, 1.5, 2.5, 2.5, 3.5, 3.5, 5, 5];
    const levels = await loadAll(t, [...HEALTHY, ...steps.map((f) => f * 0.5)]);
    expect(levels.slice(0, 5)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    // 1.5× and 2.5× are under 3×; 3.5× is the first step past it, and the healthy 0.5 s is still the baseline.
    expect(levels.slice(5)).toEqual(['ok', 'ok', 'ok', 'ok', 'warn', 'warn', 'warn', 'warn']);
    const first = modelLoadAlerts(t)[0];
    expect(first).toMatchObject({ level: 'warn', labels: { model: 'resnet' } });
    expect(first.details?.baselineSeconds).toBeCloseTo(0.5, 9);
    expect(first.details?.ratio).toBeCloseTo(3.5, 9);
    // A median of the last 5 loads would have moved to 0.75 s by then (1.75 s = 2.3×, no spike).
    expect(t.monitor.snapshot().models.resnet.baselineSeconds).toBeCloseTo(0.5, 9);
    expect((await t.collect()).sum(METRICS.modelLoadSpikes.name)).toBe(4);
  });

  it('noisy CPU-bound loads of 5–150 ms never spike under the 1 s floor; without the floor the same loads do', async () => {
    const noise = seeded(23);
    const loads = Array.from({ length: 500 }, () => 0.005 + 0.145 * noise() ** 3);
    const floored = setup();
    await loadAll(floored, loads, 'mlp');
    expect(modelLoadAlerts(floored)).toEqual([]);
    expect((await floored.collect()).sum(METRICS.modelLoadSpikes.name)).toBe(0);

    const unfloored = setup({ thresholds: { modelLoad: { minSpikeSeconds: 0 } } });
    await loadAll(unfloored, loads, 'mlp');
    expect(modelLoadAlerts(unfloored).filter((a) => a.level === 'warn').length).toBeGreaterThan(10);
  });

  it('the floor applies to the load, not the threshold: 0.9 s at 9× is no spike, 1.2 s is', async () => {
    const t = setup();
    await loadAll(t, [0.1, 0.1, 0.1, 0.1, 0.1]);
    expect(await loadAll(t, [0.9, 0.1, 1.2])).toEqual(['ok', 'ok', 'warn']);
    expect(modelLoadAlerts(t).find((a) => a.level === 'warn')?.threshold).toBe(1);
  });

  it('a configured baseline wins over the learnt one and is never re-learnt', async () => {
    const t = setup({ thresholds: { modelLoad: { baselineSeconds: { resnet: 1 } } } });
    // Learnt, 0.3 s loads would make 2.5 s a spike (8.3×); against the configured 1 s it is 2.5×.
    expect(await loadAll(t, [0.3, 0.3, 0.3, 0.3, 0.3, 2.5])).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'ok']);
    expect(await loadAll(t, [4, 4, 4, 4, 4, 4, 4])).toEqual(['warn', 'warn', 'warn', 'warn', 'warn', 'warn', 'warn']);
    expect((await t.collect()).sum(METRICS.modelLoadSpikes.name)).toBe(7);
    expect(t.monitor.snapshot().models.resnet.baselineSeconds).toBe(1);
  });

  it('a lasting new level (a bigger model) warns until baselineSamples loads held it, then is the new baseline', async () => {
    const t = setup();
    await loadAll(t, [2, 2.1, 1.9, 2, 2]);
    expect(await loadAll(t, [7.6, 8.2, 8, 7.9, 8.1, 8, 7.8])).toEqual([
      'warn',
      'warn',
      'warn',
      'warn',
      'ok',
      'ok',
      'ok',
    ]);
    const events = modelLoadAlerts(t);
    expect(events.map((a) => a.level)).toEqual(['warn', 'ok']);
    expect(events[1].details).toMatchObject({ relearnt: true, previousBaselineSeconds: 2 });
    expect(events[1].details?.baselineSeconds).toBeCloseTo(8, 9);
    expect(events[1].message).toBe(
      'model_load recovered on model "resnet": reload took 8.100 s; the last 5 loads held one level, 4.0× the 2.000 s baseline: 8.000 s is the new baseline (modelLoad.baselineSeconds pins one)',
    );
    expect((await t.collect()).sum(METRICS.modelLoadSpikes.name)).toBe(4);
    expect(t.monitor.snapshot().models.resnet.baselineSeconds).toBeCloseTo(8, 9);
    // Against the new level, 3× is the spike again.
    expect(await loadAll(t, [25])).toEqual(['warn']);
  });

  it('with baselineSamples 1, a spike still warns: two at one level make the new baseline', async () => {
    const t = setup({ thresholds: { modelLoad: { baselineSamples: 1 } } });
    expect(await loadAll(t, [2, 8, 8.2, 8])).toEqual(['ok', 'warn', 'ok', 'ok']);
    expect(modelLoadAlerts(t).at(-1)?.message).toMatch(/the last 2 loads held one level/);
  });

  it('a store that keeps getting worse is no level: it warns on every load and is never re-learnt', async () => {
    const t = setup();
    await loadAll(t, [2, 2, 2, 2, 2]);
    const worse = [7, 10, 14, 20, 28, 40, 56];
    expect(await loadAll(t, worse)).toEqual(worse.map(() => 'warn'));
    expect(modelLoadAlerts(t).map((a) => a.level)).toEqual(['warn']);
    expect((await t.collect()).sum(METRICS.modelLoadSpikes.name)).toBe(worse.length);
    expect(t.monitor.snapshot().models.resnet.baselineSeconds).toBe(2);
  });

  it('a faster store lowers the baseline while it lasts; back to usual, the baseline returns to the healthy figure', async () => {
    const t = setup();
    await loadAll(t, [2, 2, 2, 2, 2]);
    await loadAll(t, [1, 1, 1]);
    expect(t.monitor.snapshot().models.resnet.baselineSeconds).toBe(1);
    // 2 s against 1 s is 2×: no spike, and the usual loads bring the baseline back, never above 2 s.
    expect(await loadAll(t, [2, 2, 2, 2, 2])).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    expect(t.monitor.snapshot().models.resnet.baselineSeconds).toBe(2);
  });

  it('a reload still running past 3× the baseline warns on the tick, once, before it ends; the end counts the spike', async () => {
    const t = setup();
    await loadAll(t, [0.5, 0.48, 0.52, 0.49, 0.51]);
    let finish!: () => void;
    const reload = t.monitor.modelLoad('resnet', 'reload', () => new Promise<void>((resolve) => (finish = resolve)));
    t.advance(1400);
    t.monitor.tick();
    // 1.4 s is under 3 × 0.5 s: nothing yet.
    expect(modelLoadAlerts(t)).toEqual([]);
    t.advance(200);
    t.monitor.tick();
    t.advance(5000);
    t.monitor.tick();
    const raised = modelLoadAlerts(t);
    expect(raised).toHaveLength(1);
    expect(raised[0]).toMatchObject({ level: 'warn', labels: { model: 'resnet' }, details: { running: true } });
    expect(raised[0].details?.ratio).toBeCloseTo(1.6 / 0.5, 9);
    expect(t.monitor.snapshot().models.resnet).toMatchObject({ level: 'warn', loading: 1 });
    expect((await t.collect()).sum(METRICS.modelLoadSpikes.name)).toBe(0);
    finish();
    await reload;
    expect(t.monitor.snapshot().models.resnet).toMatchObject({ level: 'warn', loading: 0, lastSeconds: 6.6 });
    expect((await t.collect()).sum(METRICS.modelLoadSpikes.name)).toBe(1);
    // The baseline did not take the slow reload in.
    expect(t.monitor.snapshot().models.resnet.baselineSeconds).toBe(0.5);
  });

  it('a reload still running is announced when it passes its threshold, without a tick (its own timer)', async () => {
    // The real clock, no detector tick: only the load's own timer can announce it while it runs.
    const { t, finish, reload } = heldReload(0.1, 0.2);
    await until(() => modelLoadAlerts(t).length > 0, 10_000, 'the running reload to be announced');
    const raised = modelLoadAlerts(t);
    expect(raised).toHaveLength(1);
    expect(raised[0]).toMatchObject({ level: 'warn', labels: { model: 'resnet' }, details: { running: true } });
    // Past 3 × 0.1 s when it fired, and the load had not ended.
    expect(raised[0].details?.ratio).toBeGreaterThan(3);
    expect(t.monitor.snapshot().models.resnet.loading).toBe(1);
    finish();
    await reload;
    expect(modelLoadAlerts(t)).toHaveLength(1);
    expect((await t.collect()).sum(METRICS.modelLoadSpikes.name)).toBe(1);
    await t.close();
  });

  it('a reload still running when the monitor closes is not announced after it (its timer is cleared)', async () => {
    const { t, finish, reload } = heldReload(0.05, 0.1);
    await t.close();
    // Past the 0.15 s the timer was set for, still running: only the timer could have announced it.
    await sleep(400);
    expect(modelLoadAlerts(t)).toEqual([]);
    finish();
    await reload;
  });

  it('a load running while the baseline is still unknown, or under the 1 s floor, is not announced on the tick', async () => {
    const t = setup();
    let finish!: () => void;
    const first = t.monitor.modelLoad('resnet', 'load', () => new Promise<void>((resolve) => (finish = resolve)));
    t.advance(60_000);
    t.monitor.tick();
    finish();
    await first;
    await loadAll(t, [0.1, 0.1, 0.1, 0.1]);
    const short = t.monitor.modelLoad('resnet', 'reload', () => new Promise<void>((resolve) => (finish = resolve)));
    t.advance(900);
    t.monitor.tick();
    expect(modelLoadAlerts(t).filter((a) => a.level !== 'ok')).toEqual([]);
    finish();
    await short;
  });
});
