import {
  type Attributes,
  type Context,
  type Link,
  SpanStatusCode,
  type SpanOptions,
  type TextMapGetter,
  TraceFlags,
  type Tracer,
  context as otelContext,
  defaultTextMapGetter,
  isSpanContextValid,
  propagation,
  trace,
} from '@opentelemetry/api';
import { InferSignalConfigError } from '../errors';
import { describeValue } from '../describe';
import { selectRank } from '../detectors/select';
import { ATTR, SPANS } from '../names';
import type { Outcome, RequestTraceOptions, TracesOption } from '../types';

/**
 * Request spans made after the fact. A request keeps only what core already
 * records (arrival, start, end, outcome) and the context active at its
 * arrival; when it ends, the `infersignal.request` span is built from those
 * timestamps if the request is worth a trace — slow, failed, cancelled, shed,
 * or drawn for the baseline share — so a request that ends normally pays
 * for no span (one SDK span costs ~2 µs and its garbage; capturing the
 * context costs one AsyncLocalStorage read).
 */

/** Why a request's span was kept (`infersignal.trace.reason`). */
export type TraceReason = 'slow' | 'failed' | 'cancelled' | 'shed' | 'baseline' | 'all';

export interface TraceSettings {
  readonly keep: 'outliers' | 'all';
  readonly baseline: number;
  readonly slowSeconds: number;
  readonly tailQuantile: number;
  readonly unsampledParent: 'drop' | 'link';
  readonly random: () => number;
}

const TRACE_KEYS = ['keep', 'baseline', 'slowSeconds', 'tailQuantile', 'unsampledParent', 'random'];

/** Validates the monitor's `traces` option; undefined when traces are off. */
export function traceSettings(value: TracesOption | undefined): TraceSettings | undefined {
  if (value === false) return undefined;
  const options: RequestTraceOptions =
    value === undefined || value === true
      ? {}
      : value === 'outliers' || value === 'all'
        ? { keep: value }
        : typeof value === 'object' && value !== null && !Array.isArray(value)
          ? value
          : fail('traces', `must be a boolean, 'outliers', 'all' or an options object, got ${describeValue(value)}`);
  for (const key of Object.keys(options))
    if (!TRACE_KEYS.includes(key)) fail(`traces.${key}`, `unknown option (expected one of ${TRACE_KEYS.join(', ')})`);
  const { keep = 'outliers', baseline = 0.01, slowSeconds = Number.POSITIVE_INFINITY, tailQuantile = 0.99 } = options;
  if (keep !== 'outliers' && keep !== 'all')
    fail('traces.keep', `must be 'outliers' or 'all', got ${describeValue(keep)}`);
  if (typeof baseline !== 'number' || !(baseline >= 0 && baseline <= 1))
    fail('traces.baseline', `must be a share between 0 and 1, got ${describeValue(baseline)}`);
  if (typeof slowSeconds !== 'number' || !(slowSeconds > 0))
    fail('traces.slowSeconds', `must be a number of seconds > 0, got ${describeValue(slowSeconds)}`);
  if (typeof tailQuantile !== 'number' || !(tailQuantile >= 0.5 && tailQuantile < 1))
    fail('traces.tailQuantile', `must be a quantile in [0.5, 1), got ${describeValue(tailQuantile)}`);
  const unsampledParent = options.unsampledParent ?? 'drop';
  if (unsampledParent !== 'drop' && unsampledParent !== 'link')
    fail('traces.unsampledParent', `must be 'drop' or 'link', got ${describeValue(unsampledParent)}`);
  const random = options.random ?? Math.random;
  if (typeof random !== 'function') fail('traces.random', 'must be a function returning a number in [0, 1)');
  return { keep, baseline, slowSeconds, tailQuantile, unsampledParent, random };
}

function fail(field: string, message: string): never {
  throw new InferSignalConfigError(field, message);
}

/** What a ticket leaves for its span. */
export interface TracedRequest {
  readonly arrival: number;
  /** NaN when inference never started. */
  readonly startedAt: number;
  readonly parent: Context | undefined;
  /** `ticket.setAttributes()` / `run({ attributes })`. */
  readonly extra: Attributes | undefined;
  /** `ticket.setTraceCarrier()`: the incoming trace context, read only if a span is made. */
  readonly traceCarrier: unknown;
  readonly traceGetter: TextMapGetter | undefined;
}

/** Completed requests kept to judge "slow": the last RING of them. */
const RING = 1024;
/** Below this many completed requests the tail is not judged (a P99 of 20 samples is their maximum). */
const MIN_SAMPLES = 100;
/** How often the tail is recomputed at most (a selection among ≤ RING numbers). */
const REFRESH_MS = 250;
/**
 * New requests before the tail is recomputed: fewer barely move a quantile
 * of RING, and on a quiet queue (or under a profiler's slowdown) a selection
 * every REFRESH_MS would be one every few requests.
 */
const REFRESH_AFTER = RING / 16;

/**
 * The live tail of one queue's request durations: the configured quantile
 * of its last RING completed requests, recomputed at most every REFRESH_MS
 * and after REFRESH_AFTER new ones.
 */
export class RequestTail {
  private readonly seconds = new Float64Array(RING);
  private count = 0;
  private next = 0;
  private fresh = 0;
  private refreshedAt = Number.NEGATIVE_INFINITY;
  /** Seconds above which a completed request is slow; +∞ until MIN_SAMPLES were seen. */
  threshold = Number.POSITIVE_INFINITY;

