import { SlidingWindow } from './sliding-window';

/**
 * P99 glitch: ΔL = max − P99 of latencies in the last `windowMs`. A large
 * ΔL means a few requests stalled far beyond the tail the service usually
 * has — the signature of a blocked event loop, a reload or memory
 * contention rather than plain load. ΔL is never negative.
 */
export class P99GlitchDetector {
  private readonly samples: SlidingWindow;

  constructor(
    readonly windowMs = 10_000,
    capacity = 4096,
    readonly minSamples = 20,
  ) {
    this.samples = new SlidingWindow(capacity);
  }

  record(latencySeconds: number, at: number): void {
    if (latencySeconds >= 0 && Number.isFinite(latencySeconds)) this.samples.push(latencySeconds, at);
  }

  /** ΔL, P99 and max over the window ending at `now`; deltaL is NaN with too few samples. */
  evaluate(now: number): { deltaL: number; p99: number; max: number; count: number } {
    const { count, max, values } = this.samples.summary([0.99], now - this.windowMs);
    if (count < this.minSamples) return { deltaL: Number.NaN, p99: values[0], max, count };
    return { deltaL: Math.max(0, max - values[0]), p99: values[0], max, count };
  }
}
