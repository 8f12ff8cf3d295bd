/**
 * Cases 13 and 16: time going backwards or jumping (an injected clock), and
 * property-based tests (fast-check) of the detectors.
 */
import * as fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, type Level } from '@infersignal/core';
import { SlidingWindow, ThresholdDetector } from '@infersignal/core/signals';
import { FixedHistogram } from '../../packages/core/src/aggregates/histogram';
import { P99GlitchDetector } from '../../packages/core/src/detectors/p99-glitch';
import { ZScoreDetector } from '../../packages/core/src/detectors/zscore';
import { figure, monitorWithReader, type Exported } from './helpers';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** Every exported histogram has a non-negative, finite sum, min and max. */
function histogramsSane(exported: Exported): string[] {
  const bad: string[] = [];
  for (const scope of exported.metrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      for (const point of metric.dataPoints) {
        const v = point.value as { sum?: number; min?: number; max?: number; count?: number } | number;
        if (typeof v === 'number') {
          if (!Number.isFinite(v)) bad.push(`${metric.descriptor.name}=${v}`);
          continue;
        }
        for (const key of ['sum', 'min', 'max'] as const) {
          const x = v[key];
          if (x !== undefined && v.count! > 0 && !(Number.isFinite(x) && x >= 0))
            bad.push(`${metric.descriptor.name}.${key}=${x}`);
        }
      }
    }
  }
  return bad;
}

function numbersOk(value: unknown, path = ''): string[] {
  if (typeof value === 'number') return Number.isFinite(value) ? [] : [`${path}=${value}`];
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => numbersOk(v, `${path}.${k}`));
  return [];
}

describe('case 13: time going backwards or jumping', () => {
  it('negative durations are refused with a count; nothing negative or NaN is exported', async () => {
    let now = 1_000_000;
    const t = monitorWithReader({ clock: () => now });
    cleanup.push(() => t.close());
    const queue = t.monitor.queue('q');

    // Backwards between arrival and start, and again before the end.
    const a = queue.enqueue('m');
    now -= 500;
    a.start();
    now -= 500;
    const sa = a.stream();
    sa.token(2);
    sa.end('completed');
    a.end('completed');
    // A forward jump of 11 days: huge, but real time; recorded.
    const b = queue.enqueue('m');
    now += 1e9;
    b.start();
    b.end('completed');
    // A model load whose clock went backwards.
    await t.monitor.modelLoad('m', 'load', () => {
      now -= 10_000;
    });
    for (let i = 0; i < 5; i++) {
      now -= 60_000;
      t.monitor.tick();
    }

    const exported = await t.collect();
    expect(histogramsSane(exported)).toEqual([]);
    // Refused: wait, inference, request duration of `a` (3), TTFT of `a` (1), the load (1).
    const refused = exported.sum(METRICS.internalErrors.name, { [ATTR.errorSource]: 'clock' });
    expect(refused).toBe(5);
    expect(exported.count(METRICS.queueWait.name)).toBe(1);
    expect(exported.count(METRICS.requestDuration.name)).toBe(1);
    expect(exported.histograms(METRICS.queueWait.name)[0].sum).toBe(1e6);
    // Both requests are still counted once each: only the bad samples are dropped.
    expect(exported.sum(METRICS.requests.name)).toBe(2);
    expect(numbersOk(t.monitor.snapshot())).toEqual([]);
    for (const alert of t.alerts)
      expect(Number.isFinite(alert.value) && Number.isFinite(alert.threshold), alert.signal).toBe(true);

    // The typed-array aggregate refuses them silently too, with its own count.
    const h = new FixedHistogram([0.1, 1]);
    for (const v of [-1, Number.NaN, Number.POSITIVE_INFINITY, -0.001, 0.5]) h.record(v);
    expect({ count: h.count, rejected: h.rejected, sum: h.sum }).toEqual({ count: 1, rejected: 4, sum: 0.5 });
    figure('13 clock backwards', {
      refusedSamples: refused,
      recordedWaitSumSeconds: 1e6,
      histogramRejected: h.rejected,
    });
  });

  it('property: any finite clock walk (backwards, stalls, jumps) never exports a negative or NaN value', async () => {
    const step = fc.oneof(
      { arbitrary: fc.integer({ min: 0, max: 50 }), weight: 6 },
      { arbitrary: fc.integer({ min: -10_000, max: 0 }), weight: 2 },
      { arbitrary: fc.constantFrom(1e9, -1e9, 3_600_000, -3_600_000), weight: 1 },
    );
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 20, maxLength: 120 }),
        fc.constantFrom<'api' | 'producer'>('api', 'producer'),
        async (steps, exportMode) => {
          runs++;
          let now = 5_000_000;
          let k = 0;
          const advance = (): number => (now += steps[k++ % steps.length]);
          const t = monitorWithReader({
            clock: () => now,
            exportMode,
            thresholds: { glitch: { minSamples: 2 }, anomaly: { window: 10 }, stream: { minSamples: 1 } },
          });
          try {
            const queue = t.monitor.queue('q', { capacity: 4, concurrency: 2 });
            let reserved = 100;
            const memory = t.monitor.deviceMemory({
              allocated: () => 50,
              reserved: () => (reserved += 7),
              intervalMs: 0,
            });
            for (let i = 0; i < steps.length; i++) {
              const ticket = queue.enqueue(`m${i % 2}`);
              advance();
              ticket.start();
              const stream = ticket.stream();
              stream.token();
              advance();
              stream.token(2);
              stream.end(i % 5 ? 'completed' : 'error');
              ticket.end(i % 5 ? 'completed' : 'error');
              await t.monitor.modelLoad('m0', 'reload', advance);
              advance();
              t.monitor.tick();
            }
            memory.stop();
            const exported = await t.collect();
            expect(histogramsSane(exported)).toEqual([]);
            expect(numbersOk(t.monitor.snapshot())).toEqual([]);
            for (const alert of t.alerts)
              expect(Number.isFinite(alert.value), `${alert.signal} value ${alert.value}`).toBe(true);
            // Every request counted once, whatever the clock did.
            expect(exported.sum(METRICS.requests.name)).toBe(steps.length);
          } finally {
            await t.close();
          }
        },
      ),
      { numRuns: 150, seed: 1312 },
    );
    figure('13 clock walk property', { runs });
  });
});

