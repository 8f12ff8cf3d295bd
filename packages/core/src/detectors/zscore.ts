import { SlidingWindow } from './sliding-window';
import { WarnKeep } from './threshold';

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

  /** Mean of the baseline (NaN when empty). */
  get mean(): number {
    return this.history.mean();
  }

  /** The z-score of `value` against the baseline, without adding it (0 when not yet judged). */
  score(value: number): number {
    if (!Number.isFinite(value)) return 0;
    const n = this.history.length;
    if (n < this.minSamples) return 0;
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
    return sd > 1e-9 * Math.max(1, Math.abs(mean)) ? (value - mean) / sd : 0;
  }

  /** Adds a value to the baseline. */
  add(value: number): void {
    if (Number.isFinite(value)) this.history.push(value);
  }

  /** Adds a value; returns its z-score against the history before it (0 when not yet judged). */
  update(value: number): number {
    const z = this.score(value);
    this.add(value);
    return z;
  }

  isAnomaly(z: number): boolean {
    return Math.abs(z) >= this.threshold;
  }
}

export interface AnomalyRule {
  /** z at which a value is anomalous. */
  zScore: number;
  /**
   * The value must also be above this (the worse side): a P95 of 30 ms is
   * never an anomaly when the signal's WARN is 200 ms, however quiet its
   * baseline was.
   */
  floor: number;
  /** How long (s) the anomaly must hold, evaluation after evaluation, before it is raised. */
  forSeconds: number;
  /** A raised anomaly clears below zScore × (1 − hysteresis) or floor × (1 − hysteresis). */
  hysteresis: number;
  /** Seconds a raised anomaly stays after it cleared (see WarnKeep); default 0. */
  keepFiringSeconds?: number;
  /** Count a drop as an anomaly too (then the baseline mean must be above the floor). */
  bothDirections: boolean;
}

/**
 * A z-score alert an on-call engineer can live with: one direction (higher
 * is worse) unless asked, an absolute floor, a `for` hold and hysteresis.
 * Values that are pending (anomalous, not yet raised) stay out of the
 * baseline, so a real rise is not absorbed before the hold is over; once
 * raised, values enter it again, so a new normal clears the alert.
 */
export class AnomalyDetector {
  private readonly scores: ZScoreDetector;
  private raised = false;
  private pendingSince = Number.NaN;
  private readonly keep: WarnKeep;
  /** z of the last value judged. */
  z = 0;

  constructor(
    window: number,
    private readonly rule: AnomalyRule,
  ) {
    this.scores = new ZScoreDetector(window, rule.zScore);
    this.keep = new WarnKeep(rule.keepFiringSeconds ?? 0);
  }

  get level(): 'ok' | 'warn' {
    return this.raised ? 'warn' : 'ok';
  }

  /** Mean of the baseline the last value was judged against. */
  get baseline(): number {
    return this.scores.mean;
  }

  /** Judges `value` at `now` (ms); returns the level. Non-finite values keep it. */
  update(value: number, now: number): 'ok' | 'warn' {
    if (!Number.isFinite(value)) return this.level;
    const r = this.rule;
    const z = (this.z = this.scores.score(value));
    const worse = r.bothDirections ? Math.abs(z) : z;
    const aboveFloor = value > r.floor || (r.bothDirections && z < 0 && this.scores.mean > r.floor);
    if (this.raised) {
      const floor = r.floor * (1 - r.hysteresis);
      const aboveClearFloor = value > floor || (r.bothDirections && this.scores.mean > floor);
      if (worse < r.zScore * (1 - r.hysteresis) || !aboveClearFloor)
        this.raised = this.keep.lower('warn', 'ok', now) === 'warn';
      else this.keep.cancel();
      this.scores.add(value);
      return this.level;
    }
    if (worse >= r.zScore && aboveFloor) {
      // A clock that went backwards restarts the hold rather than raising early.
      if (Number.isNaN(this.pendingSince) || now < this.pendingSince) this.pendingSince = now;
      if (now - this.pendingSince >= r.forSeconds * 1000) {
        this.raised = true;
        this.pendingSince = Number.NaN;
        this.scores.add(value);
      }
      return this.level;
    }
    this.pendingSince = Number.NaN;
    this.scores.add(value);
    return this.level;
  }
}
