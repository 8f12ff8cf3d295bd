import type { Attributes } from '@opentelemetry/api';
import { InferSignalConfigError } from '../errors';
import type { Gauge, GaugeObserver, Signal, SignalContext } from '../contract';
import { worstLevel } from '../detectors/threshold';
import { ATTR, METRICS } from '../names';
import { nameOption, queueSettings } from '../options';
import type { Level, QueueOptions, QueueSnapshot } from '../types';
import { Queue, type QueueEnvironment } from './queue';
import { LEVEL_VALUE } from '../live-board';

/** A queue and the attribute object its gauges are observed with. */
interface Entry {
  readonly queue: Queue;
  readonly attributes: Attributes;
  /** The token backlog's `gen_ai.token.type` series. */
  readonly input: Attributes;
  readonly output: Attributes;
}

/**
 * The queues of a monitor (`monitor.queue()`): queue wait, occupancy, the
 * oldest waiting request's age and the waits still accruing, backpressure
 * and shedding, capacity (λ, S, ρ, Erlang C), P99 glitch and wait anomaly
 * per queue. Thresholds: `queue`, `capacity`, `glitch`, `anomaly`.
 * Snapshot section `queues`.
 */
export class QueueSignal implements Signal {
  readonly name = 'queues';
  private readonly entries = new Map<string, Entry>();
  private readonly env: QueueEnvironment;
  private readonly gauges: Record<
    | 'waiting'
    | 'inFlight'
    | 'capacity'
    | 'occupancy'
    | 'waitOldest'
    | 'waitPending'
    | 'tokensPending'
    | 'tokensDrainTime'
    | 'backpressure'
    | 'arrivalRate'
    | 'completionRate'
    | 'serviceTime'
    | 'serviceTimeP90'
    | 'utilization'
    | 'headroom'
    | 'waitPredicted'
    | 'timeToSaturation',
    Gauge
  >;

  constructor(
    private readonly ctx: SignalContext,
    private readonly maxQueues: number,
    links: Pick<
      QueueEnvironment,
      'streamOf' | 'externalLevel' | 'attributeGlitch' | 'loopUtilization' | 'requestTraces' | 'arrived' | 'board'
    >,
  ) {
    this.env = {
      ctx,
      instruments: {
        queueWait: ctx.histogram(METRICS.queueWait),
        inferenceDuration: ctx.histogram(METRICS.inferenceDuration),
        requestDuration: ctx.histogram(METRICS.requestDuration),
        requests: ctx.counter(METRICS.requests),
      },
      ...links,
    };
    this.gauges = {
      waiting: ctx.gauge(METRICS.queueWaiting),
      inFlight: ctx.gauge(METRICS.queueInFlight),
      capacity: ctx.gauge(METRICS.queueCapacity),
      occupancy: ctx.gauge(METRICS.queueOccupancy),
      waitOldest: ctx.gauge(METRICS.queueWaitOldest),
      waitPending: ctx.gauge(METRICS.queueWaitPending),
      tokensPending: ctx.gauge(METRICS.queueTokensPending),
      tokensDrainTime: ctx.gauge(METRICS.queueTokensDrainTime),
      backpressure: ctx.gauge(METRICS.backpressureLevel),
      arrivalRate: ctx.gauge(METRICS.queueArrivalRate),
      completionRate: ctx.gauge(METRICS.queueCompletionRate),
      serviceTime: ctx.gauge(METRICS.queueServiceTime),
      serviceTimeP90: ctx.gauge(METRICS.queueServiceTimeP90),
      utilization: ctx.gauge(METRICS.queueUtilization),
      headroom: ctx.gauge(METRICS.queueHeadroom),
      waitPredicted: ctx.gauge(METRICS.queueWaitPredicted),
      timeToSaturation: ctx.gauge(METRICS.queueTimeToSaturation),
    };
  }

