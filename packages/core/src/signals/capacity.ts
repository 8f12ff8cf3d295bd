import type { Thresholds } from '../thresholds';
import { linearFit } from '../detectors/drift';
import { SlidingWindow } from '../detectors/sliding-window';
import { WarnKeep } from '../detectors/threshold';
import type { Level } from '../contract';

export interface CapacityEstimate {
  /** Arrival rate λ, EWMA (requests/s). */
  arrivalRate: number;
  /** Arrival rate over the rate window (requests/s). */
  arrivalRateWindowed: number;
  completionRate: number;
  /** Mean service time S (s) over the service window; NaN before the first completion. */
  serviceTime: number;
  serviceTimeP90: number;
  /** Servers c: the queue's concurrency. */
  concurrency: number;
  /** ρ = λ·S / c. */
  utilization: number;
  /** c / S − λ (requests/s); negative when overloaded. */
  headroom: number;
  /** Erlang C (M/M/c) expected queue wait (s); +Infinity at ρ ≥ 1. */
  predictedWait: number;
  /** Seconds until ρ reaches 1 at the current trend; +Infinity when ρ is not rising. */
  timeToSaturation: number;
  /** Whether timeToSaturation has stayed under capacity.saturationWarnSeconds long enough to raise WARN. */
  risingSustained: boolean;
  level: Level;
}

/** Ticks and completed requests needed before the capacity level is judged. */
const MIN_TICKS = 3;
const MIN_SERVICE_SAMPLES = 20;
const RANK: Record<Level, number> = { ok: 0, warn: 1, critical: 2 };
/**
 * The trend raises WARN once its projection has been under
 * capacity.saturationWarnSeconds for most of the last few trend windows. A
 * step in load (idle → 60 %) tilts the least-squares line for as long as
 * the step is inside the window, one window; noise on a steady load tilts
 * it at about one tick in five, a few ticks at a time; a ramp keeps it
 * tilted, with gaps where the noise of single ticks flattens it. Simulated
 * with Poisson arrivals at 50–125/s and 10 s windows (the tests): no WARN in
 * 100 steady 10-minute runs, and on a 0.3× → 1.5× ramp over 90 s a WARN
 * ≥ 15 s before 1× in 91 of 100, where ρ > utilizationWarn alone gives ~10 s.
 */
const SUSTAINED_TREND_WINDOWS = 2.5;
const SUSTAINED_TREND_SHARE = 0.7;
/**
 * S follows a sudden change in service time (a replica that lost half its
 * capacity) through a short window beside the long one: a sixth of
 * capacity.serviceWindowSeconds, 2–5 s. Its mean replaces the long mean only
 * when it is confidently higher: at least SHORT_MIN_SAMPLES completions,
 * SHORT_MIN_RATIO times the long mean, and SHORT_Z standard errors above
 * it. Steady noise rarely passes all three (and then for a tick, which the
 * capacity.forSeconds hold absorbs); a doubling passes them within a second
 * or two. A fall is left to the long window, so ρ comes down slowly after
 * a loss ends.
 */
const SHORT_WINDOW_SHARE = 1 / 6;
const SHORT_WINDOW_MIN_SECONDS = 2;
const SHORT_WINDOW_MAX_SECONDS = 5;
const SHORT_MIN_SAMPLES = 10;
const SHORT_MIN_RATIO = 1.2;
const SHORT_Z = 3;

/**
 * Erlang C: the probability that an arrival waits in an M/M/c queue with
 * offered load a = λ/μ (in servers). Computed with the stable recurrence
 * for Erlang B, then converted.
 */
export function erlangC(servers: number, offeredLoad: number): number {
  if (offeredLoad <= 0) return 0;
  if (offeredLoad >= servers) return 1;
  let erlangB = 1;
  for (let k = 1; k <= servers; k++) erlangB = (offeredLoad * erlangB) / (k + offeredLoad * erlangB);
  const rho = offeredLoad / servers;
  return erlangB / (1 - rho + rho * erlangB);
}

/** Expected wait in queue (s) of an M/M/c system with arrival rate λ and mean service time S. */
export function predictedWaitMMc(servers: number, arrivalRate: number, serviceTime: number): number {
  if (!(arrivalRate > 0) || !(serviceTime > 0)) return 0;
  const mu = 1 / serviceTime;
  const offered = arrivalRate / mu;
  if (offered >= servers) return Number.POSITIVE_INFINITY;
  return erlangC(servers, offered) / (servers * mu - arrivalRate);
}

