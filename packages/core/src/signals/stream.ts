import type { Attributes } from '@opentelemetry/api';
import { LabelTable } from '../aggregates/label-table';
import type {
  CounterRecorder,
  CounterSeries,
  Gauge,
  GaugeObserver,
  HistogramRecorder,
  HistogramSeries,
  Signal,
  SignalContext,
} from '../contract';
import { ThresholdDetector } from '../detectors/threshold';
import { ATTR } from '../attributes';
import { streamSignal } from '../definitions/stream';
import { genAiAttributes } from './gen-ai';
import type { Level, Snapshot, StreamEndReason, StreamHandle, StreamOutcome } from '../types';

const OUTCOMES: readonly StreamOutcome[] = ['completed', 'cancelled', 'error', 'unavailable', 'deadline_exceeded'];

/** The instruments a stream records into. */
interface StreamInstruments {
  readonly timeToFirstToken: HistogramRecorder;
  readonly timePerOutputToken: HistogramRecorder;
  readonly streams: CounterRecorder;
  readonly streamTokens: CounterRecorder;
}

/**
 * Per-model stream state: cached attribute objects and the sliding window
 * of the last `windowSize` outcomes (1 byte each, a running interrupted
 * count) from which the interrupted share is read in O(1).
 */
export class StreamModel {
  readonly attributes: Attributes;
  /** TTFT's and TPOT's: the GenAI conventions' attributes. */
  readonly genAiAttributes: Attributes;
  readonly outcomeAttributes: Record<StreamOutcome, Attributes>;
  /** A stream its writer cut off because the peer stopped reading. */
  readonly writeStallAttributes: Attributes;
  /** The series those attributes name, resolved once (see HistogramSeries). */
  readonly tokenSeries: CounterSeries;
  readonly outcomeSeries: Record<StreamOutcome, CounterSeries>;
  readonly writeStallSeries: CounterSeries;
  readonly timeToFirstToken: HistogramSeries;
  readonly timePerOutputToken: HistogramSeries;
  /** Made at the first ended stream: a model that is only known (its series at 0) holds no window. */
  private ring: Uint8Array | undefined = undefined;
  private head = 0;
  private filled = 0;
  private interrupted = 0;
  private readonly detector: ThresholdDetector;
  ended = 0;
  level: Level = 'ok';

  constructor(
    readonly model: string,
    private readonly ctx: SignalContext,
    instruments: StreamInstruments,
  ) {
    this.attributes = { [ATTR.model]: model };
    this.genAiAttributes = genAiAttributes(ctx, model);
    this.outcomeAttributes = Object.fromEntries(
      OUTCOMES.map((o) => [o, { [ATTR.model]: model, [ATTR.outcome]: o }]),
    ) as unknown as Record<StreamOutcome, Attributes>;
    this.writeStallAttributes = { ...this.outcomeAttributes.cancelled, [ATTR.errorType]: 'write_stall' };
    this.tokenSeries = ctx.counterSeries(instruments.streamTokens, this.attributes);
    // Every outcome at 0 from the moment the model is known: the interrupted-share rule's increase() sees the first cancels.
    this.outcomeSeries = Object.fromEntries(
      OUTCOMES.map((o) => [o, ctx.counterSeries(instruments.streams, this.outcomeAttributes[o], true)]),
    ) as unknown as Record<StreamOutcome, CounterSeries>;
    this.writeStallSeries = ctx.counterSeries(instruments.streams, this.writeStallAttributes, true);
    this.timeToFirstToken = ctx.histogramSeries(instruments.timeToFirstToken, this.genAiAttributes);
    this.timePerOutputToken = ctx.histogramSeries(instruments.timePerOutputToken, this.genAiAttributes);
    const t = ctx.thresholds.stream;
    this.detector = new ThresholdDetector({
      warn: t.interruptedRatio,
      critical: t.interruptedRatioCritical,
      hysteresis: 0,
    });
  }

  push(interrupted: boolean): void {
    const bit = interrupted ? 1 : 0;
    const ring = (this.ring ??= new Uint8Array(this.ctx.thresholds.stream.windowSize));
    if (this.filled === ring.length) this.interrupted -= ring[this.head];
    else this.filled++;
    ring[this.head] = bit;
    this.interrupted += bit;
    this.head = (this.head + 1) % ring.length;
    this.ended++;
  }

  get samples(): number {
    return this.filled;
  }

  /** Interrupted share of the window; 0 until minSamples streams have ended. */
  get interruptedRatio(): number {
    return this.filled < this.ctx.thresholds.stream.minSamples ? 0 : this.interrupted / this.filled;
  }

  evaluate(now: number): void {
    const ratio = this.interruptedRatio;
    this.level = this.detector.update(ratio, now);
    const t = this.ctx.thresholds.stream;
    this.ctx.report({
      signal: 'stream_interruptions',
      level: this.level,
      value: ratio,
      threshold: this.level === 'critical' ? t.interruptedRatioCritical : t.interruptedRatio,
      labels: { model: this.model },
    });
  }
}