describe('case 16: detector properties (fast-check)', () => {
  it('the sliding window never exceeds its capacity', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.array(fc.tuple(fc.double({ noNaN: true }), fc.double({ min: -1e6, max: 1e6, noNaN: true })), {
          maxLength: 300,
        }),
        (capacity, samples) => {
          const w = new SlidingWindow(capacity);
          for (const [value, at] of samples) {
            w.push(value, at);
            expect(w.length).toBeLessThanOrEqual(capacity);
          }
          let seen = 0;
          w.forEach(() => {
            seen++;
          });
          expect(seen).toBe(Math.min(capacity, samples.length));
          expect(w.length).toBe(Math.min(capacity, samples.length));
          if (samples.length > 0) {
            const kept = samples.slice(-capacity).map(([v]) => v);
            const q = w.quantile(0.99);
            expect(q).toBeGreaterThanOrEqual(Math.min(...kept));
            expect(q).toBeLessThanOrEqual(Math.max(...kept));
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('z-score on a constant series never alerts', () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 }),
        fc.integer({ min: 2, max: 100 }),
        fc.double({ min: 0.1, max: 10, noNaN: true }),
        fc.integer({ min: 1, max: 300 }),
        (c, window, threshold, n) => {
          const z = new ZScoreDetector(window, threshold);
          for (let i = 0; i < n; i++) expect(z.isAnomaly(z.update(c))).toBe(false);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('P99 glitch ΔL is never negative (NaN only while there are too few samples)', () => {
    const value = fc.oneof(
      fc.double({ min: 0, max: 100, noNaN: true }),
      fc.constantFrom(-1, Number.NaN, Number.POSITIVE_INFINITY, 0, 1e308),
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(value, fc.integer({ min: 0, max: 20_000 })), { maxLength: 200 }),
        fc.integer({ min: 0, max: 30_000 }),
        fc.integer({ min: 1, max: 30 }),
        (samples, now, minSamples) => {
          const d = new P99GlitchDetector(10_000, 64, minSamples);
          for (const [v, at] of samples) d.record(v, at);
          const r = d.evaluate(now);
          if (r.count < minSamples) expect(r.deltaL).toBeNaN();
          else expect(r.deltaL).toBeGreaterThanOrEqual(0);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('the threshold-with-`for` detector never fires before its duration', () => {
    const RANK: Record<Level, number> = { ok: 0, warn: 1, critical: 2 };
    fc.assert(
      fc.property(
        fc.double({ min: 0.1, max: 10, noNaN: true }),
        fc.double({ min: 1.1, max: 3, noNaN: true }),
        fc.integer({ min: 0, max: 10 }),
        fc.double({ min: 0, max: 0.5, noNaN: true }),
        fc.array(
          fc.tuple(
            fc.integer({ min: 0, max: 4000 }),
            fc.oneof(fc.double({ min: 0, max: 40, noNaN: true }), fc.constant(Number.NaN)),
            // The present evidence beside the value (the waits since the last tick): NaN when there is none.
            fc.oneof(fc.constant(Number.NaN), fc.double({ min: 0, max: 40, noNaN: true })),
          ),
          { minLength: 1, maxLength: 200 },
        ),
        (warn, factor, forSeconds, hysteresis, steps) => {
          const critical = warn * factor;
          const d = new ThresholdDetector({ warn, critical, forSeconds, hysteresis });
          const times: number[] = [];
          const values: number[] = [];
          const presents: number[] = [];
          let now = 0;
          let previous: Level = 'ok';
          for (const [dt, value, present] of steps) {
            now += dt;
            times.push(now);
            values.push(value);
            presents.push(present);
            const level = d.update(value, now, present);
            if (RANK[level] > RANK[previous]) {
              // Raised at this update: the values above the new level's bound, and any present evidence
              // beside them, must have held for `for`.
              const bound = level === 'critical' ? critical : warn;
              let j = values.length - 1;
              for (let i = values.length - 1; i >= 0; i--) {
                if (Number.isNaN(values[i])) continue;
                if (values[i] > bound && !(presents[i] <= bound)) j = i;
                else break;
              }
              expect(now - times[j]).toBeGreaterThanOrEqual(forSeconds * 1000);
            }
            previous = level;
          }
        },
      ),
      { numRuns: 3000 },
    );
  });
});
