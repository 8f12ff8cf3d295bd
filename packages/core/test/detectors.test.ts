import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FixedHistogram } from '../src/aggregates/histogram';
import { DriftDetector } from '../src/detectors/drift';
import { P99GlitchDetector } from '../src/detectors/p99-glitch';
import { SlidingWindow } from '../src/detectors/sliding-window';
import { ThresholdDetector } from '../src/detectors/threshold';
import { ZScoreDetector } from '../src/detectors/zscore';
import { selectRank } from '../src/detectors/select';
import { seededRandom } from '../../../test/support/random';

describe('SlidingWindow', () => {
  it('keeps the last N samples and computes nearest-rank quantiles', () => {
    const w = new SlidingWindow(100);
    for (let i = 1; i <= 150; i++) w.push(i, i);
    expect(w.length).toBe(100);
    expect(w.quantile(0.5)).toBe(100); // samples 51..150
    expect(w.quantile(0.95)).toBe(145);
    expect(w.quantile(1)).toBe(150);
    expect(w.quantile(0.5, 141)).toBe(145); // only 141..150
  });

  it('keeps exactly the last N samples with their times, oldest first, across wrap-arounds and clear() (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.array(fc.double({ noNaN: true }), { maxLength: 300 }),
        fc.integer({ min: 0, max: 300 }),
        (capacity, values, clearAt) => {
          const w = new SlidingWindow(capacity);
          let kept: Array<[number, number]> = [];
          for (const [i, v] of values.entries()) {
            if (i === clearAt) {
              w.clear();
              kept = [];
            }
            w.push(v, i);
            kept.push([v, i]);
          }
          const expected = kept.slice(-capacity);
          const seen: Array<[number, number]> = [];
          w.forEach((value, at) => {
            seen.push([value, at]);
          });
          const since = Math.floor(values.length / 2);
          const seenSince: number[] = [];
          w.forEach((_, at) => {
            seenSince.push(at);
          }, since);
          expect(w.length).toBe(expected.length);
          expect(seen).toEqual(expected);
          expect(seenSince).toEqual(expected.map(([, at]) => at).filter((at) => at >= since));
        },
      ),
    );
  });
});

describe('selectRank (the quantiles of windows and of the live tail)', () => {
  /** Durations as they come: never NaN; -0 read as 0 (a sort orders the two, a comparison cannot tell them apart). */
  const duration = fc.double({ noNaN: true }).map((v) => (v === 0 ? 0 : v));

  it('reads what a sort reads at any rank of any range, and leaves the range partitioned around it (property)', () => {
    fc.assert(
      fc.property(
        // Repeated values too: durations repeat at a clock's resolution.
        fc.array(fc.oneof(duration, fc.constantFrom(0, 0.05, 0.25)), { minLength: 1, maxLength: 300 }),
        fc.nat(),
        fc.nat(),
        fc.nat(),
        (input, a, b, c) => {
          const from = a % input.length;
          const to = from + 1 + (b % (input.length - from));
          const k = from + (c % (to - from));
          const values = Float64Array.from(input);
          const sorted = values.slice(from, to).sort();
          expect(selectRank(values, from, to, k)).toBe(sorted[k - from]);
          // Only the range was reordered, its values kept, around the result.
          expect(Array.from(values.subarray(0, from))).toEqual(input.slice(0, from));
          expect(Array.from(values.subarray(to))).toEqual(input.slice(to));
          expect(values.slice(from, to).sort()).toEqual(sorted);
          for (let i = from; i < to; i++)
            expect(i < k ? values[i]! <= values[k]! : values[i]! >= values[k]!, `index ${i} around ${k}`).toBe(true);
        },
      ),
    );
  });

  it("holds on the ring's shapes at its size: sorted, reversed, all equal, a slow tail", () => {
    const random = seededRandom(29);
    const shapes: Array<(i: number) => number> = [
      (i) => i / 1000,
      (i) => (1024 - i) / 1000,
      () => 0.25,
      () => (random() < 0.02 ? 2 + random() : 0.05 + random() / 100),
    ];
    for (const shape of shapes) {
      const values = Float64Array.from({ length: 1024 }, (_, i) => shape(i));
      const sorted = values.slice().sort();
      for (const k of [0, 511, 1013, 1023]) expect(selectRank(values.slice(), 0, 1024, k)).toBe(sorted[k]);
    }
  });
});

