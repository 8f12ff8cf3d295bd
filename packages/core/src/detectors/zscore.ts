import { SlidingWindow } from './sliding-window';

/**
 * Z-score anomaly detector: |x − mean| / σ over the previous `window`
 * values (the current value is not part of its own baseline). A constant
 * series has σ = 0 and never alerts.
 */
export class ZScoreDetector {
  private readonly history: SlidingWindow;

  constructor(
    readonly window = 60,
    readonly threshold = 3,
    /** Values needed before a score is given. */
    readonly minSamples = Math.min(10, window),
  ) {
    this.history = new SlidingWindow(window);
  }

  /** Adds a value; returns its z-score against the history before it (0 when not yet judged). */
  update(value: number): number {
    if (!Number.isFinite(value)) return 0;
    let z = 0;
    const n = this.history.length;
    if (n >= this.minSamples) {
      let sum = 0;
      let sumSquares = 0;
      this.history.forEach((v) => {
        sum += v;
        sumSquares += v * v;
      });
      const mean = sum / n;
      const variance = Math.max(0, sumSquares / n - mean * mean);
      const sd = Math.sqrt(variance);
      // Relative floor on σ: float noise on a near-constant series must not score as an anomaly.
      if (sd > 1e-9 * Math.max(1, Math.abs(mean))) z = (value - mean) / sd;
    }
    this.history.push(value);
    return z;
  }

  isAnomaly(z: number): boolean {
    return Math.abs(z) >= this.threshold;
  }
}
