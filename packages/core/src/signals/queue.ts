import type { Attributes, Context, TextMapGetter } from '@opentelemetry/api';
import { LabelTable } from '../aggregates/label-table';
import type { CounterRecorder, CounterSeries, HistogramRecorder, HistogramSeries, SignalContext } from '../contract';
import { P99GlitchDetector } from '../detectors/p99-glitch';
import { SlidingWindow } from '../detectors/sliding-window';
import { levelRank, ThresholdDetector, worstLevel } from '../detectors/threshold';
import { AnomalyDetector } from '../detectors/zscore';
import { QueueFullError, RequestEndedError } from '../errors';
import { ATTR, UNKNOWN_MODEL } from '../names';
import type {
  Admission,
  Level,
  Outcome,
  QueueOptions,
  QueueSnapshot,
  QueueTracker,
  StreamHandle,
  Ticket,
} from '../types';
import { CapacityModel } from './capacity';
import { QueueAge } from './queue-age';
import { LEVEL_VALUE, QUEUE, type LiveBoard } from '../live-board';
import { QueueTokens } from './queue-tokens';
import { requestDurationAttributes } from './gen-ai';
import type { GlitchAttribution } from './attribution';
import type { RequestTail, RequestTraces, TracedRequest } from './request-trace';

/** Share below occupancyCritical (and occupancyWarn) that occupancy must fall to leave that level. */
const OCCUPANCY_HYSTERESIS = 0.05;
/** Share below waitCriticalSeconds (and waitWarnSeconds) that the wait must fall to leave that level. */
const WAIT_HYSTERESIS = 0.1;

const OUTCOMES: readonly Outcome[] = [
  'completed',
  'cancelled',
  'error',
  'rejected',
  'timeout',
  'unavailable',
  'deadline_exceeded',
];

/** The per-request instruments every queue of a monitor records into. */
export interface QueueInstruments {
  readonly queueWait: HistogramRecorder;
  readonly inferenceDuration: HistogramRecorder;
  readonly requestDuration: HistogramRecorder;
  readonly requests: CounterRecorder;
}

/** What a queue needs from the signals around it. */
export interface QueueEnvironment {
  readonly ctx: SignalContext;
  readonly instruments: QueueInstruments;
  /** A stream handle of `model` timed from `arrival` (the streams signal). */
  streamOf(model: string, arrival: number): StreamHandle;
  /** Levels from outside the queue that count as backpressure (e.g. a blocked event loop). */
  externalLevel(): Level;
  /** What else was elevated when a P99 glitch fires, and the likely cause. */
  attributeGlitch(now: number, windowMs: number): GlitchAttribution;
  /**
   * Share of the last sample period the event loop was busy (NaN when not
   * sampled). A runtime that runs on the loop shares it among all queues:
   * the capacity message shows it beside ρ.
   */
  loopUtilization(): number;
  /** A request arrived (the event-loop signal's probe returns to its full rate). */
  arrived(): void;
  /** Request spans, made when a request ends (undefined: traces off). */
  readonly requestTraces: RequestTraces | undefined;
  /** Where the queue's live values are published for another thread (live-board.ts). */
  readonly board: LiveBoard | undefined;
}

/** One outcome's series of a (queue, model). */
interface OutcomeSeries {
  readonly inference: HistogramSeries;
  readonly request: HistogramSeries;
  readonly requests: CounterSeries;
}

/**
 * Per (queue, model) state: the attribute objects and the series they
 * name, made once, so a request records without looking its series up.
 */
class QueueModel {
  readonly waitAttributes: Attributes;
  readonly outcomeAttributes: Record<Outcome, Attributes>;
  /** gen_ai.server.request.duration's: the GenAI conventions' attributes and `error.type` on failures. */
  readonly requestAttributes: Record<Outcome, Attributes>;
  readonly waitSeries: HistogramSeries;
  readonly outcomeSeries: Record<Outcome, OutcomeSeries>;

  constructor(
    readonly queue: string,
    readonly model: string,
    ctx: SignalContext,
    instruments: QueueInstruments,
  ) {
    this.waitAttributes = { [ATTR.queue]: queue, [ATTR.model]: model };
    this.outcomeAttributes = Object.fromEntries(
      OUTCOMES.map((outcome) => [outcome, { [ATTR.queue]: queue, [ATTR.model]: model, [ATTR.outcome]: outcome }]),
    ) as unknown as Record<Outcome, Attributes>;
    this.requestAttributes = requestDurationAttributes(ctx, queue, model, OUTCOMES);
    this.waitSeries = ctx.histogramSeries(instruments.queueWait, this.waitAttributes);
    this.outcomeSeries = Object.fromEntries(
      OUTCOMES.map((outcome) => [
        outcome,
        {
          inference: ctx.histogramSeries(instruments.inferenceDuration, this.outcomeAttributes[outcome]),
          request: ctx.histogramSeries(instruments.requestDuration, this.requestAttributes[outcome]),
          requests: ctx.counterSeries(instruments.requests, this.outcomeAttributes[outcome]),
        },
      ]),
    ) as unknown as Record<Outcome, OutcomeSeries>;
  }
}

interface Waiter {
  ticket: RequestTicket;
  resolve: () => void;
  reject: (error: unknown) => void;
}

class RequestTicket implements Ticket, TracedRequest {
  startedAt = Number.NaN;
  readonly arrival: number;
  /** With traces on, the context at arrival: the parent of a span made when the request ends (request-trace.ts). */
  readonly parent: Context | undefined;
  extra: Attributes | undefined;
  /** With traces on, where the incoming trace context can be read (setTraceCarrier), until the request ends. */
  traceCarrier: unknown = undefined;
  traceGetter: TextMapGetter | undefined = undefined;
  started = false;
  ended = false;
  /** Its service time has gone to the capacity model (at slot release in run(), else at end). */
  private served = false;
  /** Token cost (setTokens) and output tokens produced, for the queue's token backlog. */
  private promptTokens = 0;
  private maxOutput = 0;
  private producedTokens = 0;