describe('SlidingWindow quantiles against a sort (property)', () => {
  it('quantile() and summary() read the nearest ranks and the max of the samples since a time, NaN left out', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.double({ noNaN: true, min: 0, max: 100 }), fc.constant(Number.NaN)), { maxLength: 200 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }),
        fc.nat(),
        (input, quantiles, sinceSeed) => {
          const w = new SlidingWindow(128);
          for (const [i, v] of input.entries()) w.push(v, i);
          const since = input.length === 0 ? 0 : sinceSeed % input.length;
          const kept = input
            .slice(-128)
            .map((v, i, all) => [v, input.length - all.length + i] as const)
            .filter(([v, at]) => at >= since && !Number.isNaN(v))
            .map(([v]) => (v === 0 ? 0 : v));
          const sorted = Float64Array.from(kept).sort();
          const rank = (q: number) => Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
          const expected = quantiles.map((q) => (sorted.length === 0 ? Number.NaN : sorted[rank(q)]!));
          const summary = w.summary(quantiles, since);
          expect(summary.count).toBe(sorted.length);
          expect(summary.values).toEqual(expected);
          expect(summary.max).toBe(sorted.length === 0 ? Number.NaN : sorted[sorted.length - 1]);
          for (const [i, q] of quantiles.entries()) expect(w.quantile(q, since)).toBe(expected[i]);
        },
      ),
    );
  });
});

describe('ZScoreDetector', () => {
  it('flags a 3σ outlier after the window fills', () => {
    const z = new ZScoreDetector(60, 3);
    for (let i = 0; i < 60; i++) expect(z.isAnomaly(z.update(100 + (i % 2 ? 1 : -1)))).toBe(false);
    const score = z.update(110);
    expect(score).toBeCloseTo(10, 6);
    expect(z.isAnomaly(score)).toBe(true);
  });

  it('a constant series never alerts (property)', () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e9, max: 1e9 }),
        fc.integer({ min: 1, max: 300 }),
        (c, n) => {
          const z = new ZScoreDetector(60, 3);
          for (let i = 0; i < n; i++) if (z.isAnomaly(z.update(c))) return false;
          return true;
        },
      ),
    );
  });
});

describe('P99GlitchDetector', () => {
  it('ΔL = max − P99 over the window', () => {
    const g = new P99GlitchDetector(10_000, 4096, 20);
    for (let i = 0; i < 199; i++) g.record(0.02, i * 10);
    g.record(1.5, 2000);
    const r = g.evaluate(2000);
    expect(r.p99).toBeCloseTo(0.02, 9);
    expect(r.deltaL).toBeCloseTo(1.48, 9);
    expect(g.evaluate(20_000).count).toBe(0); // the window moved past every sample
  });

  it('ΔL is never negative (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -1, max: 100, noNaN: true }), { minLength: 20, maxLength: 500 }),
        (values) => {
          const g = new P99GlitchDetector(10_000, 512, 1);
          for (const [i, v] of values.entries()) g.record(v, i);
          const { deltaL } = g.evaluate(values.length);
          return Number.isNaN(deltaL) || deltaL >= 0;
        },
      ),
    );
  });
});