  constructor(
    private readonly quantile: number,
    private readonly scratch: Float64Array,
  ) {}

  /** Judges `seconds` against the tail as it was, then adds it. */
  slow(seconds: number, now: number): boolean {
    if (this.fresh >= REFRESH_AFTER && now - this.refreshedAt >= REFRESH_MS) this.refresh(now);
    const slow = seconds > this.threshold;
    this.seconds[this.next] = seconds;
    this.next = this.next + 1 === RING ? 0 : this.next + 1;
    if (this.count < RING) this.count++;
    this.fresh++;
    return slow;
  }

  private refresh(now: number): void {
    this.refreshedAt = now;
    this.fresh = 0;
    const n = this.count;
    if (n < MIN_SAMPLES) return;
    const scratch = this.scratch;
    scratch.set(n === RING ? this.seconds : this.seconds.subarray(0, n));
    this.threshold = selectRank(scratch, 0, n, Math.min(n - 1, Math.floor(this.quantile * n)));
  }
}

/** A monitor's request spans: when one is kept, and how it is built. */
export class RequestTraces {
  private readonly scratch = new Float64Array(RING);
  /** Why each outcome's span is kept; a completed request is judged by its duration. */
  private readonly reasons: Record<Outcome, TraceReason | undefined> = {
    completed: undefined,
    cancelled: 'cancelled',
    error: 'failed',
    rejected: 'shed',
    timeout: 'failed',
    unavailable: 'failed',
    deadline_exceeded: 'failed',
  };

  constructor(
    private readonly tracer: Tracer,
    readonly settings: TraceSettings,
    private readonly internalError: (source: string, error: unknown) => void,
  ) {}

  /** The context a span made later will be the child of. */
  parent(): Context {
    return otelContext.active();
  }

  tail(): RequestTail {
    return new RequestTail(this.settings.tailQuantile, this.scratch);
  }

  /**
   * A ticket ended: keeps its span if the request is an outlier or drawn for
   * the baseline (or always, with `keep: 'all'`). `attributes` are the
   * request's cached queue/model/outcome attributes.
   */
  ended(tail: RequestTail, request: TracedRequest, outcome: Outcome, attributes: Attributes, now: number): void {
    const settings = this.settings;
    // An outcome outside the list (plain JavaScript callers) is recorded as an error, and traced as one.
    let reason = outcome === 'completed' ? undefined : (this.reasons[outcome] ?? 'failed');
    if (reason === undefined) {
      const seconds = (now - request.arrival) / 1000;
      // Every completed request feeds the tail, kept or not.
      if (tail.slow(seconds, now) || seconds > settings.slowSeconds) reason = 'slow';
      // With 'all' every request is kept anyway: no baseline draw, whose 'baseline' reason would say nothing.
      else if (settings.keep === 'all') reason = 'all';
      else if (settings.baseline > 0 && settings.random() < settings.baseline) reason = 'baseline';
      else return;
    }
    this.emit(
      request.parent,
      request.arrival,
      now,
      attributes,
      reason,
      request.startedAt,
      request.extra,
      request.traceCarrier,
      request.traceGetter,
    );
  }

  /** A request refused at arrival (shedding): a span of no duration at `now`. */
  shed(attributes: Attributes, now: number, carrier?: unknown, getter?: TextMapGetter): void {
    this.emit(otelContext.active(), now, now, attributes, 'shed', Number.NaN, undefined, carrier, getter);
  }

  private emit(
    parent: Context | undefined,
    start: number,
    end: number,
    attributes: Attributes,
    reason: TraceReason,
    startedAt: number,
    extra: Attributes | undefined,
    carrier: unknown,
    getter: TextMapGetter | undefined,
  ): void {
    try {
      const options: SpanOptions = { startTime: start, attributes };
      let context = parent ?? otelContext.active();
      // No span active at arrival (no HTTP instrumentation, say): the trace the request came with, if it carried one.
      if (carrier !== undefined && trace.getSpanContext(context) === undefined)
        context = propagation.extract(context, carrier, getter ?? defaultTextMapGetter);
      if (this.settings.unsampledParent === 'link') {
        const parentSpan = trace.getSpanContext(context);
        if (
          parentSpan !== undefined &&
          isSpanContextValid(parentSpan) &&
          (parentSpan.traceFlags & TraceFlags.SAMPLED) === 0
        ) {
          // A root span of its own (the root sampler decides), linked to the request's unsampled trace.
          const link: Link = { context: parentSpan };
          options.links = [link];
          options.root = true;
        }
      }
      const span = this.tracer.startSpan(SPANS.request, options, context);
      if (!Number.isNaN(startedAt)) span.setAttribute(ATTR.queueWait, (startedAt - start) / 1000);
      if (extra !== undefined) span.setAttributes(extra);
      span.setAttribute(ATTR.traceReason, reason);
      // ERROR only for `error` (a cancelled, shed or timed-out request is not a fault of the server's code).
      if (attributes[ATTR.outcome] === 'error') span.setStatus({ code: SpanStatusCode.ERROR });
      span.end(end);
    } catch (error) {
      this.internalError('ticket.span', error);
    }
  }
}
