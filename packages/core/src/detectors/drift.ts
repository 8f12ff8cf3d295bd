import { SlidingWindow } from './sliding-window';

export interface LinearFit {
  /** Units per second. */
  slope: number;
  r2: number;
  count: number;
  /** Fitted growth over the window (slope × span). */
  growth: number;
  /** Seconds the samples span, the first one's time (ms) and the line's value at that time. */
  spanSeconds: number;
  t0: number;
  intercept: number;
}

/** Least-squares line through (t seconds, value) pairs of a window (samples at or after `since`). */
export function linearFit(window: SlidingWindow, since = Number.NEGATIVE_INFINITY): LinearFit {
  let n = 0;
  window.forEach(() => {
    n++;
  }, since);
  if (n < 2) return { slope: 0, r2: 0, count: n, growth: 0, spanSeconds: 0, t0: Number.NaN, intercept: Number.NaN };
  let t0 = Number.NaN;
  let sumT = 0;
  let sumV = 0;
  let sumTT = 0;
  let sumTV = 0;
  let sumVV = 0;
  let tMax = 0;
  window.forEach((v, at) => {
    if (Number.isNaN(t0)) t0 = at;
    const t = (at - t0) / 1000;
    tMax = Math.max(tMax, t);
    sumT += t;
    sumV += v;
    sumTT += t * t;
    sumTV += t * v;
    sumVV += v * v;
  }, since);
  const varT = n * sumTT - sumT * sumT;
  const varV = n * sumVV - sumV * sumV;
  if (varT <= 0) return { slope: 0, r2: 0, count: n, growth: 0, spanSeconds: tMax, t0, intercept: sumV / n };
  const cov = n * sumTV - sumT * sumV;
  const slope = cov / varT;
  const r2 = varV <= 0 ? 0 : (cov * cov) / (varT * varV);
  return { slope, r2, count: n, growth: slope * tMax, spanSeconds: tMax, t0, intercept: (sumV - slope * sumT) / n };
}

/**
 * Drift (leak-trend) detector: a value that keeps growing. Trips when the
 * window is full, the fitted growth over the window is at least
 * `minGrowth` × `reference` (e.g. 5 % of reserved memory) and the fit is
 * a real trend (R² ≥ minR2) rather than noise around a flat line.
 */
export class DriftDetector {
  private readonly window: SlidingWindow;

  constructor(
    readonly samples = 60,
    readonly minGrowth = 0.05,
    readonly minR2 = 0.8,
  ) {
    this.window = new SlidingWindow(samples);
  }

  update(value: number, at: number): void {
    if (Number.isFinite(value)) this.window.push(value, at);
  }

  evaluate(reference: number): LinearFit & { drifting: boolean } {
    const fit = linearFit(this.window);
    const full = fit.count >= this.samples;
    const drifting =
      full && fit.slope > 0 && fit.r2 >= this.minR2 && fit.growth >= this.minGrowth * Math.abs(reference);
    return { ...fit, drifting };
  }
}
