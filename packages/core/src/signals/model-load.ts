import { SpanStatusCode, type Attributes } from '@opentelemetry/api';
import { LabelTable } from '../aggregates/label-table';
import type { CounterRecorder, Gauge, GaugeObserver, HistogramRecorder, Signal, SignalContext } from '../contract';
import { ATTR, SPANS } from '../names';
import { modelLoadSignal } from '../definitions/model-load';
import type { Level, LoadOptions, Snapshot } from '../types';

type LoadKind = 'load' | 'reload';
const LOAD_KINDS: readonly LoadKind[] = ['load', 'reload'];

interface RunningLoad {
  started: number;
  kind: LoadKind;
  /** Called overdue already (WARN once per load). */
  announced: boolean;
  /** Fires when the load passes its spike threshold; null while the baseline is unknown. */
  overdue: NodeJS.Timeout | null;
}

/** setTimeout's largest delay (2^31 − 1 ms); a longer threshold is left to the tick. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Spikes in a row hold one level (a new normal) when the slowest is at most this many times the fastest: a
 * reload's own jitter stays well inside it, a store still getting worse (3.5×, 5×, 7×, …) does not.
 */
const LEVEL_SPREAD = 1.5;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Per-model load history and baseline. A configured `baselineSeconds` wins.
 * Otherwise the baseline is the *healthy* figure: the median of the first
 * `baselineSamples` loads, or the median of the last `baselineSamples`
 * non-spike loads where that is lower (a faster store, a warm cache). It
 * never rises on its own: a rolling median follows a store that degrades
 * by steps under `spikeFactor` (1.5×, 2.5×, …) and would never call the
 * 3.5× load slow, while against the healthy figure it does. Spikes are kept
 * out of the history (frozen while raised).
 *
 * A lasting, intended change (a bigger model, other storage) becomes the
 * new normal when `baselineSamples` (at least 2) spikes in a row hold one level (within
 * `LEVEL_SPREAD`): the first of them warn, the last is judged against the
 * level it completes (ok), and the event that ends the warning says the
 * level is the new baseline. An on-call engineer gets
 * a few warnings for a change that they can silence up front with
 * `baselineSeconds`, rather than a warning on every load until someone edits
 * the config; a store that keeps getting worse is not a level and keeps
 * warning. A load shorter than `minSpikeSeconds` is never a spike.
 */
export class ModelLoads {
  /** The last `baselineSamples` non-spike loads (s). */
  private readonly recent: number[] = [];
  private recentMedian = 0;
  /** Median of the first `baselineSamples` loads, or of a re-learnt level; null while learning. */
  private healthy: number | null = null;
  /** Spikes since the last non-spike load, the last `baselineSamples` of them. */
  private readonly spikesInRow: number[] = [];
  /** Loads running now, oldest first; `announced` once one has been called overdue. */
  private readonly running: RunningLoad[] = [];
  private readonly attributes: Record<string, Attributes> = {};
  readonly labels: Record<string, string>;
  loads = 0;
  failures = 0;
  loading = 0;
  lastSeconds: number | null = null;
  /** When the last load ended (ms), for glitch attribution. */
  lastEndedAt = Number.NEGATIVE_INFINITY;
  level: Level = 'ok';

  readonly baselineAttributes: Attributes;
  private readonly ctx: SignalContext;

  constructor(
    readonly model: string,
    private readonly signal: ModelLoadSignal,
  ) {
    this.ctx = signal.ctx;
    this.labels = { model };
    this.baselineAttributes = { [ATTR.model]: model };
    // The spike counter at 0 for both kinds, so the first spike is an increase, not a new series.
    for (const kind of LOAD_KINDS) this.ctx.counterSeries(signal.spikes, this.attrs(kind, ''), true);
  }

  private attrs(kind: LoadKind, outcome: 'success' | 'error' | ''): Attributes {
    const key = `${kind}|${outcome}`;
    return (this.attributes[key] ??= outcome
      ? { [ATTR.model]: this.model, [ATTR.loadKind]: kind, [ATTR.outcome]: outcome }
      : { [ATTR.model]: this.model, [ATTR.loadKind]: kind });
  }

  private configured(): number | undefined {
    return this.ctx.thresholds.modelLoad.baselineSeconds[this.model];
  }

  baseline(): number | null {
    const configured = this.configured();
    if (configured !== undefined) return configured;
    if (this.recent.length === 0) return this.healthy;
    return this.healthy === null ? this.recentMedian : Math.min(this.healthy, this.recentMedian);
  }

