import type { Level } from '../contract';

export interface ThresholdLevels {
  warn: number;
  critical: number;
  /** Seconds a level must hold before it is reported (Prometheus `for:`). */
  forSeconds?: number;
  /** Fraction below a bound the value must fall to leave that level (default 0.1 → 10 % below). */
  hysteresis?: number;
  /** Seconds a reported WARN stays after the value fell below its lowered bound: see WarnKeep. */
  keepFiringSeconds?: number;
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
  private readonly keep: WarnKeep;

  constructor(private readonly levels: ThresholdLevels) {
    this.keep = new WarnKeep(levels.keepFiringSeconds ?? 0);
  }

  get level(): Level {
    return this.reported;
  }

  /** True while a WARN is reported only because of `keepFiringSeconds`: the value is back below its bound. */
  get keeping(): boolean {
    return this.keep.keeping;
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

  /**
   * Feeds a value at time `now` (ms); returns the reported level. NaN values keep the level.
   *
   * `present` is the newest evidence alone where `value` summarises a window (the waits since the
   * last tick, against the window's quantile). Raising a level, and every tick of its `for` hold,
   * also needs `present` above the bound, so a window still full of a burst the queue has already
   * absorbed raises nothing; lowering reads `value` only, so a steady raised level does not flap
   * with each tick's sample. NaN (no new evidence) vetoes nothing.
   */
  update(value: number, now: number, present = Number.NaN): Level {
    if (Number.isNaN(value)) return this.reported;
    let target = this.raw(value);
    if (RANK[target] > RANK[this.reported] && !Number.isNaN(present)) {
      const presentTarget = this.raw(present);
      if (RANK[presentTarget] < RANK[target]) target = worstLevel(presentTarget, this.reported);
    }
    if (target === this.reported) {
      this.pending = target;
      this.pendingSince = Number.NaN;
      this.keep.cancel();
      return this.reported;
    }
    // Going down needs no `for` (hysteresis already guards it), only a WARN's keep; going up waits for `for`.
    if (RANK[target] < RANK[this.reported]) {
      this.pending = target;
      this.pendingSince = Number.NaN;
      this.reported = this.keep.lower(this.reported, target, now);
      return this.reported;
    }
    this.keep.cancel();
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
    this.keep.cancel();
  }
}

/**
 * Prometheus's `keep_firing_for` for a WARN: a level that falls from WARN
 * to ok is still reported WARN until it has stayed ok for `keepSeconds`.
 * A signal near its bound (a queue near saturation that drains for a
 * moment) would otherwise resolve its warning and raise it again. CRITICAL
 * falls to WARN at once: it is the level that acts (sheds, fails
 * readiness), and acting on a recovered value turns away work that could
 * be served.
 */
export class WarnKeep {
  /** Since when the level has been below a reported WARN. */
  private clearSince = Number.NaN;
  private readonly keepMs: number;

  constructor(keepSeconds: number) {
    this.keepMs = keepSeconds * 1000;
  }

  get keeping(): boolean {
    return !Number.isNaN(this.clearSince);
  }

  /** The level to report when one reported at `reported` falls to the lower `target` at `now` (ms). */
  lower(reported: Level, target: Level, now: number): Level {
    if (target !== 'ok' || this.keepMs <= 0) {
      this.clearSince = Number.NaN;
      return target;
    }
    // A clock that went backwards restarts the keep rather than ending it early.
    if (reported === 'critical' || Number.isNaN(this.clearSince) || now < this.clearSince) this.clearSince = now;
    if (now - this.clearSince < this.keepMs) return 'warn';
    this.clearSince = Number.NaN;
    return 'ok';
  }

  /** The level is back at (or above) the reported one: the keep is over. */
  cancel(): void {
    this.clearSince = Number.NaN;
  }
}
