import { SpanStatusCode, type Attributes } from '@opentelemetry/api';
import { LabelTable } from '../aggregates/label-table';
import type { CounterRecorder, Gauge, GaugeObserver, HistogramRecorder, Signal, SignalContext } from '../contract';
import { ATTR, METRICS, SPANS } from '../names';
import type { Level, LoadOptions, Snapshot } from '../types';

type LoadKind = 'load' | 'reload';

/**
 * Per-model load history. The baseline is a configured value, else the
 * median of the last `baselineSamples` successful loads (the first load
 * alone at the start): a median shrugs off one slow load, and a lasting
 * change becomes the new normal after a few loads instead of alerting forever.
 */
export class ModelLoads {
  private readonly history: number[] = [];
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
  }

  private attrs(kind: LoadKind, outcome: 'success' | 'error' | ''): Attributes {
    const key = `${kind}|${outcome}`;
    return (this.attributes[key] ??= outcome
      ? { [ATTR.model]: this.model, [ATTR.loadKind]: kind, [ATTR.outcome]: outcome }
      : { [ATTR.model]: this.model, [ATTR.loadKind]: kind });
  }

  baseline(): number | null {
    const configured = this.ctx.thresholds.modelLoad.baselineSeconds[this.model];
    if (configured !== undefined) return configured;
    if (this.history.length === 0) return null;
    const sorted = [...this.history].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  }

  async time<T>(kind: LoadKind, fn: () => Promise<T> | T, options?: LoadOptions): Promise<T> {
    const ctx = this.ctx;
    const started = ctx.clock();
    const span = ctx.tracer?.startSpan(SPANS.modelLoad, {
      attributes: { ...this.attrs(kind, ''), ...options?.attributes },
      startTime: started,
    });
    this.loading++;
    let result: T;
    try {
      result = await fn();
    } catch (error) {
      this.loading--;
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
    this.loading--;
    try {
      const now = ctx.clock();
      this.lastEndedAt = now;
      this.finish(kind, (now - started) / 1000);
      span?.setAttribute(ATTR.outcome, 'success');
      span?.end(now);
    } catch (internal) {
      ctx.internalError('modelLoad', internal);
    }
    return result;
  }

  /** Records a successful load and judges it against the baseline before adding it. */
  private finish(kind: LoadKind, seconds: number): void {
    const ctx = this.ctx;
    ctx.recordSeconds(this.signal.duration, seconds, this.attrs(kind, 'success'));
    if (!(seconds >= 0)) return;
    this.loads++;
    this.lastSeconds = seconds;
    const factor = ctx.thresholds.modelLoad.spikeFactor;
    const baseline = this.baseline();
    if (baseline !== null) {
      const spike = seconds > factor * baseline;
      if (spike) this.signal.spikes.add(1, this.attrs(kind, ''));
      this.level = spike ? 'warn' : 'ok';
      ctx.report(
        'model_load',
        this.level,
        seconds,
        factor * baseline,
        this.labels,
        spike
          ? `model ${this.model} ${kind} took ${seconds.toFixed(3)} s, ${(seconds / baseline).toFixed(1)}× its ${baseline.toFixed(3)} s baseline`
          : undefined,
        spike ? { kind, baselineSeconds: baseline, ratio: seconds / baseline } : undefined,
      );
    }
    this.history.push(seconds);
    if (this.history.length > ctx.thresholds.modelLoad.baselineSamples) this.history.shift();
  }
}

/**
 * Model loads and reloads (`monitor.modelLoad()`): duration by outcome,
 * rolling-median baseline, spikes. Judged when a load ends, not on the
 * tick. Thresholds: `modelLoad`. Snapshot section `models`.
 */
export class ModelLoadSignal implements Signal {
  readonly name = 'models';
  readonly duration: HistogramRecorder;
  readonly spikes: CounterRecorder;
  private readonly baseline: Gauge;
  private readonly models: LabelTable<ModelLoads>;

  constructor(readonly ctx: SignalContext) {
    this.duration = ctx.histogram(METRICS.modelLoadDuration);
    this.spikes = ctx.counter(METRICS.modelLoadSpikes);
    this.baseline = ctx.gauge(METRICS.modelLoadBaseline);
    this.models = new LabelTable(ctx.maxModels + 1, (model) => new ModelLoads(model, this));
  }

  time<T>(model: string, kind: LoadKind, fn: () => Promise<T> | T, options?: LoadOptions): Promise<T> {
    return this.models.get(this.ctx.label('model', model)).time(kind, fn, options);
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