/**
 * Turns a queue's arrivals and service times into a forward-looking
 * capacity estimate on the detector tick: utilization, headroom, the
 * Erlang C predicted wait and the time until ρ reaches 1. Queue wait only
 * rises once the server is saturated; ρ rises before.
 */
export class CapacityModel {
  private arrivals = 0;
  private completions = 0;
  private lastTick = Number.NaN;
  private ticks = 0;
  private pendingSince = Number.NaN;
  private readonly keep: WarnKeep;
  /** Per tick, 1 when the projection was under capacity.saturationWarnSeconds (the share over the sustained span). */
  private readonly risingTicks: SlidingWindow;
  private firstTick = Number.NaN;
  private ewma = Number.NaN;
  private readonly arrivalTicks: SlidingWindow;
  private readonly completionTicks: SlidingWindow;
  private readonly utilizationTrend: SlidingWindow;
  readonly serviceTimes = new SlidingWindow(1024);
  estimate: CapacityEstimate;

  constructor(
    /** c: the queue's concurrency, read on each update. */
    private readonly concurrency: () => number,
    private readonly thresholds: Thresholds,
    /**
     * Only a known c is judged: with c estimated from the peak in flight,
     * ρ is reported but raises no level (an early low peak would overstate ρ).
     */
    private readonly judged = true,
  ) {
    const t = thresholds.capacity;
    this.keep = new WarnKeep(t.keepFiringSeconds);
    this.arrivalTicks = new SlidingWindow(1024);
    this.completionTicks = new SlidingWindow(1024);
    // Sized for ticks as fast as 50 ms over the trend window; the fit uses the window by time.
    this.utilizationTrend = new SlidingWindow(Math.min(8192, Math.max(64, Math.ceil(t.trendWindowSeconds * 20))));
    this.risingTicks = new SlidingWindow(
      Math.min(8192, Math.max(64, Math.ceil(SUSTAINED_TREND_WINDOWS * t.trendWindowSeconds * 20))),
    );
    this.estimate = {
      arrivalRate: 0,
      arrivalRateWindowed: 0,
      completionRate: 0,
      serviceTime: Number.NaN,
      serviceTimeP90: Number.NaN,
      concurrency: concurrency(),
      utilization: 0,
      headroom: Number.NaN,
      predictedWait: 0,
      timeToSaturation: Number.POSITIVE_INFINITY,
      risingSustained: false,
      level: 'ok',
    };
  }

  /** Hot path: one increment. */
  arrived(): void {
    this.arrivals++;
  }

  /** Hot path: one increment and one ring write. */
  served(seconds: number, at: number): void {
    this.completions++;
    if (seconds >= 0) this.serviceTimes.push(seconds, at);
  }

  update(now: number): CapacityEstimate {
    const t = this.thresholds.capacity;
    const e = this.estimate;
    if (Number.isNaN(this.lastTick) || now <= this.lastTick) {
      // First tick (or a clock that did not advance): only start counting.
      if (Number.isNaN(this.lastTick)) {
        this.lastTick = now;
        this.firstTick = now;
        this.arrivals = 0;
        this.completions = 0;
      }
      return e;
    }
    const dt = (now - this.lastTick) / 1000;
    this.lastTick = now;
    const rate = this.arrivals / dt;
    this.arrivalTicks.push(this.arrivals, now);
    this.completionTicks.push(this.completions, now);
    this.arrivals = 0;
    this.completions = 0;
    const alpha = 1 - Math.exp((-Math.LN2 * dt) / t.rateHalfLifeSeconds);
    this.ewma = Number.isNaN(this.ewma) ? rate : this.ewma + alpha * (rate - this.ewma);
    const windowStart = now - t.rateWindowSeconds * 1000;
    e.arrivalRate = this.ewma;
    e.arrivalRateWindowed = this.windowedRate(this.arrivalTicks, windowStart, now);
    e.completionRate = this.windowedRate(this.completionTicks, windowStart, now);
    const service = this.serviceTimes.summary([0.9], now - t.serviceWindowSeconds * 1000);
    if (service.count > 0) {
      const long = this.serviceTimes.mean(now - t.serviceWindowSeconds * 1000);
      const short = this.shortServiceTime(now, long);
      e.serviceTime = Math.max(long, short);
      e.serviceTimeP90 = service.values[0];
    }
    const S = e.serviceTime;
    const c = (e.concurrency = this.concurrency());
    if (S > 0) {
      e.utilization = (e.arrivalRate * S) / c;
      e.headroom = c / S - e.arrivalRate;
      e.predictedWait = predictedWaitMMc(c, e.arrivalRate, S);
    }
    // The trend is fitted to each tick's own ρ (this tick's arrivals), not to the EWMA: the EWMA's approach
    // to a new level after a step lasts several half-lives and would read as a rise long after the step.
    if (S > 0) this.utilizationTrend.push((rate * S) / c, now);
    const trendStart = now - t.trendWindowSeconds * 1000;
    const trend = linearFit(this.utilizationTrend, trendStart);
    // A slope needs some history: half the window, at most 10 s.
    const trendFull =
      trend.count >= 3 &&
      now - this.oldest(this.utilizationTrend, trendStart) >= Math.min(t.trendWindowSeconds * 500, 10_000);
    e.timeToSaturation =
      e.utilization >= 1
        ? 0
        : trendFull && trend.slope > 0
          ? (1 - e.utilization) / trend.slope
          : Number.POSITIVE_INFINITY;
    const rising = e.timeToSaturation < t.saturationWarnSeconds;
    this.risingTicks.push(rising ? 1 : 0, now);
    const span = SUSTAINED_TREND_WINDOWS * t.trendWindowSeconds * 1000;
    e.risingSustained =
      rising && now - this.firstTick >= span && this.risingTicks.mean(now - span) >= SUSTAINED_TREND_SHARE;
    this.ticks++;
    // Warm-up: a rate from one or two ticks, or S from a handful of requests, is noise.
    const warm = this.ticks >= MIN_TICKS && service.count >= MIN_SERVICE_SAMPLES;
    const raw: Level =
      !this.judged || !warm
        ? 'ok'
        : e.utilization >= t.utilizationCritical
          ? 'critical'
          : e.utilization > t.utilizationWarn || e.risingSustained
            ? 'warn'
            : 'ok';
    e.level = this.hold(raw, now, t.forSeconds * 1000);
    return e;
  }

