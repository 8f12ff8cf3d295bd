/**
 * How the paired tool (benchmarks/pairs.ts) judges a goal from its rounds
 * (benchmarks/lib/stats.ts): the median of the per-round ratios with a
 * seeded 90 % bootstrap interval, and a verdict that says `undecided` when
 * the limit falls inside the interval (or the ratios are too few).
 */
import { describe, expect, it } from 'vitest';
import { judge, seeded, verdictOf } from '../benchmarks/lib/stats';

describe('judge', () => {
  // 24 rounds evenly between 1.05 and 1.096: median 1.073.
  const even = Array.from({ length: 24 }, (_, i) => 1.05 + 0.002 * i);

  it('brackets the median with an interval inside the rounds, the same for the same rounds', () => {
    const judged = judge(even);
    expect(judged.median).toBeCloseTo(1.073, 6);
    expect(judged.low).toBeGreaterThanOrEqual(1.05);
    expect(judged.low).toBeLessThan(judged.median);
    expect(judged.high).toBeGreaterThan(judged.median);
    expect(judged.high).toBeLessThanOrEqual(1.096);
    expect(judge(even)).toEqual(judged);
  });

  it('met, NOT met or undecided by where the limit falls against the interval', () => {
    const judged = judge(even);
    expect(verdictOf(judged, 1.1)).toBe('met');
    expect(verdictOf(judged, 1.04)).toBe('NOT met');
    expect(verdictOf(judged, 1.073)).toBe('undecided');
    // Four ratios, all well under the limit: too few for a bootstrap to be trusted.
    expect(verdictOf(judge(even.slice(0, 4)), 1.2)).toBe('undecided');
  });

  it('narrows as rounds are added: ±5 % noise around 1.08, 12 rounds against 96', () => {
    const random = seeded(7);
    const noisy = (n: number) => Array.from({ length: n }, () => 1.08 * (1 + (random() - 0.5) * 0.1));
    const few = judge(noisy(12));
    const many = judge(noisy(96));
    expect(many.high - many.low).toBeLessThan((few.high - few.low) / 2);
    // Around its own median, within a per cent and a half of where the rounds were drawn.
    expect(many.low).toBeLessThan(many.median);
    expect(many.high).toBeGreaterThan(many.median);
    expect(many.low).toBeGreaterThan(1.08 * 0.985);
    expect(many.high).toBeLessThan(1.08 * 1.015);
  });
});