  /** The queue of that name, made on first use with `options` (validated; later calls return it as it is). */
  get(name: string, options: QueueOptions = {}): Queue {
    nameOption('queue.name', name);
    const existing = this.entries.get(name);
    if (existing) return existing.queue;
    if (this.entries.size >= this.maxQueues)
      throw new InferSignalConfigError(
        'maxQueues',
        `more than ${this.maxQueues} queues; raise maxQueues or reuse queues`,
      );
    const queue = new Queue(name, queueSettings(options, 'options', name), this.env);
    this.entries.set(name, {
      queue,
      attributes: { [ATTR.queue]: name },
      input: { [ATTR.queue]: name, [ATTR.tokenType]: 'input' },
      output: { [ATTR.queue]: name, [ATTR.tokenType]: 'output' },
    });
    return queue;
  }

  /** Whether any queue has a request waiting or in flight. */
  get busy(): boolean {
    for (const { queue } of this.entries.values()) if (queue.waiting + queue.inFlight > 0) return true;
    return false;
  }

  /** Highest occupancy of any queue (0 without queues), a glitch-attribution factor. */
  get occupancy(): number {
    let occupancy = 0;
    for (const { queue } of this.entries.values()) occupancy = Math.max(occupancy, queue.occupancy);
    return occupancy;
  }

  evaluate(now: number): void {
    // One queue's failure must not stop the others' detectors.
    for (const { queue } of this.entries.values()) {
      try {
        queue.evaluate(now);
      } catch (error) {
        this.ctx.internalError('detector.queue', error);
      }
    }
  }

  level(): Level {
    let level: Level = 'ok';
    for (const { queue } of this.entries.values()) level = worstLevel(level, queue.level());
    return level;
  }

  observe(observer: GaugeObserver): void {
    const g = this.gauges;
    // Read from the waiting requests' arrival stamps now, so a scrape sees a stuck queue's age as it is.
    const now = this.ctx.clock();
    for (const { queue, attributes, input, output } of this.entries.values()) {
      observer.observe(g.waiting, queue.waiting, attributes);
      observer.observe(g.inFlight, queue.inFlight, attributes);
      observer.observe(g.capacity, queue.capacity, attributes);
      observer.observe(g.occupancy, queue.occupancy, attributes);
      observer.observe(g.waitOldest, queue.age.oldest(now) / 1000, attributes);
      observer.observe(g.waitPending, queue.age.total(now) / 1000, attributes);
      const tokens = queue.tokens;
      if (tokens !== undefined) {
        tokens.advance(now, queue.inFlight);
        observer.observe(g.tokensPending, tokens.waitingPrompt, input);
        observer.observe(g.tokensPending, tokens.owed, output);
        const drain = tokens.drainSeconds(queue.waiting);
        if (!Number.isNaN(drain)) observer.observe(g.tokensDrainTime, drain, attributes);
      }
      observer.observe(g.backpressure, LEVEL_VALUE[queue.level()], attributes);
      const c = queue.capacity_.estimate;
      observer.observe(g.arrivalRate, c.arrivalRate, attributes);
      observer.observe(g.completionRate, c.completionRate, attributes);
      if (Number.isFinite(c.serviceTime)) {
        observer.observe(g.serviceTime, c.serviceTime, attributes);
        observer.observe(g.serviceTimeP90, c.serviceTimeP90, attributes);
      }
      // S = 0 (a coarse or stalled clock) leaves ρ and headroom undefined: export nothing rather than NaN.
      // With no arrivals ρ = λS/c is 0 whatever S is, so a queue no request reached exports 0, not nothing.
      if (Number.isFinite(c.utilization) && c.serviceTime > 0)
        observer.observe(g.utilization, c.utilization, attributes);
      else if (c.arrivalRate === 0) observer.observe(g.utilization, 0, attributes);
      if (Number.isFinite(c.headroom)) observer.observe(g.headroom, c.headroom, attributes);
      if (Number.isFinite(c.predictedWait)) observer.observe(g.waitPredicted, c.predictedWait, attributes);
      if (Number.isFinite(c.timeToSaturation)) observer.observe(g.timeToSaturation, c.timeToSaturation, attributes);
    }
  }

  snapshot(): Record<string, QueueSnapshot> {
    const queues: Record<string, QueueSnapshot> = {};
    for (const [name, { queue }] of this.entries) queues[name] = queue.snapshot();
    return queues;
  }
}
