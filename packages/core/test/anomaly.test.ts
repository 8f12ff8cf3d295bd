import { afterEach, describe, expect, it } from 'vitest';
import type { AlertEvent } from '../src/index';
import { AnomalyDetector, ZScoreDetector, type AnomalyRule } from '../src/detectors/zscore';
import type { TestMonitor } from '../../../test/support/monitor';
import { setup } from './helpers';

/** A seeded generator, so a failure reproduces. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * A stationary but uneven series, as a windowed P95 is: flat stretches of
 * 5–40 ticks at levels between 25 and 36 ms, with a little noise.
 */
function stationaryP95(ticks: number, seed: number): number[] {
  const next = random(seed);
  const out: number[] = [];
  while (out.length < ticks) {
    const level = 0.025 + next() * 0.0105;
    const length = 5 + Math.floor(next() * 36);
    for (let i = 0; i < length && out.length < ticks; i++) out.push(level + (next() - 0.5) * 0.0005);
  }
  return out;
}

const RULE: AnomalyRule = { zScore: 3, floor: 0.1, forSeconds: 5, hysteresis: 0.2, bothDirections: false };

describe('AnomalyDetector', () => {
  it('a stationary 25–36 ms P95 for 10 minutes: the plain |z| ≥ 3 test fires, the detector never does', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const series = stationaryP95(600, seed);
      const plain = new ZScoreDetector(60, 3);
      const detector = new AnomalyDetector(60, RULE);
      let plainAlerts = 0;
      let raised = 0;
      for (const [i, value] of series.entries()) {
        if (plain.isAnomaly(plain.update(value))) plainAlerts++;
        const before = detector.level;
        if (detector.update(value, i * 1000) === 'warn' && before === 'ok') raised++;
      }
      expect(Math.min(...series)).toBeGreaterThanOrEqual(0.0247);
      expect(Math.max(...series)).toBeLessThanOrEqual(0.0358);
      // The series is hard: steps between flat stretches score far above 3σ.
      expect(plainAlerts, `seed ${seed}`).toBeGreaterThan(0);
      expect(raised, `seed ${seed}`).toBe(0);
    }
  });

  it('a rise above the floor is raised after it held for forSeconds, and clears with hysteresis', () => {
    const detector = new AnomalyDetector(60, RULE);
    const series = stationaryP95(120, 7);
    for (const [i, value] of series.entries()) detector.update(value, i * 1000);
    const levels: string[] = [];
    // 150 ms from t = 120 s: pending at 120..124 s, raised at 125 s.
    for (let i = 120; i < 130; i++) levels.push(detector.update(0.15, i * 1000));
    expect(levels).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'warn', 'warn', 'warn', 'warn', 'warn']);
    expect(detector.z).toBeGreaterThan(3);
    // Back to 30 ms: below the floor × (1 − hysteresis) at once.
    expect(detector.update(0.03, 130_000)).toBe('ok');
  });

  it('a raised anomaly that clears stays for keepFiringSeconds; a return above the clear line ends the keep', () => {
    const detector = new AnomalyDetector(60, { ...RULE, keepFiringSeconds: 10 });
    for (const [i, value] of stationaryP95(120, 7).entries()) detector.update(value, i * 1000);
    for (let i = 120; i <= 125; i++) detector.update(0.15, i * 1000);
    expect(detector.level).toBe('warn');
    expect(detector.update(0.03, 126_000)).toBe('warn'); // cleared: kept from here
    expect(detector.update(0.03, 135_999)).toBe('warn');
    expect(detector.update(0.03, 136_000)).toBe('ok');
    // Raised again; a dip under the floor, then back above it within the keep: one continuous warning.
    for (let i = 140; i <= 145; i++) detector.update(0.3, i * 1000);
    expect(detector.level).toBe('warn');
    expect(detector.update(0.03, 146_000)).toBe('warn');
    expect(detector.update(0.3, 150_000)).toBe('warn');
    expect(detector.update(0.03, 151_000)).toBe('warn'); // a new keep starts here, not at 146 s
    expect(detector.update(0.03, 160_999)).toBe('warn');
    expect(detector.update(0.03, 161_000)).toBe('ok');
  });

  it('a rise that does not hold for forSeconds is not raised', () => {
    const detector = new AnomalyDetector(60, RULE);
    for (const [i, value] of stationaryP95(120, 8).entries()) detector.update(value, i * 1000);
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 4; i++) expect(detector.update(0.15, (200 + round * 10 + i) * 1000)).toBe('ok');
      expect(detector.update(0.03, (204 + round * 10) * 1000)).toBe('ok');
    }
  });

  it('a drop never alerts unless bothDirections; then only when the baseline was above the floor', () => {
    const up = new AnomalyDetector(60, { ...RULE, forSeconds: 0 });
    const both = new AnomalyDetector(60, { ...RULE, forSeconds: 0, bothDirections: true });
    const high = stationaryP95(120, 9).map((v) => v + 0.1); // 125–136 ms
    for (const [i, value] of high.entries()) {
      up.update(value, i * 1000);
      both.update(value, i * 1000);
    }
    expect(up.update(0.02, 120_000)).toBe('ok');
    expect(up.z).toBeLessThan(-3);
    expect(both.update(0.02, 120_000)).toBe('warn');
    // Below the floor on both sides: a drop from 30 ms to 5 ms is nothing.
    const low = new AnomalyDetector(60, { ...RULE, forSeconds: 0, bothDirections: true });
    for (const [i, value] of stationaryP95(120, 10).entries()) low.update(value, i * 1000);
    expect(low.update(0.005, 120_000)).toBe('ok');
  });

  it('a clock that goes backwards restarts the hold', () => {
    const detector = new AnomalyDetector(60, RULE);
    for (const [i, value] of stationaryP95(60, 11).entries()) detector.update(value, 100_000 + i * 1000);
    expect(detector.update(0.15, 200_000)).toBe('ok');
    expect(detector.update(0.15, 150_000)).toBe('ok');
    expect(detector.update(0.15, 154_000)).toBe('ok');
    expect(detector.update(0.15, 155_000)).toBe('warn');
  });
});

