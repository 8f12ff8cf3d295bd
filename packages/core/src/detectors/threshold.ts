import type { Level } from '../types';

export interface ThresholdLevels {
  warn: number;
  critical: number;
  /** Seconds a level must hold before it is reported (Prometheus `for:`). */
  forSeconds?: number;
  /** Fraction below a bound the value must fall to leave that level (default 0.1 → 10 % below). */
  hysteresis?: number;
}

const RANK: Record<Level, number> = { ok: 0, warn: 1, critical: 2 };

export function worstLevel(a: Level, b: Level): Level {
  return RANK[a] >= RANK[b] ? a : b;
}

export function levelRank(level: Level): number {
  return RANK[level];
}

/**
 * Threshold with a `for` duration and hysteresis. Raising a level needs
 * the value above its bound for `forSeconds`; lowering it needs the value
 * below bound × (1 − hysteresis), so a value flapping around a bound does
 * not produce a stream of alerts. It never reports a level before the
 * value has held for the duration.
 */
export class ThresholdDetector {
  private reported: Level = 'ok';
  private pending: Level = 'ok';
  private pendingSince = Number.NaN;

  constructor(private readonly levels: ThresholdLevels) {}

  get level(): Level {
    return this.reported;
  }

  private raw(value: number): Level {
    const h = this.levels.hysteresis ?? 0.1;
    const current = this.reported;
    const criticalBound = current === 'critical' ? this.levels.critical * (1 - h) : this.levels.critical;
    const warnBound = current !== 'ok' ? this.levels.warn * (1 - h) : this.levels.warn;
    if (value > criticalBound) return 'critical';
    if (value > warnBound) return 'warn';
    return 'ok';
  }

  /** Feeds a value at time `now` (ms); returns the reported level. NaN values keep the level. */
  update(value: number, now: number): Level {
    if (Number.isNaN(value)) return this.reported;
    const target = this.raw(value);
    if (target === this.reported) {
      this.pending = target;
      this.pendingSince = Number.NaN;
      return this.reported;
    }
    // Going down is immediate (hysteresis already guards it); going up waits for `for`.
    if (RANK[target] < RANK[this.reported]) {
      this.reported = target;
      this.pending = target;
      this.pendingSince = Number.NaN;
      return this.reported;
    }
    if (this.pending !== target || Number.isNaN(this.pendingSince) || now < this.pendingSince) {
      // A clock that went backwards restarts the wait rather than firing early.
      this.pending = target;
      this.pendingSince = now;
    }
    const forMs = (this.levels.forSeconds ?? 0) * 1000;
    if (now - this.pendingSince >= forMs) this.reported = target;
    return this.reported;
  }

  reset(): void {
    this.reported = 'ok';
    this.pending = 'ok';
    this.pendingSince = Number.NaN;
  }
}
