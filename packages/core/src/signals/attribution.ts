import type { Signal, SignalContext } from '../contract';
import { SlidingWindow } from '../detectors/sliding-window';

/** A candidate cause of a P99 glitch: its value now and how unusual that is against its own recent ticks. */
interface GlitchFactor {
  value: number;
  baseline: number;
  zScore: number;
}

export interface GlitchAttribution {
  cause: string;
  rule: string;
  factors: Record<string, GlitchFactor>;
}

/**
 * Each factor's z-score uses a floor on σ so a perfectly flat history
 * does not turn a tiny change into an infinite score.
 */
const SIGMA_FLOOR: Record<string, number> = {
  queue_occupancy: 0.05,
  event_loop_delay: 0.005,
  gc_pause: 0.005,
  gpu_fragmentation: 0.02,
};

/**
 * Keeps the recent per-tick values of the factors that explain latency
 * glitches — queue occupancy, event-loop delay, GC pause, device-memory
 * fragmentation — and names the likely cause of a glitch by a simple rule:
 * a model load or reload overlapping the glitch window is the cause (it
 * also stalls the loop and triggers GC, so it comes first); otherwise the
 * factor with the largest z-score against its own baseline, if that z is
 * at least 2; otherwise `unknown`.
 */
class GlitchAttributor {
  private readonly history = new Map<string, SlidingWindow>();
  private latest: Record<string, GlitchFactor> = {};

  constructor(private readonly window = 60) {}

  /** Feeds this tick's values; the scores compare them with the ticks before. */
  update(values: Record<string, number>): void {
    const latest: Record<string, GlitchFactor> = {};
    for (const [name, value] of Object.entries(values)) {
      if (!Number.isFinite(value)) continue;
      let history = this.history.get(name);
      if (!history) this.history.set(name, (history = new SlidingWindow(this.window)));
      const mean = history.length ? history.mean() : value;
      let sumSquares = 0;
      history.forEach((v) => {
        sumSquares += (v - mean) ** 2;
      });
      const sd = Math.max(history.length ? Math.sqrt(sumSquares / history.length) : 0, SIGMA_FLOOR[name] ?? 1e-9);
      latest[name] = { value, baseline: mean, zScore: (value - mean) / sd };
      history.push(value);
    }
    this.latest = latest;
  }

  attribute(loadsInWindow: string[]): GlitchAttribution {
    const factors = this.latest;
    if (loadsInWindow.length > 0) {
      return {
        cause: 'model_load',
        rule: `model load/reload overlapping the window: ${loadsInWindow.join(', ')}`,
        factors,
      };
    }
    let cause = 'unknown';
    let best = 2;
    for (const [name, factor] of Object.entries(factors)) {
      if (factor.zScore >= best) {
        best = factor.zScore;
        cause = name;
      }
    }
    return {
      cause,
      rule:
        cause === 'unknown'
          ? 'no factor ≥ 2σ above its baseline'
          : `largest z-score (${best.toFixed(1)}σ above its baseline)`,
      factors,
    };
  }
}

/** Where the glitch factors are read on each tick. */
export interface GlitchFactorSources {
  /** Highest queue occupancy. */
  occupancy(): number;
  /** Longest event-loop block (s) of the last or current sample period. */
  eventLoopDelay(): number;
  /** GC pause time (s) within the last `windowMs`; NaN when not observed. */
  gcPause(now: number, windowMs: number): number;
  /** Highest device-memory fragmentation; NaN when not measured. */
  fragmentation(): number;
  /** Models loading now or whose last load ended within `windowMs`. */
  loadsWithin(now: number, windowMs: number): string[];
}

/**
 * Feeds the glitch factors on each tick, before the queues are evaluated
 * (registered first), so a glitch judged on this tick is explained with
 * this tick's values. Announces nothing itself.
 */
export class GlitchAttributionSignal implements Signal {
  readonly name = 'glitchAttribution';
  private readonly attributor = new GlitchAttributor();
  private lastTick = Number.NaN;

  constructor(
    private readonly ctx: SignalContext,
    private readonly sources: GlitchFactorSources,
  ) {}

  evaluate(now: number): void {
    const sinceLast = Number.isNaN(this.lastTick) ? 1000 : Math.max(1, now - this.lastTick);
    this.lastTick = now;
    try {
      const s = this.sources;
      this.attributor.update({
        queue_occupancy: s.occupancy(),
        event_loop_delay: s.eventLoopDelay(),
        gc_pause: s.gcPause(now, sinceLast),
        gpu_fragmentation: s.fragmentation(),
      });
    } catch (error) {
      this.ctx.internalError('detector.attribution', error);
    }
  }

  attribute(now: number, windowMs: number): GlitchAttribution {
    return this.attributor.attribute(this.sources.loadsWithin(now, windowMs));
  }
}