  async time<T>(kind: LoadKind, fn: () => Promise<T> | T, options?: LoadOptions): Promise<T> {
    const ctx = this.ctx;
    const started = ctx.clock();
    const span = ctx.tracer?.startSpan(SPANS.modelLoad, {
      attributes: { ...this.attrs(kind, ''), ...options?.attributes },
      startTime: started,
    });
    this.loading++;
    const run: RunningLoad = { started, kind, announced: false, overdue: this.armOverdue() };
    this.running.push(run);
    let result: T;
    try {
      result = await fn();
    } catch (error) {
      this.ended(run);
      this.failures++;
      this.lastEndedAt = ctx.clock();
      try {
        const now = ctx.clock();
        ctx.recordSeconds(this.signal.duration, (now - started) / 1000, this.attrs(kind, 'error'));
        span?.setAttribute(ATTR.outcome, 'error');
        // The error's type, not its message: a loader's message can carry a path, a presigned URL or a token.
        const errorType = error instanceof Error ? error.name : typeof error;
        span?.setAttribute(ATTR.errorType, errorType);
        span?.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
        span?.end(now);
      } catch (internal) {
        ctx.internalError('modelLoad', internal);
      }
      throw error;
    }
    this.ended(run);
    try {
      const now = ctx.clock();
      this.lastEndedAt = now;
      this.finish(kind, (now - started) / 1000);
      span?.setAttribute(ATTR.outcome, 'success');
      if (options?.resultAttributes && span) {
        try {
          span.setAttributes(options.resultAttributes(result));
        } catch (internal) {
          ctx.internalError('modelLoad', internal);
        }
      }
      span?.end(now);
    } catch (internal) {
      ctx.internalError('modelLoad', internal);
    }
    return result;
  }

  /**
   * A timer for the moment a load that started now passes its spike threshold, so that one still running is
   * announced then, not up to a detector interval later (a rollout's deadline can be that close). Loads are
   * rare; the timer is unref'd and cleared when the load ends.
   */
  private armOverdue(): NodeJS.Timeout | null {
    const baseline = this.baseline();
    if (baseline === null) return null;
    const { spikeFactor, minSpikeSeconds } = this.ctx.thresholds.modelLoad;
    // A millisecond past the threshold, so the check finds the load strictly beyond it.
    const delayMs = Math.max(spikeFactor * baseline, minSpikeSeconds) * 1000 + 1;
    if (!(delayMs <= MAX_TIMER_MS)) return null;
    const timer = setTimeout(() => {
      try {
        this.checkRunning(this.ctx.clock());
      } catch (internal) {
        this.ctx.internalError('modelLoad', internal);
      }
    }, delayMs);
    timer.unref();
    return timer;
  }

  /** Clears the timers of loads still running (monitor.close()); the tick no longer looks either. */
  stopTimers(): void {
    for (const run of this.running) {
      if (run.overdue) clearTimeout(run.overdue);
      run.overdue = null;
    }
  }

  private ended(run: RunningLoad): void {
    this.loading--;
    this.running.splice(this.running.indexOf(run), 1);
    if (run.overdue) clearTimeout(run.overdue);
  }

  /** Records a successful load and judges it against the baseline before adding it. */
  private finish(kind: LoadKind, seconds: number): void {
    const ctx = this.ctx;
    ctx.recordSeconds(this.signal.duration, seconds, this.attrs(kind, 'success'));
    if (!(seconds >= 0)) return;
    this.loads++;
    this.lastSeconds = seconds;
    const { spikeFactor, minSpikeSeconds, baselineSamples } = ctx.thresholds.modelLoad;
    const baseline = this.baseline();
    if (baseline !== null) {
      const threshold = Math.max(spikeFactor * baseline, minSpikeSeconds);
      if (seconds > spikeFactor * baseline && seconds >= minSpikeSeconds) {
        // At least two: with one, every spike would be its own new level and none would warn.
        const held = Math.max(2, baselineSamples);
        const relearnt = this.holdSpike(seconds, held);
        if (relearnt === null) {
          this.signal.spikes.add(1, this.attrs(kind, ''));
          this.level = 'warn';
          ctx.report({
            signal: 'model_load',
            level: 'warn',
            value: seconds,
            threshold,
            labels: this.labels,
            message: `${kind} took ${seconds.toFixed(3)} s, ${(seconds / baseline).toFixed(1)}× its ${baseline.toFixed(3)} s baseline`,
            details: { kind, baselineSeconds: baseline, ratio: seconds / baseline },
          });
        } else {
          // Judged against the level it completes: ok, and the event that ends the warning says why.
          this.level = 'ok';
          ctx.report({
            signal: 'model_load',
            level: 'ok',
            value: seconds,
            threshold: Math.max(spikeFactor * relearnt, minSpikeSeconds),
            labels: this.labels,
            message: `${kind} took ${seconds.toFixed(3)} s; the last ${held} loads held one level, ${(relearnt / baseline).toFixed(1)}× the ${baseline.toFixed(3)} s baseline: ${relearnt.toFixed(3)} s is the new baseline (modelLoad.baselineSeconds pins one)`,
            details: { kind, baselineSeconds: relearnt, previousBaselineSeconds: baseline, relearnt: true },
          });
        }
        return;
      }
      this.level = 'ok';
      ctx.report({ signal: 'model_load', level: 'ok', value: seconds, threshold, labels: this.labels });
    }
    this.spikesInRow.length = 0;
    this.recent.push(seconds);
    if (this.recent.length > baselineSamples) this.recent.shift();
    this.recentMedian = median(this.recent);
    if (this.healthy === null && this.recent.length >= baselineSamples) this.healthy = this.recentMedian;
  }

