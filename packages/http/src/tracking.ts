import type { ServerResponse } from 'node:http';
import { InferSignalConfigError, type Monitor, type QueueTracker } from '@infersignal/core';
import {
  ADAPTER_OPTION_KEYS,
  createRequestGate,
  type AdapterOptions,
  type RequestGate,
} from '@infersignal/core/signals';
import { trackHttpRequest, type HttpReplyOwner, type HttpRequestSettings, type TrackedHttpRequest } from './request';

/**
 * Options every HTTP adapter takes: the shared adapter dialect (`queue`,
 * `model`, `shed`, `autoStart`) plus `errorStatus`. `Req` is what the
 * adapter's model function is given (Express's or Fastify's request).
 */
export interface HttpTrackingOptions<Req = never> extends AdapterOptions<[Req]> {
  /** A finished response with this status or above counts as `error`. Default 500. */
  errorStatus?: number;
}

/** What an adapter says about its registration. */
export interface HttpTrackingSettings {
  /** Name its internal errors are counted under (`express`, `fastify`). */
  readonly source: string;
  /** Options of its own besides HttpTrackingOptions' (checked by the adapter); any other key is refused. */
  readonly keys?: Iterable<string>;
}

/** Body of a shed request's 503; the same bytes every time. */
export const HTTP_SHED_BODY = JSON.stringify({
  error: 'overloaded',
  message: 'The server is at critical backpressure; retry later.',
});

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
   * The model label of `req` (the `model` option's name or function), or
   * `fallback`. A function that throws is counted as internal error
   * `<source>.model` and gives `fallback`.
   */
  model<Req>(req: Req, fallback: string | undefined): string | undefined;
  /** The label of `fn(req)` through `monitor.label(kind)`, with the same fallback and error rule. */
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
  readonly errorStatus: number;
  // Plain fields (no getters over the gate): the lifecycle reads them per request.
  readonly tracker: QueueTracker;
  readonly autoStart: boolean;
  readonly source: string;
  private readonly gate: RequestGate;

  constructor(
    readonly monitor: Monitor,
    options: HttpTrackingOptions<unknown>,
    settings: HttpTrackingSettings,
  ) {
    // Checked before the gate, which makes the queue.
    const status = (options as HttpTrackingOptions<unknown> | null)?.errorStatus;
    if (status !== undefined && (!Number.isInteger(status) || status < 100 || status > 600)) {
      throw new InferSignalConfigError(
        'options.errorStatus',
        `must be an HTTP status (100–600), got ${JSON.stringify(status)}`,
      );
    }
    this.errorStatus = status ?? 500;
    this.gate = createRequestGate(monitor, options, {
      source: settings.source,
      queue: 'http',
      keys: [...ADAPTER_OPTION_KEYS, 'errorStatus', ...(settings.keys ?? [])],
    });
    this.tracker = this.gate.tracker;
    this.autoStart = this.gate.autoStart;
    this.source = this.gate.source;
  }

  model<Req>(req: Req, fallback: string | undefined): string | undefined {
    return this.gate.model(fallback, req);
  }

  label<Req>(
    kind: 'model' | 'route',
    fn: ((req: Req) => string | undefined) | undefined,
    req: Req,
    fallback: string | undefined,
  ): string | undefined {
    return this.gate.label(kind, fn, fallback, req, undefined);
  }

  shed(model: string | undefined): string | undefined {
    const seconds = this.gate.shed(model);
    return seconds === undefined ? undefined : String(Math.max(1, Math.ceil(seconds)));
  }

  track(
    model: string | undefined,
    route: string | undefined,
    res: ServerResponse,
    owner?: HttpReplyOwner,
  ): TrackedHttpRequest {
    return trackHttpRequest(this, this.gate.enqueue(model), route, res, owner);
  }
}

/**
 * Validates an adapter registration's options (the shared dialect and
 * `errorStatus`, plus `settings.keys` as the adapter's own; unknown keys and
 * bad values throw an InferSignalConfigError naming `options.<field>`) and
 * builds its tracking: the queue (named queues are made here), the
 * defaults, and `source`, the name its internal errors are counted under.
 */
export function createHttpTracking<Req>(
  monitor: Monitor,
  options: HttpTrackingOptions<Req>,
  settings: HttpTrackingSettings,
): HttpTracking {
  return new HttpRequestTracking(monitor, options as HttpTrackingOptions<unknown>, settings);
}
