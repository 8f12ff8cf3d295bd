import type { ServerResponse } from 'node:http';
import { InferSignalConfigError } from '@infersignal/core';
import type { Monitor, QueueOptions, QueueTracker } from '@infersignal/core';
import { trackHttpRequest, type HttpReplyOwner, type HttpRequestSettings, type TrackedHttpRequest } from './request';

/** Options every HTTP adapter takes (each adapter adds its own). */
export interface HttpTrackingOptions {
  /** Queue the requests are tracked in: a name (created with `queueOptions`) or a tracker. Default `'http'`. */
  queue?: string | QueueTracker;
  /** Capacity and concurrency of the queue when `queue` is a name. */
  queueOptions?: QueueOptions;
  /** At CRITICAL backpressure answer 503 + Retry-After without running the handler. Default false. */
  shed?: boolean;
  /** A finished response with this status or above counts as `error`. Default 500. */
  errorStatus?: number;
  /** Count the response head as the start of inference when the handler never called start(). Default true. */
  autoStart?: boolean;
}

/** Body of a shed request's 503; the same bytes every time. */
export const HTTP_SHED_BODY = JSON.stringify({
  error: 'overloaded',
  message: 'The server is at critical backpressure; retry later.',
});

/**
 * Checks the options every HTTP adapter shares, plus the `model` and `route`
 * label functions where present; `keys` are all the options the adapter
 * knows (others are refused, listed in the message). Throws
 * InferSignalConfigError naming the field, at registration.
 */
export function validateHttpTrackingOptions(
  options: HttpTrackingOptions & { model?: unknown; route?: unknown },
  keys: ReadonlySet<string>,
): void {
  for (const key of Object.keys(options)) {
    if (!keys.has(key))
      throw new InferSignalConfigError(`options.${key}`, `unknown option (expected one of ${[...keys].join(', ')})`);
  }
  for (const key of ['model', 'route'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'function')
      throw new InferSignalConfigError(`options.${key}`, 'must be a function of the request');
  }
  for (const key of ['shed', 'autoStart'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'boolean')
      throw new InferSignalConfigError(`options.${key}`, 'must be a boolean');
  }
  const status = options.errorStatus;
  if (status !== undefined && (!Number.isInteger(status) || status < 100 || status > 600)) {
    throw new InferSignalConfigError(
      'options.errorStatus',
      `must be an HTTP status (100–600), got ${JSON.stringify(status)}`,
    );
  }
  if (typeof options.queue === 'object' && options.queue !== null && options.queueOptions !== undefined) {
    throw new InferSignalConfigError('options.queueOptions', 'only applies when options.queue is a name');
  }
}

/**
 * What one adapter registration (a middleware, a plugin) does per request,
 * over the framework-independent parts; the adapter keeps the framework glue
 * (where arrival is seen, how a 503 is written, which events call finished()
 * and closed()). Made once, by createHttpTracking().
 */
export interface HttpTracking {
  readonly monitor: Monitor;
  readonly tracker: QueueTracker;
  /**
   * The label of `fn(req)` through `monitor.label(kind)`, or `fallback` when
   * there is no function or it returns undefined. A function that throws is
   * counted as internal error `<source>.<kind>` and gives `fallback`.
   */
  label<Req>(
    kind: 'model' | 'route',
    fn: ((req: Req) => string | undefined) | undefined,
    req: Req,
    fallback: string | undefined,
  ): string | undefined;
  /**
   * With shedding on and the queue saying shed: records the request as
   * `rejected` and returns the Retry-After header value (whole seconds, at
   * least 1). Otherwise undefined: take the request.
   */
  shed(model: string | undefined): string | undefined;
  /**
   * Arrival: enqueues a ticket and tracks the request to its one outcome on
   * the raw response. One request per response: an adapter that can see a
   * request twice (mounted twice, nested scopes) checks trackedRequestOf(res)
   * or its own request slot first.
   */
  track(
    model: string | undefined,
    route: string | undefined,
    res: ServerResponse,
    owner?: HttpReplyOwner,
  ): TrackedHttpRequest;
}

class HttpRequestTracking implements HttpTracking, HttpRequestSettings {
  readonly tracker: QueueTracker;
  readonly errorStatus: number;
  readonly autoStart: boolean;
  private readonly shedding: boolean;

  constructor(
    readonly monitor: Monitor,
    options: HttpTrackingOptions,
    readonly source: string,
  ) {
    this.tracker =
      typeof options.queue === 'object' ? options.queue : monitor.queue(options.queue ?? 'http', options.queueOptions);
    this.errorStatus = options.errorStatus ?? 500;
    this.autoStart = options.autoStart ?? true;
    this.shedding = options.shed === true;
  }

  label<Req>(
    kind: 'model' | 'route',
    fn: ((req: Req) => string | undefined) | undefined,
    req: Req,
    fallback: string | undefined,
  ): string | undefined {
    if (fn === undefined) return fallback;
    try {
      const value = fn(req);
      if (value !== undefined) return this.monitor.label(kind, value);
    } catch (error) {
      this.monitor.internalError(`${this.source}.${kind}`, error);
    }
    return fallback;
  }

  shed(model: string | undefined): string | undefined {
    if (!this.shedding) return undefined;
    const admission = this.tracker.admit();
    if (admission.admit) return undefined;
    this.tracker.reject(model);
    return String(Math.max(1, Math.ceil(admission.retryAfterSeconds)));
  }

  track(
    model: string | undefined,
    route: string | undefined,
    res: ServerResponse,
    owner?: HttpReplyOwner,
  ): TrackedHttpRequest {
    return trackHttpRequest(this, this.tracker.enqueue(model), route, res, owner);
  }
}

/**
 * Builds an adapter registration's tracking from options already checked by
 * validateHttpTrackingOptions(): the queue (named queues are made here),
 * defaults, and `source`, the name its internal errors are counted under.
 */
export function createHttpTracking(monitor: Monitor, options: HttpTrackingOptions, source: string): HttpTracking {
  return new HttpRequestTracking(monitor, options, source);
}