  constructor(
    private readonly queue: Queue,
    private readonly slot: QueueModel,
    arrival: number,
    /** Its place among the waiting requests' arrival stamps (QueueAge), -1 when not stamped. */
    readonly seq: number,
  ) {
    this.arrival = arrival;
    this.parent = queue.traces?.parent();
  }

  get model(): string {
    return this.slot.model;
  }

  start(): void {
    if (this.started || this.ended) return;
    this.started = true;
    const q = this.queue;
    try {
      q.left(this);
      const now = q.ctx.clock();
      const tokens = q.tokens;
      if (tokens !== undefined) {
        tokens.advance(now, q.inFlight);
        tokens.owed += this.owed();
        tokens.runningMax += this.maxOutput;
      }
      if (++q.inFlight > q.peakInFlight) q.peakInFlight = q.inFlight;
      q.publish();
      this.startedAt = now;
      const wait = (now - this.arrival) / 1000;
      q.ctx.recordSecondsIn(this.slot.waitSeries, wait);
      q.waits.push(wait, now);
    } catch (error) {
      q.ctx.internalError('ticket.start', error);
    }
  }

  end(outcome: Outcome = 'completed'): void {
    if (this.ended) return;
    this.ended = true;
    const q = this.queue;
    try {
      const now = q.ctx.clock();
      const known = this.slot.outcomeAttributes[outcome] !== undefined;
      const attributes = known ? this.slot.outcomeAttributes[outcome] : this.slot.outcomeAttributes.error;
      const series = this.slot.outcomeSeries[known ? outcome : 'error'];
      if (this.started) {
        if (q.tokens !== undefined) {
          q.tokens.advance(now, q.inFlight);
          q.tokens.owed -= this.owed();
          q.tokens.runningMax -= this.maxOutput;
          if (outcome === 'completed' && this.maxOutput > 0) q.tokens.completed(this.producedTokens, this.maxOutput);
        }
        q.inFlight--;
        const inference = (now - this.startedAt) / 1000;
        q.ctx.recordSecondsIn(series.inference, inference);
        q.glitch.record(inference, now);
        if (!this.served) q.capacity_.served(inference, now);
      } else {
        q.left(this);
      }
      q.ctx.recordSecondsIn(series.request, (now - this.arrival) / 1000);
      series.requests.add(1);
      q.completed++;
      q.requestEnded(now);
      q.publish();
      q.traces?.ended(q.tail!, this, outcome, attributes, now);
    } catch (error) {
      q.ctx.internalError('ticket.end', error);
    }
    // Let go of the carrier (an HTTP response, say): nothing reads it once the span was or was not made.
    this.traceCarrier = undefined;
  }

  stream(): StreamHandle {
    return this.queue.streamOf(this.slot.model, this.arrival);
  }

  /** Output tokens this request still owes while it runs. */
  private owed(): number {
    return this.maxOutput > this.producedTokens ? this.maxOutput - this.producedTokens : 0;
  }

  /** Its prompt and max output, while it waits (left() takes them out again). */
  waitingTokens(sign: 1 | -1): void {
    const tokens = this.queue.tokens;
    if (tokens === undefined) return;
    tokens.waitingPrompt += sign * this.promptTokens;
    tokens.waitingOutput += sign * this.maxOutput;
  }

  setTokens(prompt: number, maxOutput = 0): void {
    if (this.ended) return;
    const q = this.queue;
    try {
      const tokens = q.tokenBacklog();
      if (this.started) {
        const before = this.owed();
        tokens.runningMax -= this.maxOutput;
        this.maxOutput = tokenCount(maxOutput);
        tokens.runningMax += this.maxOutput;
        tokens.owed += this.owed() - before;
        this.promptTokens = tokenCount(prompt);
      } else {
        this.waitingTokens(-1);
        this.promptTokens = tokenCount(prompt);
        this.maxOutput = tokenCount(maxOutput);
        this.waitingTokens(1);
      }
    } catch (error) {
      q.ctx.internalError('ticket.setTokens', error);
    }
  }

  produced(n: number): void {
    if (!this.started || this.ended || !(n > 0) || !Number.isFinite(n)) return;
    const q = this.queue;
    const tokens = q.tokens;
    if (tokens === undefined) return;
    // No clock read: the tokens join the busy stretch they came in when it is next accounted.
    tokens.produced(n);
    const before = this.owed();
    this.producedTokens += n;
    tokens.owed -= before - this.owed();
  }

  /**
   * run() gave its slot back: the next request may start while this one
   * still writes its response, so S for capacity is the time the slot was
   * held, not start → end (which would overstate ρ = λ·S / c).
   */
  released(): void {
    if (!this.started || this.ended || this.served) return;
    this.served = true;
    try {
      const now = this.queue.ctx.clock();
      this.queue.capacity_.served((now - this.startedAt) / 1000, now);
    } catch (error) {
      this.queue.ctx.internalError('ticket.released', error);
    }
  }

  setTraceCarrier<Carrier>(carrier: Carrier, getter?: TextMapGetter<Carrier>): void {
    if (this.queue.traces === undefined || this.ended) return;
    this.traceCarrier = carrier;
    this.traceGetter = getter as TextMapGetter | undefined;
  }

  setAttributes(attributes: Attributes): void {
    if (this.queue.traces === undefined || this.ended) return;
    // Kept by reference; merged (one object) only when set twice.
    this.extra = this.extra === undefined ? attributes : { ...this.extra, ...attributes };
  }
}