/**
 * One stream. Time to first token and time per output token are the
 * conventions' "successful responses only": both are measured as tokens
 * come and recorded when the stream ends completed, so a stream the client
 * cancelled after its first token does not pull TTFT down.
 */
class Stream implements StreamHandle {
  private firstAt = Number.NaN;
  private lastAt = Number.NaN;
  private tokens = 0;
  ended = false;

  constructor(
    private readonly state: StreamModel,
    private readonly signal: StreamSignal,
    /** Arrival time (ms) TTFT is measured from. */
    private readonly arrival: number,
  ) {}

  get model(): string {
    return this.state.model;
  }

  firstToken(): void {
    if (this.ended || !Number.isNaN(this.firstAt)) return;
    try {
      this.firstAt = this.signal.ctx.clock();
      this.lastAt = this.firstAt;
    } catch (error) {
      this.signal.ctx.internalError('stream.firstToken', error);
    }
  }

  token(n = 1): void {
    if (this.ended) return;
    try {
      if (Number.isNaN(this.firstAt)) this.firstToken();
      else this.lastAt = this.signal.ctx.clock();
      if (n > 0) {
        this.tokens += n;
        this.state.tokenSeries.add(n);
      }
    } catch (error) {
      this.signal.ctx.internalError('stream.token', error);
    }
  }

  end(outcome: StreamOutcome, reason?: StreamEndReason): void {
    if (this.ended) return;
    this.ended = true;
    try {
      const state = this.state;
      const series =
        reason === 'write_stall' && outcome === 'cancelled'
          ? state.writeStallSeries
          : (state.outcomeSeries[outcome] ?? state.outcomeSeries.error);
      series.add(1);
      if (outcome === 'completed' && !Number.isNaN(this.firstAt)) {
        const { ctx } = this.signal;
        ctx.recordSecondsIn(state.timeToFirstToken, (this.firstAt - this.arrival) / 1000);
        // One time-per-output-token sample per stream: mean gap between tokens after the first.
        if (this.tokens > 1)
          ctx.recordSecondsIn(state.timePerOutputToken, (this.lastAt - this.firstAt) / 1000 / (this.tokens - 1));
      }
      this.state.push(outcome !== 'completed');
    } catch (error) {
      this.signal.ctx.internalError('stream.end', error);
    }
  }
}

/**
 * Streams per model (`monitor.stream()`, `ticket.stream()`): time to first
 * token, time per output token, tokens, outcomes, and the interrupted share
 * over the last `windowSize` streams. Thresholds: `stream`. Snapshot
 * section `streams` (models with at least one ended stream).
 */
export class StreamSignal implements Signal {
  readonly name = 'streams';
  readonly timeToFirstToken: HistogramRecorder;
  readonly timePerOutputToken: HistogramRecorder;
  readonly streams: CounterRecorder;
  readonly streamTokens: CounterRecorder;
  private readonly interruptedRatio: Gauge;
  private readonly models: LabelTable<StreamModel>;

  constructor(readonly ctx: SignalContext) {
    this.timeToFirstToken = ctx.histogram(streamSignal.metrics.timeToFirstToken);
    this.timePerOutputToken = ctx.histogram(streamSignal.metrics.timePerOutputToken);
    this.streams = ctx.counter(streamSignal.metrics.streams);
    this.streamTokens = ctx.counter(streamSignal.metrics.streamTokens);
    this.interruptedRatio = ctx.gauge(streamSignal.metrics.streamInterruptedRatio);
    this.models = new LabelTable(ctx.maxModels + 1, (model) => new StreamModel(model, ctx, this));
  }

  /** A stream of `model` whose time to first token counts from `arrival` (ms). */
  open(model: string, arrival: number): StreamHandle {
    // A model seen before skips the monitor's label table, as Queue.enqueue does.
    return new Stream(this.models.known(model) ?? this.models.get(this.ctx.label('model', model)), this, arrival);
  }

  /** A model the monitor just labelled: its outcome series exist (at 0) from now on. */
  known(model: string): void {
    this.models.get(model);
  }

  evaluate(now: number): void {
    for (const model of this.models.values()) {
      // A model with no ended stream has nothing to judge (its level is ok until one ends).
      if (model.samples === 0 && model.level === 'ok') continue;
      try {
        model.evaluate(now);
      } catch (error) {
        this.ctx.internalError('detector.stream', error);
      }
    }
  }

  observe(observer: GaugeObserver): void {
    for (const state of this.models.values()) {
      if (state.samples > 0) observer.observe(this.interruptedRatio, state.interruptedRatio, state.attributes);
    }
  }

  snapshot(): Snapshot['streams'] {
    const streams: Snapshot['streams'] = {};
    for (const [model, state] of this.models.entries()) {
      if (state.samples > 0)
        streams[model] = { level: state.level, interruptedRatio: state.interruptedRatio, samples: state.samples };
    }
    return streams;
  }
}