describe('ThresholdDetector', () => {
  it('honours `for` and hysteresis', () => {
    const d = new ThresholdDetector({ warn: 10, critical: 20, forSeconds: 5, hysteresis: 0.1 });
    expect(d.update(15, 0)).toBe('ok');
    expect(d.update(15, 4999)).toBe('ok');
    expect(d.update(15, 5000)).toBe('warn');
    expect(d.update(9.5, 6000)).toBe('warn'); // within 10 % below the bound: stays
    expect(d.update(8.9, 7000)).toBe('ok');
  });

  it('raising, and each tick of its hold, also needs the present evidence above the bound; lowering does not', () => {
    const d = new ThresholdDetector({ warn: 10, critical: 20, forSeconds: 2 });
    expect(d.update(15, 0, 15)).toBe('ok'); // hold starts
    expect(d.update(15, 1000, 5)).toBe('ok'); // the window is high, the newest samples are not: hold restarts
    expect(d.update(15, 2000, 15)).toBe('ok'); // a new hold from here
    expect(d.update(15, 3999, 12)).toBe('ok');
    expect(d.update(15, 4000, 12)).toBe('warn');
    expect(d.update(25, 5000, 15)).toBe('warn'); // CRITICAL in the window, only WARN now
    expect(d.update(25, 7000, 15)).toBe('warn');
    expect(d.update(15, 8000, 3)).toBe('warn'); // lowering reads the window only
    expect(d.update(15, 9000, Number.NaN)).toBe('warn'); // no new evidence vetoes nothing
    expect(d.update(25, 9000, Number.NaN)).toBe('warn');
    expect(d.update(25, 11_000, Number.NaN)).toBe('critical');
    expect(d.update(8.9, 12_000, 30)).toBe('ok');
  });

  it('keeps a WARN for keepFiringSeconds after the value fell; CRITICAL lowers to WARN at once', () => {
    const d = new ThresholdDetector({ warn: 10, critical: 20, keepFiringSeconds: 3 });
    expect(d.update(15, 0)).toBe('warn');
    expect(d.update(5, 1000)).toBe('warn'); // the keep starts
    expect(d.update(9.5, 2000)).toBe('warn'); // back above the lowered bound: the keep is over
    expect(d.update(5, 3000)).toBe('warn'); // a new keep from here
    expect(d.update(5, 5999)).toBe('warn');
    expect(d.update(5, 6000)).toBe('ok');
    expect(d.update(25, 7000)).toBe('critical');
    expect(d.update(5, 8000)).toBe('warn'); // CRITICAL acts: it never lingers
    expect(d.update(5, 2000)).toBe('warn'); // a clock that went backwards restarts the keep
    expect(d.update(5, 4999)).toBe('warn');
    expect(d.update(5, 5000)).toBe('ok');
  });

  it('never fires before its duration (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.array(fc.tuple(fc.double({ min: 0, max: 50, noNaN: true }), fc.integer({ min: 0, max: 3000 })), {
          maxLength: 100,
        }),
        (forSeconds, steps) => {
          const d = new ThresholdDetector({ warn: 10, critical: 20, forSeconds });
          let now = 0;
          let aboveSince = Number.NaN;
          for (const [value, dt] of steps) {
            now += dt;
            if (value > 10) {
              if (Number.isNaN(aboveSince)) aboveSince = now;
            } else aboveSince = Number.NaN;
            const level = d.update(value, now);
            if (level !== 'ok' && (Number.isNaN(aboveSince) || now - aboveSince < forSeconds * 1000)) {
              // Only allowed when it was already raised earlier and hysteresis keeps it.
              if (value <= 10 * 0.9) return false;
              if (Number.isNaN(aboveSince) && value > 10) return false;
            }
          }
          return true;
        },
      ),
    );
  });
});

describe('DriftDetector', () => {
  it('fits the slope and ignores a flat series', () => {
    const grow = new DriftDetector(10, 0.05, 0.8);
    const flat = new DriftDetector(10, 0.05, 0.8);
    for (let i = 0; i < 10; i++) {
      grow.update(1000 + 100 * i, i * 1000);
      flat.update(1000, i * 1000);
    }
    const g = grow.evaluate(10_000);
    expect(g.slope).toBeCloseTo(100, 9);
    expect(g.r2).toBeCloseTo(1, 9);
    expect(g.drifting).toBe(true);
    expect(flat.evaluate(10_000).drifting).toBe(false);
  });
});

describe('FixedHistogram', () => {
  it('counts into buckets and refuses negatives with a count', () => {
    const h = new FixedHistogram([0.1, 0.2, 0.5]);
    for (let i = 0; i < 10; i++) h.record(0.15);
    expect(h.record(-1)).toBe(false);
    expect(h.rejected).toBe(1);
    expect([...h.counts]).toEqual([0, 10, 0, 0]);
    expect([h.count, h.min, h.max]).toEqual([10, 0.15, 0.15]);
    expect(h.sum).toBeCloseTo(1.5, 12);
  });
});