/** A queue tracker: depth, occupancy, waits, backpressure level and an optional bounded FIFO. */
export class Queue implements QueueTracker {
  readonly capacity: number;
  readonly concurrency: number;
  readonly maxWaiting: number;
  waiting = 0;
  inFlight = 0;
  completed = 0;
  /** Recent queue waits (s) with their start times, for the wait quantile. */
  readonly waits = new SlidingWindow(2048);
  readonly glitch: P99GlitchDetector;
  private readonly anomaly: AnomalyDetector;
  private readonly models: LabelTable<QueueModel>;
  private readonly occupancyDetector: ThresholdDetector;
  private readonly waitDetector: ThresholdDetector;
  private readonly ageDetector: ThresholdDetector;
  private readonly pendingDetector: ThresholdDetector;
  /** Arrival stamps of the waiting requests: the oldest one's age and the waits still accruing. */
  readonly age: QueueAge;
  /** An LLM queue's token backlog: made with the queue (`tokens: true`) or when a request first says its tokens. */
  tokens: QueueTokens | undefined;
  private tokenDetector: ThresholdDetector | undefined;
  /**
   * Occupancy and age bounds precomputed for the request path: waiting + in
   * flight at which occupancy is over WARN / CRITICAL (the counts the
   * detector's `>` comparison first raises at), and the age bounds in ms.
   */
  private readonly warnCount: number;
  private readonly criticalCount: number;
  /** Waiting + in flight at or above which an announced CRITICAL occupancy stays (its hysteresis bound). */
  private readonly criticalHoldCount: number;
  private readonly ageWarnMs: number;
  private readonly ageCriticalMs: number;
  /** Age level last announced, so the request path judges the age only when it crosses a level. */
  private ageAnnounced: Level = 'ok';
  /**
   * A shedding episode: begun when the level reaches CRITICAL, ended once no
   * request was turned away for queue.shedHoldSeconds and the levels that
   * raised it cleared by their hysteresis. Within it admission turns away
   * only what would take the queue past its targets (admitsDuringEpisode).
   */
  private shedding = false;
  /** This queue's cells on the live board (undefined without a board or past its slots). */
  private readonly live: Float64Array | undefined;
  /** The board's change count (live-board.ts), undefined without a board. */
  private readonly changes: Float64Array | undefined;
  /** Occupancy rank and waiting-or-not at the last level written to the board (publish()). */
  private publishedState = -1;
  private shedSince = Number.NaN;
  /** When the episode last turned a request away (ms). */
  private lastShed = Number.NaN;
  /** Requests the episode turned away and let in, for its closing message. */
  private episodeShed = 0;
  private episodeAdmitted = 0;
  /**
   * Within an episode, the most requests (waiting + in flight) admission
   * lets in: under occupancyCritical less its hysteresis, so the occupancy
   * that raised the episode clears, but never fewer than the slots, so the
   * queue keeps serving at its concurrency.
   */
  private readonly episodeCount: number;
  /** Within an episode, the longest (ms) a request admitted may expect to wait: waitCriticalSeconds less its hysteresis. */
  private readonly episodeWaitMs: number;
  private waitQuantile = Number.NaN;
  private lastModel: string | undefined;
  private lastSlot: QueueModel | undefined;
  /** Occupancy level last announced, so admission announces a shed once. */
  private occupancyAnnounced: Level = 'ok';
  private lastEvaluated = Number.NEGATIVE_INFINITY;
  /** Utilization, headroom, predicted wait and time to saturation. */
  readonly capacity_: CapacityModel;
  peakInFlight = 0;
  private readonly explicitConcurrency: boolean;
  private running = 0;
  private readonly fifo: Waiter[] = [];
  readonly labels: Record<string, string>;
  readonly ctx: SignalContext;
  readonly instruments: QueueInstruments;
  readonly traces: RequestTraces | undefined;
  /** This queue's request-duration tail, which judges "slow" (with traces on). */
  readonly tail: RequestTail | undefined;

  constructor(
    readonly name: string,
    options: QueueOptions,
    private readonly env: QueueEnvironment,
  ) {
    const ctx = (this.ctx = env.ctx);
    this.instruments = env.instruments;
    this.traces = env.requestTraces;
    this.tail = this.traces?.tail();
    const t = ctx.thresholds;
    this.concurrency = options.concurrency ?? 1;
    this.capacity = options.capacity ?? (options.maxWaiting !== undefined ? this.concurrency + options.maxWaiting : 64);
    this.maxWaiting = options.maxWaiting ?? Math.max(0, this.capacity - this.concurrency);
    this.models = new LabelTable(ctx.maxModels + 1, (model) => new QueueModel(name, model, ctx, env.instruments));
    this.occupancyDetector = new ThresholdDetector({
      warn: t.queue.occupancyWarn,
      critical: t.queue.occupancyCritical,
      hysteresis: OCCUPANCY_HYSTERESIS,
      // Judged on the request path as well as the tick: a queue hovering at WARN would otherwise
      // resolve and raise its warning as often as requests come and go.
      keepFiringSeconds: t.queue.keepFiringSeconds,
    });
    this.warnCount = firstCountOver(t.queue.occupancyWarn, this.capacity);
    this.criticalCount = firstCountOver(t.queue.occupancyCritical, this.capacity);
    this.criticalHoldCount = firstCountOver(t.queue.occupancyCritical * (1 - OCCUPANCY_HYSTERESIS), this.capacity);
    this.episodeCount = Math.max(Math.min(this.concurrency, this.capacity), this.criticalHoldCount - 1);
    this.episodeWaitMs = t.queue.waitCriticalSeconds * (1 - WAIT_HYSTERESIS) * 1000;
    // No hold: the age is already how long the oldest request has waited, and a hold would count that time
    // twice (with a 2 s hold an age WARN at 1 s came at 3 s, after a client's 2 s timeout).
    this.ageDetector = new ThresholdDetector({
      warn: t.queue.ageWarnSeconds,
      critical: t.queue.ageCriticalSeconds,
      keepFiringSeconds: t.queue.keepFiringSeconds,
    });
    this.pendingDetector = new ThresholdDetector({
      warn: t.queue.pendingWaitWarnSeconds,
      critical: t.queue.pendingWaitCriticalSeconds,
      forSeconds: t.queue.forSeconds,
      keepFiringSeconds: t.queue.keepFiringSeconds,
    });
    this.ageWarnMs = t.queue.ageWarnSeconds * 1000;
    this.ageCriticalMs = t.queue.ageCriticalSeconds * 1000;
    // Room for every request up to the capacity several times over; past it the age is a lower bound (QueueAge).
    const ageOrigin = ctx.clock();
    this.age = new QueueAge(Math.min(16_384, Math.max(256, 4 * this.capacity)), ageOrigin);
    this.live = env.board?.queueSlot(name, this.capacity, ageOrigin);
    this.changes = env.board?.changes;
    this.waitDetector = new ThresholdDetector({
      warn: t.queue.waitWarnSeconds,
      critical: t.queue.waitCriticalSeconds,
      hysteresis: WAIT_HYSTERESIS,
      forSeconds: t.queue.forSeconds,
      keepFiringSeconds: t.queue.keepFiringSeconds,
    });
    this.glitch = new P99GlitchDetector(t.glitch.windowSeconds * 1000, 4096, t.glitch.minSamples);
    this.anomaly = new AnomalyDetector(t.anomaly.window, {
      zScore: t.anomaly.zScore,
      floor: t.anomaly.floorRatio * t.queue.waitWarnSeconds,
      forSeconds: t.anomaly.forSeconds,
      hysteresis: t.anomaly.hysteresis,
      keepFiringSeconds: t.anomaly.keepFiringSeconds,
      bothDirections: t.anomaly.bothDirections,
    });
    this.labels = { queue: name };
    if (options.tokens) this.tokenBacklog();
    // With an explicit concurrency c is known; otherwise it is the most requests ever seen in flight.
    const explicit = (this.explicitConcurrency = options.concurrency !== undefined);
    this.capacity_ = new CapacityModel(() => this.slots(), t, explicit);
  }