  /**
   * Raising a level needs it to hold for `forMs` (JIT warm-up and one slow second are transients); lowering
   * is immediate but for a WARN's keep (ρ near its bound crosses it both ways from tick to tick).
   */
  private hold(raw: Level, now: number, forMs: number): Level {
    const current = this.estimate.level;
    if (RANK[raw] <= RANK[current]) {
      this.pendingSince = Number.NaN;
      if (raw === current) {
        this.keep.cancel();
        return raw;
      }
      return this.keep.lower(current, raw, now);
    }
    this.keep.cancel();
    if (Number.isNaN(this.pendingSince) || now < this.pendingSince) this.pendingSince = now;
    return now - this.pendingSince >= forMs ? raw : current;
  }

  /** Mean service time over the short window when it is confidently above `long`; 0 otherwise. */
  private shortServiceTime(now: number, long: number): number {
    const seconds = Math.min(
      SHORT_WINDOW_MAX_SECONDS,
      Math.max(SHORT_WINDOW_MIN_SECONDS, this.thresholds.capacity.serviceWindowSeconds * SHORT_WINDOW_SHARE),
    );
    if (seconds >= this.thresholds.capacity.serviceWindowSeconds) return 0;
    let n = 0;
    let sum = 0;
    let squares = 0;
    this.serviceTimes.forEach(
      (value) => {
        n++;
        sum += value;
        squares += value * value;
      },
      now - seconds * 1000,
    );
    if (n < SHORT_MIN_SAMPLES) return 0;
    const mean = sum / n;
    const variance = Math.max(0, (squares - n * mean * mean) / (n - 1));
    const confident = mean >= long * SHORT_MIN_RATIO && mean - long > SHORT_Z * Math.sqrt(variance / n);
    return confident ? mean : 0;
  }

  private windowedRate(window: SlidingWindow, since: number, now: number): number {
    let total = 0;
    let first = Number.NaN;
    window.forEach((count, at) => {
      total += count;
      if (Number.isNaN(first)) first = at;
    }, since);
    // Each tick's count covers the interval before its timestamp; the span is one tick wider than first→now.
    const span = Math.min(now - since, now - first + (this.tickSpan(window) || 1000)) / 1000;
    return span > 0 ? total / span : 0;
  }

  private tickSpan(window: SlidingWindow): number {
    let prev = Number.NaN;
    let span = 0;
    window.forEach((_, at) => {
      if (!Number.isNaN(prev)) span = at - prev;
      prev = at;
    });
    return span;
  }

  private oldest(window: SlidingWindow, since: number): number {
    let first = Number.NaN;
    window.forEach((_, at) => {
      if (Number.isNaN(first)) first = at;
    }, since);
    return first;
  }
}