describe('latency_anomaly on a queue (injected clock)', () => {
  let t: TestMonitor | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  /** One simulated second of 20 requests whose waits are `wait(i)` seconds, then a tick. */
  function second(m: TestMonitor, wait: (i: number) => number): void {
    const queue = m.monitor.queue('onnx:matmul-chain', { concurrency: 4, capacity: 64 });
    const start = m.now();
    for (let i = 0; i < 20; i++) {
      m.set(start + i * 50);
      const ticket = queue.enqueue('mlp');
      m.advance(wait(i) * 1000);
      ticket.start();
      m.advance(5);
      ticket.end('completed');
    }
    m.set(start + 1000);
    m.monitor.tick();
  }

  it('a healthy queue whose wait P95 wanders between 25 and 36 ms for 10 simulated minutes: no alert', () => {
    t = setup({ eventLoop: false });
    const m = t;
    const next = random(42);
    const p95: number[] = [];
    let level = 0.03;
    for (let s = 0; s < 600; s++) {
      if (s % 20 === 0) level = 0.027 + next() * 0.007;
      second(m, () => level - 0.002 + next() * 0.004);
      p95.push(m.monitor.snapshot().queues['onnx:matmul-chain']!.waitQuantileSeconds);
    }
    expect(Math.min(...p95.slice(30))).toBeGreaterThanOrEqual(0.025);
    expect(Math.max(...p95)).toBeLessThanOrEqual(0.036);
    expect(m.alerts).toEqual([]);
  });

  it('three stalled seconds (waits of 300–800 ms) on a queue that then drains: no latency_anomaly', () => {
    t = setup({ eventLoop: false });
    const m = t;
    const next = random(44);
    for (let s = 0; s < 120; s++) second(m, () => 0.028 + next() * 0.006);
    // The process was held off its CPU for 3 s: every request of those seconds waited, then the queue drained.
    for (let s = 0; s < 3; s++) second(m, (i) => 0.8 - i * 0.025);
    const windowP95 = m.monitor.snapshot().queues['onnx:matmul-chain']!.waitQuantileSeconds;
    let held = 0;
    for (let s = 0; s < 40; s++) {
      second(m, () => 0.028 + next() * 0.006);
      if (m.monitor.snapshot().queues['onnx:matmul-chain']!.waitQuantileSeconds > 0.1) held++;
    }
    // The 30 s window's P95 stays above the 100 ms floor for far longer than the 5 s hold…
    expect(windowP95).toBeGreaterThan(0.3);
    expect(held).toBeGreaterThan(10);
    // …but the queue drained at once: not a sustained anomaly.
    expect(m.alerts.filter((a: AlertEvent) => a.signal === 'latency_anomaly')).toEqual([]);
  });

  it('a real rise to 150 ms (below the 200 ms WARN) raises latency_anomaly, naming the queue; back to normal clears it', () => {
    t = setup({ eventLoop: false });
    const m = t;
    const next = random(43);
    for (let s = 0; s < 120; s++) second(m, () => 0.028 + next() * 0.006);
    const riseAt = m.now();
    for (let s = 0; s < 20; s++) second(m, () => 0.145 + next() * 0.01);
    const raised = m.alerts.filter((a: AlertEvent) => a.signal === 'latency_anomaly' && a.level === 'warn');
    expect(raised).toHaveLength(1);
    expect(raised[0]!.labels).toEqual({ queue: 'onnx:matmul-chain' });
    expect(raised[0]!.at - riseAt).toBeGreaterThanOrEqual(5000);
    expect(raised[0]!.message).toMatch(/^latency_anomaly WARN on queue "onnx:matmul-chain": queue wait P95 1\d\d ms/);
    expect(m.alerts.filter((a: AlertEvent) => a.signal === 'queue_wait')).toEqual([]);
    // 30 s of normal waits leave the 30 s window with a normal P95 again.
    for (let s = 0; s < 40; s++) second(m, () => 0.028 + next() * 0.006);
    const last = m.alerts.filter((a: AlertEvent) => a.signal === 'latency_anomaly').at(-1);
    expect(last?.level).toBe('ok');
  });
});