  /** The slots c: the concurrency given, else the most requests seen in flight. */
  private slots(): number {
    return this.explicitConcurrency ? this.concurrency : Math.max(1, this.peakInFlight);
  }

  get occupancy(): number {
    return (this.waiting + this.inFlight) / this.capacity;
  }

  /**
   * Writes the live values to the board (a few stores; see live-board.ts).
   * On the request path the level is judged again only when what moves it
   * there moved: the occupancy crossed a bound, or the queue emptied or
   * stopped being empty (a wait level counts only while requests wait). The
   * tick and a shedding episode's start and end judge it every time (`force`).
   */
  publish(force = false): void {
    const changes = this.changes;
    if (changes === undefined) return;
    // A request arrived, started or ended: counted with or without a slot (a queue past the board's slots is
    // one whose gauges only a collection reads). What the tick and a shedding episode's start and end write
    // again (force) is the level, which a reader reads live, and a change of it raises an alert, which counts.
    if (!force) changes[0]++;
    const cells = this.live;
    if (cells === undefined) return;
    const waiting = this.waiting;
    cells[QUEUE.waiting] = waiting;
    cells[QUEUE.inFlight] = this.inFlight;
    cells[QUEUE.stamped] = this.age.waiting;
    cells[QUEUE.arrivals] = this.age.arrivalSum;
    const n = waiting + this.inFlight;
    const state = (n >= this.criticalCount ? 4 : n >= this.warnCount ? 2 : 0) + (waiting > 0 ? 1 : 0);
    if (force || state !== this.publishedState) {
      this.publishedState = state;
      cells[QUEUE.level] = LEVEL_VALUE[this.level()];
    }
  }

  /** The oldest waiting request's stamp changed (the first arrival into an empty queue, or a request left). */
  private publishOldest(): void {
    if (this.live !== undefined) this.live[QUEUE.oldest] = this.age.oldestArrival();
  }

  enqueue(model?: string): Ticket {
    const slot = this.slotOf(model ?? UNKNOWN_MODEL);
    const now = this.ctx.clock();
    this.waiting++;
    const seq = this.age.arrive(now);
    if (this.waiting === 1) this.publishOldest();
    this.capacity_.arrived();
    this.env.arrived();
    const ticket = new RequestTicket(this, slot, now, seq);
    this.watch(now);
    this.publish();
    return ticket;
  }

  /**
   * A request ended: a CRITICAL occupancy announced on the request path is
   * lowered on it too, once the count fell under its hysteresis bound, so a
   * burst that is over does not keep readiness failing until the tick. It
   * falls to WARN, which only the tick lowers (after its keep).
   */
  requestEnded(now: number): void {
    if (this.occupancyAnnounced === 'critical' && this.waiting + this.inFlight < this.criticalHoldCount)
      this.judgeOccupancy(now);
  }

  /** A request stopped waiting (started, or ended before it started). */
  left(ticket: RequestTicket): void {
    this.waiting--;
    this.age.leave(ticket.seq, ticket.arrival);
    this.publishOldest();
    ticket.waitingTokens(-1);
  }

  /** The token backlog, made on first use. */
  tokenBacklog(): QueueTokens {
    if (this.tokens === undefined) {
      const t = this.ctx.thresholds;
      this.tokenDetector = new ThresholdDetector({
        warn: t.queue.tokenDrainWarnSeconds,
        critical: t.queue.tokenDrainCriticalSeconds,
        forSeconds: t.queue.forSeconds,
        keepFiringSeconds: t.queue.keepFiringSeconds,
      });
      this.tokens = new QueueTokens(t.capacity.rateWindowSeconds);
    }
    return this.tokens;
  }

  /** The token backlog's drain time through its detector, announced as `queue_token_backlog`. */
  private judgeTokens(now: number): void {
    const tokens = this.tokens;
    const detector = this.tokenDetector;
    if (tokens === undefined || detector === undefined) return;
    const t = this.ctx.thresholds.queue;
    tokens.advance(now, this.inFlight);
    const drain = tokens.drainSeconds(this.waiting);
    // NaN (no output rate yet) keeps the level.
    const level = detector.update(drain, now);
    const bound = level === 'critical' ? t.tokenDrainCriticalSeconds : t.tokenDrainWarnSeconds;
    const share = tokens.usedShare();
    const work = `${tokens.owed} output tokens owed to ${this.inFlight} running + ${tokens.waitingOutput} asked by ${this.waiting} waiting (${tokens.waitingPrompt} prompt tokens)${share < 1 ? `, ${(share * 100).toFixed(0)} % of max_tokens expected as recent requests used` : ''}`;
    this.ctx.report({
      signal: 'queue_token_backlog',
      level,
      value: Number.isNaN(drain) ? 0 : drain,
      threshold: bound,
      labels: this.labels,
      message:
        level === 'ok'
          ? undefined
          : detector.keeping
            ? `token backlog drains in ${seconds(drain)}, back under ${t.tokenDrainWarnSeconds} s; the warning stays until it has been for ${t.keepFiringSeconds} s (queue.keepFiringSeconds)`
            : `token backlog drains in ${seconds(drain)} > ${bound} s at ${tokens.rate().toFixed(1)} tokens/s: ${work}`,
    });
  }