  /**
   * A look at a load still running, when it passes its threshold (its own
   * timer) and on every tick: one already past the spike threshold is
   * announced now (WARN, once per load), not when it ends: a reload that
   * hangs, or outlasts a rollout's readiness deadline, may never end. The
   * spike itself is counted, and the baseline fed, when it ends.
   */
  checkRunning(now: number): void {
    const oldest = this.running[0];
    if (!oldest || oldest.announced) return;
    const baseline = this.baseline();
    if (baseline === null) return;
    const { spikeFactor, minSpikeSeconds } = this.ctx.thresholds.modelLoad;
    const threshold = Math.max(spikeFactor * baseline, minSpikeSeconds);
    const seconds = (now - oldest.started) / 1000;
    if (!(seconds > threshold)) return;
    oldest.announced = true;
    this.level = 'warn';
    this.ctx.report({
      signal: 'model_load',
      level: 'warn',
      value: seconds,
      threshold,
      labels: this.labels,
      message: `${oldest.kind} still running after ${seconds.toFixed(3)} s, past ${spikeFactor}× its ${baseline.toFixed(3)} s baseline`,
      details: { kind: oldest.kind, baselineSeconds: baseline, ratio: seconds / baseline, running: true },
    });
  }

  /**
   * Adds a spike to the run of spikes; when `samples` of them hold one level (and no baseline is configured),
   * that level becomes the baseline and is returned.
   */
  private holdSpike(seconds: number, samples: number): number | null {
    const row = this.spikesInRow;
    row.push(seconds);
    if (row.length > samples) row.shift();
    if (row.length < samples || this.configured() !== undefined) return null;
    if (Math.max(...row) > LEVEL_SPREAD * Math.min(...row)) return null;
    this.healthy = median(row);
    this.recent.length = 0;
    this.recent.push(...row);
    this.recentMedian = this.healthy;
    row.length = 0;
    return this.healthy;
  }
}

/**
 * Model loads and reloads (`monitor.modelLoad()`): duration by outcome,
 * healthy baseline, spikes. Judged when a load ends, and when one still
 * running passes its threshold. Thresholds: `modelLoad`. Snapshot
 * section `models`.
 */
export class ModelLoadSignal implements Signal {
  readonly name = 'models';
  readonly duration: HistogramRecorder;
  readonly spikes: CounterRecorder;
  private readonly baseline: Gauge;
  private readonly models: LabelTable<ModelLoads>;

  constructor(readonly ctx: SignalContext) {
    this.duration = ctx.histogram(modelLoadSignal.metrics.modelLoadDuration);
    this.spikes = ctx.counter(modelLoadSignal.metrics.modelLoadSpikes);
    this.baseline = ctx.gauge(modelLoadSignal.metrics.modelLoadBaseline);
    this.models = new LabelTable(ctx.maxModels + 1, (model) => new ModelLoads(model, this));
  }

  /** A model the monitor just labelled: its spike series exist (at 0) from now on. */
  known(model: string): void {
    this.models.get(model);
  }

  time<T>(model: string, kind: LoadKind, fn: () => Promise<T> | T, options?: LoadOptions): Promise<T> {
    return this.models.get(this.ctx.label('model', model)).time(kind, fn, options);
  }

  evaluate(now: number): void {
    for (const state of this.models.values()) if (state.loading > 0) state.checkRunning(now);
  }

  close(): void {
    for (const state of this.models.values()) state.stopTimers();
  }

  /** Models loading now or whose last load ended within `windowMs` (a glitch's likely cause). */
  within(now: number, windowMs: number): string[] {
    const out: string[] = [];
    for (const [model, state] of this.models.entries())
      if (state.loading > 0 || state.lastEndedAt >= now - windowMs) out.push(model);
    return out;
  }

  observe(observer: GaugeObserver): void {
    for (const state of this.models.values()) {
      const baseline = state.baseline();
      if (baseline !== null) observer.observe(this.baseline, baseline, state.baselineAttributes);
    }
  }

  snapshot(): Snapshot['models'] {
    const models: Snapshot['models'] = {};
    for (const [model, state] of this.models.entries()) {
      models[model] = {
        level: state.level,
        baselineSeconds: state.baseline(),
        lastSeconds: state.lastSeconds,
        loads: state.loads,
        failures: state.failures,
        loading: state.loading,
      };
    }
    return models;
  }
}
