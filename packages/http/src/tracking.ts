import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Monitor, QueueTracker } from '@infersignal/core';
import {
  ADAPTER_OPTION_KEYS,
  booleanOption,
  createRequestGate,
  type AdapterOptions,
  type RequestGate,
  rejectValue,
} from '@infersignal/core/signals';
import {
  REQUEST_HEADERS,
  trackHttpRequest,
  type HttpReplyOwner,
  type HttpRequestSettings,
  type TrackedHttpRequest,
} from './request';
import {
  DEFAULT_SHED_ANSWER,
  resolveShedAnswer,
  writeShedAnswer,
  type ShedAnswer,
  type ShedResponseOption,
} from './shed';

/**
 * Options every HTTP adapter takes: the shared adapter dialect (`queue`,
 * `model`, `shed`, `autoStart`) plus `errorStatus`. `Req` is what the
 * adapter's model function is given (Express's or Fastify's request).
 */
export interface HttpTrackingOptions<Req = never> extends AdapterOptions<[Req]> {
  /** A finished response with this status or above counts as `error`. Default 500. */
  errorStatus?: number;
  /**
   * Label requests the `model` option does not name with their route
   * pattern (`/v1/chat`) instead of core's `_unknown`. Default false: a
   * route is not a model, and `gen_ai.request.model` should name the model.
   */
  modelFromRoute?: boolean;
  /**
   * The answer to a shed request: `{ status, headers, body }` (each part
   * optional, over the default 503 JSON answer; Retry-After is always
   * set unless `headers` sets it), or a function that writes the whole
   * answer on the raw request and response.
   */
  shedResponse?: ShedResponseOption;
}

/** What an adapter says about its registration. */
export interface HttpTrackingSettings {
  /** Name its internal errors are counted under (`express`, `fastify`). */
  readonly source: string;
  /** Options of its own besides HttpTrackingOptions' (checked by the adapter); any other key is refused. */
  readonly keys?: Iterable<string>;
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
   * The model label of `req` (the `model` option's name or function); else
   * `route` with `modelFromRoute`, else undefined (core's `_unknown`). A
   * function that throws is counted as internal error `<source>.model`.
   */
  model<Req>(req: Req, route: string | undefined): string | undefined;
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
   * least 1). Otherwise undefined: take the request. `res`: the request's
   * response, where its span (if it gets one) finds the trace it came with.
   */
  shed(model: string | undefined, res?: ServerResponse): string | undefined;
  /** The `shedResponse` option, resolved once (its `handler` set when the app answers itself). */
  readonly shedAnswer: ShedAnswer;
  /**
   * Answers a request shed() refused, on the raw Node objects: the
   * configured answer, or the app's handler (a throw, or a handler that
   * left the response unanswered, is counted as `<source>.shedResponse`
   * and gets the default 503).
   */
  answerShed(req: IncomingMessage, res: ServerResponse, retryAfter: string, model: string | undefined): void;
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
  readonly shedAnswer: ShedAnswer;
  private readonly gate: RequestGate;
  private readonly modelFromRoute: boolean;

  constructor(
    readonly monitor: Monitor,
    options: HttpTrackingOptions<unknown>,
    settings: HttpTrackingSettings,
  ) {
    // Checked before the gate, which makes the queue.
    const status = (options as HttpTrackingOptions<unknown> | null)?.errorStatus;
    if (status !== undefined && (!Number.isInteger(status) || status < 100 || status > 600)) {
      rejectValue('options.errorStatus', status, 'an HTTP status (100–600)');
    }
    this.errorStatus = status ?? 500;
    this.shedAnswer = resolveShedAnswer((options as HttpTrackingOptions<unknown> | null)?.shedResponse);
    this.gate = createRequestGate(monitor, options, {
      source: settings.source,
      queue: 'http',
      keys: [...ADAPTER_OPTION_KEYS, 'errorStatus', 'modelFromRoute', 'shedResponse', ...(settings.keys ?? [])],
    });
    this.modelFromRoute = booleanOption('options.modelFromRoute', options.modelFromRoute, false);
    this.tracker = this.gate.tracker;
    this.autoStart = this.gate.autoStart;
    this.source = this.gate.source;
  }

  model<Req>(req: Req, route: string | undefined): string | undefined {
    return this.gate.model(this.modelFromRoute ? route : undefined, req);
  }

  label<Req>(
    kind: 'model' | 'route',
    fn: ((req: Req) => string | undefined) | undefined,
    req: Req,
    fallback: string | undefined,
  ): string | undefined {
    return this.gate.label(kind, fn, fallback, req, undefined);
  }

  shed(model: string | undefined, res?: ServerResponse): string | undefined {
    const seconds = this.gate.shed(model, res, REQUEST_HEADERS);
    return seconds === undefined ? undefined : String(Math.max(1, Math.ceil(seconds)));
  }

  answerShed(req: IncomingMessage, res: ServerResponse, retryAfter: string, model: string | undefined): void {
    const handler = this.shedAnswer.handler;
    if (handler === undefined) {
      writeShedAnswer(this.shedAnswer, res, retryAfter);
      return;
    }
    const fallBack = (error: unknown): void => {
      this.monitor.internalError(`${this.source}.shedResponse`, error);
      if (!res.headersSent && !res.writableEnded) writeShedAnswer(DEFAULT_SHED_ANSWER, res, retryAfter);
    };
    const check = (): void => {
      if (!res.headersSent && !res.writableEnded) fallBack(new Error('the shedResponse handler did not answer'));
    };
    try {
      const result = handler(req, res, { retryAfter, model });
      if (typeof (result as Promise<void> | undefined)?.then === 'function')
        (result as Promise<void>).then(check, fallBack);
      else check();
    } catch (error) {
      fallBack(error);
    }
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