  /**
   * The request path's look at the levels that move with each request:
   * occupancy (against the precomputed counts) and the oldest waiting
   * request's age. A level crossed is judged and announced here, not only
   * on the next tick, so a queue filling up in under a second is heard
   * before it sheds. Nothing is allocated unless a level changes.
   */
  private watch(now: number): void {
    try {
      const n = this.waiting + this.inFlight;
      const rank = n >= this.criticalCount ? 2 : n >= this.warnCount ? 1 : 0;
      if (rank > levelRank(this.occupancyAnnounced)) this.judgeOccupancy(now);
      if (this.ageAnnounced !== 'critical' && this.waiting > 0) {
        const bound = this.ageAnnounced === 'ok' ? this.ageWarnMs : this.ageCriticalMs;
        if (this.age.oldest(now) > bound) this.judgeAge(now);
      }
    } catch (error) {
      this.ctx.internalError('queue.watch', error);
    }
  }

  /**
   * The (queue, model) state of a model name. Most requests of a queue name
   * the model the one before named: that answer is kept and reused, since a
   * label recorded under its own name keeps it (LabelTable never evicts).
   */
  private slotOf(model: string): QueueModel {
    if (model === this.lastModel) return this.lastSlot!;
    // A model this queue has seen under its own name skips the monitor's label table: one Map lookup, not two.
    const seen = this.models.known(model);
    if (seen !== undefined) {
      this.lastModel = model;
      this.lastSlot = seen;
      return seen;
    }
    const label = this.ctx.label('model', model);
    const slot = this.models.get(label);
    // Only a name recorded as itself (not `_other` past the cap, nor a sanitized form) is safe to reuse unseen.
    if (label === model && slot.model === model) {
      this.lastModel = model;
      this.lastSlot = slot;
    }
    return slot;
  }

  private occupancyLevel(): Level {
    const t = this.ctx.thresholds.queue;
    const occupancy = this.occupancy;
    return occupancy > t.occupancyCritical ? 'critical' : occupancy > t.occupancyWarn ? 'warn' : 'ok';
  }

  /** The backpressure level: CRITICAL while admission sheds, else the level of its parts now. */
  level(): Level {
    return this.shedding ? 'critical' : this.liveLevel();
  }

  private liveLevel(): Level {
    // A wait level judged on past waits says nothing about an empty queue:
    // without this gate a burst would keep shedding (and readiness at 503)
    // for the whole wait window after the queue drained.
    let level = worstLevel(this.occupancyLevel(), this.waiting > 0 ? this.waitDetector.level : 'ok');
    if (this.ctx.thresholds.capacity.backpressure) level = worstLevel(level, this.capacity_.estimate.level);
    return worstLevel(level, this.env.externalLevel());
  }

  /**
   * An episode ends only when no request was turned away for
   * `queue.shedHoldSeconds` (counted from its start too) and every part that
   * can raise it has cleared by its hysteresis (occupancy below
   * occupancyCritical less OCCUPANCY_HYSTERESIS, the wait detector below its
   * CRITICAL, which it leaves 10 % under the bound): an overload that lasts
   * is one episode, however its levels move within it.
   */
  private shedEnds(now: number): boolean {
    const t = this.ctx.thresholds;
    // A clock that went backwards does not keep the episode forever.
    if (now - this.lastShed < t.queue.shedHoldSeconds * 1000 && now >= this.lastShed) return false;
    if (this.occupancy > t.queue.occupancyCritical * (1 - OCCUPANCY_HYSTERESIS)) return false;
    if (this.waitDetector.level === 'critical') return false;
    if (t.capacity.backpressure && this.capacity_.estimate.level === 'critical') return false;
    return this.env.externalLevel() !== 'critical';
  }

  /**
   * Within an episode, whether one more request fits the targets: the
   * queue at most `episodeCount` requests, and the wait it can expect at
   * most `episodeWaitMs`. That wait is the time the slots take to serve
   * those ahead of it, (waiting + 1) · S / c with the capacity model's
   * service time S, and at least the oldest waiting request's age (all
   * there is before S is known, and what shows a stalled queue at once).
   * So the queue keeps its slots busy and sheds only the excess, with its
   * levels held under the bounds they leave CRITICAL at. A CRITICAL event
   * loop sheds everything: the process, not the queue, is what is short.
   */
  private admitsDuringEpisode(now: number): boolean {
    if (this.waiting + this.inFlight >= this.episodeCount) return false;
    if (this.env.externalLevel() === 'critical') return false;
    if (this.waiting === 0) return true;
    const e = this.capacity_.estimate;
    const ahead =
      e.serviceTime > 0 && e.concurrency > 0 ? ((this.waiting + 1) * e.serviceTime * 1000) / e.concurrency : 0;
    return Math.max(ahead, this.age.oldest(now)) <= this.episodeWaitMs;
  }

  retryAfterSeconds(): number {
    const base = this.ctx.thresholds.queue.retryAfterSeconds;
    // Suggest at least the recent wait: a client retrying sooner would queue again.
    return Number.isFinite(this.waitQuantile) ? Math.max(base, Math.ceil(this.waitQuantile)) : base;
  }

  admit(): Admission {
    // The request admitted is enqueued next, which judges the levels it moves (watch): nothing to judge here.
    if (!this.shedding) {
      const level = this.liveLevel();
      if (level !== 'critical') return { admit: true, level, retryAfterSeconds: this.retryAfterSeconds() };
      // Shed only at a level already announced: occupancy is judged live, so the
      // decision to shed announces it first (listeners and webhook hear of it
      // before the first 503 is written). The other parts of the level were
      // announced on the tick or sample that set them.
      this.announceShedding();
      const started = this.ctx.clock();
      this.startShedding(started);
      // The request that began the episode is judged against its targets at the same instant.
      return this.judgeInEpisode(started);
    }
    return this.judgeInEpisode(this.ctx.clock());
  }

  /** Admission within an episode: it ends here once it may, else the request is let in only within the targets. */
  private judgeInEpisode(now: number): Admission {
    if (this.shedEnds(now)) {
      // Every level that can raise an episode has cleared: nothing to start again.
      this.stopShedding(now);
      return { admit: true, level: this.liveLevel(), retryAfterSeconds: this.retryAfterSeconds() };
    }
    const admit = this.admitsDuringEpisode(now);
    if (admit) this.episodeAdmitted++;
    else {
      this.lastShed = now;
      this.episodeShed++;
    }
    return { admit, level: 'critical', retryAfterSeconds: this.retryAfterSeconds() };
  }

  /**
   * Shedding is announced as `queue_backpressure` (the rule on the
   * backpressure gauge has the same name): once when it begins, before the
   * first refusal, and once when it ends. The level that raised it may
   * lower within the episode; this one stays CRITICAL as long as requests
   * are turned away, and for the hold after the last.
   */
  private startShedding(now: number): void {
    this.shedding = true;
    this.publish(true);
    this.shedSince = now;
    this.lastShed = now;
    this.episodeShed = 0;
    this.episodeAdmitted = 0;
    try {
      const t = this.ctx.thresholds;
      const why: string[] = [];
      if (this.occupancyLevel() === 'critical') why.push(`occupancy ${(this.occupancy * 100).toFixed(0)} %`);
      if (this.waiting > 0 && this.waitDetector.level === 'critical')
        why.push(`queue wait P${Math.round(t.queue.waitQuantile * 100)} ${ms(this.waitQuantile)}`);
      if (t.capacity.backpressure && this.capacity_.estimate.level === 'critical')
        why.push(`utilization ${this.capacity_.estimate.utilization.toFixed(2)}`);
      if (this.env.externalLevel() === 'critical') why.push('the event loop');
      this.ctx.report({
        signal: 'queue_backpressure',
        level: 'critical',
        value: 2,
        threshold: 2,
        labels: this.labels,
        message: `admission sheds (${why.join(', ')} CRITICAL): it turns away a request that would take the queue past ${this.episodeCount} of ${this.capacity} or wait more than ${ms(this.episodeWaitMs / 1000)}, and serves everything again once it has turned none away for ${t.queue.shedHoldSeconds} s (queue.shedHoldSeconds) and those levels cleared by their hysteresis`,
      });
    } catch (error) {
      this.ctx.internalError('queue.shed', error);
    }
  }

  private stopShedding(now: number): void {
    this.shedding = false;
    this.publish(true);
    try {
      this.ctx.report({
        signal: 'queue_backpressure',
        level: 'ok',
        value: levelRank(this.liveLevel()),
        threshold: 2,
        labels: this.labels,
        message: `admission serves everything again after ${((now - this.shedSince) / 1000).toFixed(1)} s of shedding, which turned away ${this.episodeShed} of ${this.episodeShed + this.episodeAdmitted} requests`,
      });
    } catch (error) {
      this.ctx.internalError('queue.shed', error);
    }
  }

  /** Announces a CRITICAL occupancy not yet announced; called where a request is about to be turned away. */
  private announceShedding(): void {
    if (this.occupancyAnnounced !== 'critical' && this.occupancyLevel() === 'critical')
      this.judgeOccupancy(this.ctx.clock());
  }

  /** Occupancy through its detector, announced as `queue_occupancy`. */
  private judgeOccupancy(now: number): void {
    const t = this.ctx.thresholds.queue;
    const occupancy = this.occupancy;
    const level = this.occupancyDetector.update(occupancy, now);
    this.occupancyAnnounced = level;
    const what = `${this.waiting} waiting + ${this.inFlight} in flight of capacity ${this.capacity} (${(occupancy * 100).toFixed(0)} %)`;
    this.ctx.report({
      signal: 'queue_occupancy',
      level,
      value: occupancy,
      threshold: level === 'critical' ? t.occupancyCritical : t.occupancyWarn,
      labels: this.labels,
      message:
        level === 'ok'
          ? undefined
          : this.occupancyDetector.keeping
            ? `${what}, back under ${(t.occupancyWarn * 100).toFixed(0)} %; the warning stays until it has been for ${t.keepFiringSeconds} s (queue.keepFiringSeconds)`
            : `${what}${level === 'critical' ? '; admission sheds at this level' : ''}`,
    });
  }

  /** The oldest waiting request's age through its detector, announced as `queue_age`. */
  private judgeAge(now: number): void {
    const t = this.ctx.thresholds.queue;
    const age = this.age.oldest(now) / 1000;
    const level = this.ageDetector.update(age, now);
    this.ageAnnounced = level;
    const bound = level === 'critical' ? t.ageCriticalSeconds : t.ageWarnSeconds;
    this.ctx.report({
      signal: 'queue_age',
      level,
      value: age,
      threshold: bound,
      labels: this.labels,
      message:
        level === 'ok'
          ? undefined
          : this.ageDetector.keeping
            ? `oldest waiting request ${ms(age)}, back under ${ms(t.ageWarnSeconds)} (${this.waiting} waiting); the warning stays until it has been for ${t.keepFiringSeconds} s (queue.keepFiringSeconds)`
            : `oldest waiting request ${ms(age)} > ${ms(bound)}; ${this.waiting} waiting have waited ${(this.age.total(now) / 1000).toFixed(1)} s in all`,
    });
  }

  /**
   * The waits still accruing, summed and shared among the slots, through
   * its detector, announced as `queue_pending_wait`.
   */
  private judgePending(now: number): void {
    const t = this.ctx.thresholds.queue;
    const total = this.age.total(now) / 1000;
    const slots = this.slots();
    const perSlot = total / slots;
    const level = this.pendingDetector.update(perSlot, now);
    const bound = level === 'critical' ? t.pendingWaitCriticalSeconds : t.pendingWaitWarnSeconds;
    this.ctx.report({
      signal: 'queue_pending_wait',
      level,
      value: perSlot,
      threshold: bound,
      labels: this.labels,
      message:
        level === 'ok'
          ? undefined
          : this.pendingDetector.keeping
            ? `waits still accruing ${perSlot.toFixed(1)} s per slot, back under ${t.pendingWaitWarnSeconds} s (${this.waiting} waiting); the warning stays until it has been for ${t.keepFiringSeconds} s (queue.keepFiringSeconds)`
            : `the ${this.waiting} requests still waiting have waited ${total.toFixed(1)} s in all, ${perSlot.toFixed(1)} s per slot of ${slots} > ${bound} s; the oldest ${ms(this.age.oldest(now) / 1000)}`,
    });
  }

  reject<Carrier>(model?: string, carrier?: Carrier, getter?: TextMapGetter<Carrier>): void {
    try {
      const slot = this.slotOf(model ?? UNKNOWN_MODEL);
      slot.outcomeSeries.rejected.requests.add(1);
      this.traces?.shed(
        slot.outcomeAttributes.rejected,
        this.ctx.clock(),
        carrier,
        getter as TextMapGetter | undefined,
      );
    } catch (error) {
      this.ctx.internalError('queue.reject', error);
    }
  }

  streamOf(model: string, arrival: number): StreamHandle {
    return this.env.streamOf(model, arrival);
  }

  async run<T>(
    fn: () => Promise<T> | T,
    options?: { model?: string; ticket?: Ticket; signal?: AbortSignal; attributes?: Attributes },
  ): Promise<T> {
    const own = options?.ticket === undefined;
    const ticket = (options?.ticket ?? this.enqueue(options?.model)) as RequestTicket;
    if (options?.attributes) ticket.setAttributes(options.attributes);
    if (this.running < this.concurrency && this.fifo.length === 0) {
      this.running++;
    } else {
      if (this.fifo.length >= this.maxWaiting) {
        // With the default capacity (concurrency + maxWaiting) a full FIFO is occupancy
        // over CRITICAL: announced before the caller answers the refusal.
        this.announceShedding();
        if (own) ticket.end('rejected');
        throw new QueueFullError(this.name, this.retryAfterSeconds());
      }
      // Resolves once next() has handed this request a slot (running already counted).
      await this.wait(ticket, options?.signal);
    }
    try {
      ticket.start();
      const result = await fn();
      if (own) ticket.end('completed');
      return result;
    } catch (error) {
      if (own) ticket.end('error');
      throw error;
    } finally {
      ticket.released();
      this.running--;
      this.next();
    }
  }

  private wait(ticket: RequestTicket, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { ticket, resolve, reject };
      this.fifo.push(waiter);
      if (signal) {
        if (signal.aborted) return this.abortWaiter(waiter, signal);
        signal.addEventListener('abort', () => this.abortWaiter(waiter, signal), { once: true });
      }
    });
  }

  private abortWaiter(waiter: Waiter, signal: AbortSignal): void {
    const index = this.fifo.indexOf(waiter);
    if (index === -1) return;
    this.fifo.splice(index, 1);
    waiter.ticket.end('cancelled');
    waiter.reject(signal.reason ?? new RequestEndedError(this.name));
  }

  /** Hands free slots to waiters in FIFO order; waiters whose request already ended are skipped. */
  private next(): void {
    while (this.running < this.concurrency && this.fifo.length > 0) {
      const waiter = this.fifo.shift()!;
      if (waiter.ticket.ended) {
        waiter.reject(new RequestEndedError(this.name));
        continue;
      }
      this.running++;
      waiter.resolve();
    }
  }

  /** Detector tick: wait quantile, occupancy, glitch and anomaly levels → alert events. */
  evaluate(now: number): void {
    const t = this.ctx.thresholds;
    this.waitQuantile = this.waits.quantile(t.queue.waitQuantile, now - t.queue.waitWindowSeconds * 1000);
    let waitValue = Number.isNaN(this.waitQuantile) ? 0 : this.waitQuantile;
    // The waits of the requests that started since the last tick (strictly after it: samples at its
    // instant were judged by it). NaN when none started.
    const recent = this.waits.quantile(t.queue.waitQuantile, this.lastEvaluated + 1e-6);
    // Drained: judge only those, so the level recovers at once when they are short.
    if (this.waiting === 0) waitValue = Number.isNaN(recent) ? 0 : Math.min(waitValue, recent);
    this.lastEvaluated = now;
    // Raising also needs them above the bound: a queue still draining a burst it absorbed seconds
    // ago keeps the window's quantile high, but its newest requests no longer wait long.
    const waitLevel = this.waitDetector.update(waitValue, now, recent);
    const ctx = this.ctx;
    const p = Math.round(t.queue.waitQuantile * 100);
    ctx.report({
      signal: 'queue_wait',
      level: waitLevel,
      value: waitValue,
      threshold: waitLevel === 'critical' ? t.queue.waitCriticalSeconds : t.queue.waitWarnSeconds,
      labels: this.labels,
      message:
        waitLevel === 'ok'
          ? undefined
          : this.waitDetector.keeping
            ? `queue wait P${p} ${ms(waitValue)}, back under ${ms(t.queue.waitWarnSeconds)} (${this.waiting} waiting); the warning stays until it has been for ${t.queue.keepFiringSeconds} s (queue.keepFiringSeconds)`
            : `queue wait P${p} ${ms(waitValue)} > ${ms(waitLevel === 'critical' ? t.queue.waitCriticalSeconds : t.queue.waitWarnSeconds)} (${this.waiting} waiting)${waitLevel === 'critical' ? '; admission sheds at this level while requests wait' : ''}`,
    });
    this.judgeOccupancy(now);
    this.judgeAge(now);
    this.judgePending(now);
    this.judgeTokens(now);

    const c = this.capacity_.update(now);
    const ct = t.capacity;
    ctx.report({
      signal: 'capacity',
      level: c.level,
      value: c.utilization,
      threshold: c.level === 'critical' ? ct.utilizationCritical : ct.utilizationWarn,
      labels: this.labels,
      message: c.level === 'ok' ? undefined : capacityMessage(c, this.env.loopUtilization()),
      details:
        c.level === 'ok'
          ? undefined
          : {
              loopUtilization: finiteOrNull(this.env.loopUtilization()),
              arrivalRate: c.arrivalRate,
              serviceTime: c.serviceTime,
              concurrency: c.concurrency,
              headroom: c.headroom,
              predictedWait: c.predictedWait,
              timeToSaturation: c.timeToSaturation,
            },
    });

    const glitch = this.glitch.evaluate(now);
    const glitchLevel: Level = glitch.deltaL > t.glitch.deltaSeconds ? 'warn' : 'ok';
    if (glitchLevel === 'warn' && ctx.announced('latency_glitch', this.labels) === 'ok') {
      const attribution = this.env.attributeGlitch(now, t.glitch.windowSeconds * 1000);
      ctx.report({
        signal: 'latency_glitch',
        level: glitchLevel,
        value: glitch.deltaL,
        threshold: t.glitch.deltaSeconds,
        labels: this.labels,
        message: `P99 glitch: max ${(glitch.max * 1000).toFixed(0)} ms is ${(glitch.deltaL * 1000).toFixed(0)} ms above P99 ${(glitch.p99 * 1000).toFixed(0)} ms; likely cause: ${attribution.cause}`,
        details: {
          p99: glitch.p99,
          max: glitch.max,
          samples: glitch.count,
          cause: attribution.cause,
          rule: attribution.rule,
          factors: attribution.factors,
        },
      });
    } else if (glitchLevel === 'ok') {
      ctx.report({
        signal: 'latency_glitch',
        level: 'ok',
        value: Number.isNaN(glitch.deltaL) ? 0 : glitch.deltaL,
        threshold: t.glitch.deltaSeconds,
        labels: this.labels,
      });
    }

    if (!Number.isNaN(this.waitQuantile)) {
      const baseline = this.anomaly.baseline;
      // The value queue_wait judges: once the queue has drained, the window's quantile still holds a
      // stall that is over (one paused second keeps a 10 s P95 high for 10 s), and would outlast the hold.
      const level = this.anomaly.update(waitValue, now);
      const z = this.anomaly.z;
      ctx.report({
        signal: 'latency_anomaly',
        level,
        value: z,
        threshold: t.anomaly.zScore,
        labels: this.labels,
        message:
          level === 'ok'
            ? undefined
            : `queue wait P${p} ${ms(waitValue)} is ${z.toFixed(1)} σ off its recent mean ${ms(baseline)} (floor ${ms(t.anomaly.floorRatio * t.queue.waitWarnSeconds)}, WARN at ${ms(t.queue.waitWarnSeconds)})`,
        details: level === 'ok' ? undefined : { waitQuantile: waitValue, baseline },
      });
    }
    // A shedding queue that no request reaches any more ends its shedding here, once it may.
    if (this.shedding && this.shedEnds(now)) this.stopShedding(now);
    this.publish(true);
  }

  private tokensSnapshot(tokens: QueueTokens, now: number) {
    tokens.advance(now, this.inFlight);
    const rate = tokens.rate();
    const drain = tokens.drainSeconds(this.waiting);
    return {
      waitingPrompt: tokens.waitingPrompt,
      waitingOutput: tokens.waitingOutput,
      owedOutput: tokens.owed,
      usedShare: tokens.usedShare(),
      outputRate: Number.isNaN(rate) ? null : rate,
      drainSeconds: Number.isNaN(drain) ? null : drain,
    };
  }

  snapshot(): QueueSnapshot {
    const now = this.ctx.clock();
    return {
      level: this.level(),
      waiting: this.waiting,
      inFlight: this.inFlight,
      capacity: this.capacity,
      occupancy: this.occupancy,
      waitQuantileSeconds: Number.isNaN(this.waitQuantile) ? 0 : this.waitQuantile,
      oldestWaitSeconds: this.age.oldest(now) / 1000,
      pendingWaitSeconds: this.age.total(now) / 1000,
      shedding: this.shedding,
      ...(this.tokens === undefined ? {} : { tokens: this.tokensSnapshot(this.tokens, now) }),
      completed: this.completed,
      ...capacitySnapshot(this.capacity_.estimate),
    };
  }
}

/** A token count as given: a non-negative integer, anything else 0. */
function tokenCount(value: number): number {
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

function seconds(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(1)} s` : 'an unknown time';
}

/** The least count n of `capacity` with n / capacity > ratio: where the occupancy detector first raises. */
function firstCountOver(ratio: number, capacity: number): number {
  let n = Math.max(0, Math.floor(ratio * capacity));
  while (n / capacity <= ratio) n++;
  return n;
}

function capacityMessage(c: import('./capacity').CapacityEstimate, loopUtilization: number): string {
  const saturation = Number.isFinite(c.timeToSaturation) ? `, saturation in ${c.timeToSaturation.toFixed(0)} s` : '';
  const loop = Number.isFinite(loopUtilization) ? `; event loop busy ${(loopUtilization * 100).toFixed(0)} %` : '';
  return `utilization ${c.utilization.toFixed(2)} (λ ${c.arrivalRate.toFixed(1)}/s, S ${(c.serviceTime * 1000).toFixed(1)} ms, c ${c.concurrency}), headroom ${c.headroom.toFixed(1)}/s${saturation}${loop}`;
}

function ms(seconds: number): string {
  return `${(seconds * 1000).toFixed(0)} ms`;
}

function finiteOrNull(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}

function capacitySnapshot(c: import('./capacity').CapacityEstimate) {
  return {
    utilization: c.utilization,
    arrivalRate: c.arrivalRate,
    serviceTimeSeconds: finiteOrNull(c.serviceTime),
    headroom: finiteOrNull(c.headroom),
    predictedWaitSeconds: finiteOrNull(c.predictedWait),
    timeToSaturationSeconds: finiteOrNull(c.timeToSaturation),
  };
}
