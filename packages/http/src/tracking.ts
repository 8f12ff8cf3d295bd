import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Monitor, QueueTracker } from '@infersignal/core';
import {
  fieldOrDefault,
  createRequestGate,
  type AdapterOptions,
  type RequestGate,
  rejectValue,
} from '@infersignal/core/signals';
import {
  REQUEST_HEADERS,
  trackHttpRequest,
  trackedRequestWith,
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
export interface HttpTrackingSettings<Req = unknown> {
  /** Name its internal errors are counted under (`express`, `fastify`). */
  readonly source: string;
  /** Options of its own besides HttpTrackingOptions' (checked by the adapter); any other key is refused. */
  readonly keys?: Iterable<string>;
  /**
   * The route pattern of a request, for an adapter that reads it from the
   * request (Express's `route` option) rather than passing it to open(); a
   * throw is counted as internal error `<source>.route` and leaves the
   * request without a route.
   */
  readonly route?: (req: Req) => string | undefined;
  /**
   * Sends the configured shed answer (not the app's handler, which writes
   * on the raw objects) through the framework, so that its own hooks see
   * it (Fastify's reply). Called with the `owner` given to open(); without
   * one, or without this, the answer is written on the raw response.
   */
  readonly replyShed?: (owner: HttpReplyOwner, answer: ShedAnswer, retryAfter: string) => void;
}

/**
 * What one adapter registration (a middleware, a plugin) does per request,
 * over the framework-independent parts; the adapter keeps the framework glue
 * (where arrival is seen, where the request's handle is kept). Made once, by
 * createHttpTracking().
 */
export interface HttpTracking<Req = unknown> {
  readonly monitor: Monitor;
  readonly tracker: QueueTracker;
  /**
   * One request's arrival, in one call: its route label (`route`, the
   * pattern the adapter knows, else the registration's `route` function),
   * its model label (the `model` option; the route with `modelFromRoute`),
   * the shed decision, and its tracking to one outcome on the raw
   * response `res`. Returns the request's handle, or the one already
   * tracked on `res` (an adapter that can see a request twice: mounted
   * twice, nested scopes). Returns undefined when the request was shed:
   * counted `rejected` and answered (the `shedResponse` option; through
   * `replyShed` where an `owner` is given, and a handler's answer after
   * `owner.hijack()`); the route's handler must not run. A model or route
   * function that throws is counted (`<source>.model`, `<source>.route`)
   * and the request goes on without that label. `owner`: see HttpReplyOwner.
   */
  open(req: Req, res: ServerResponse, route?: string, owner?: HttpReplyOwner): TrackedHttpRequest | undefined;
}

class HttpRequestTracking implements HttpTracking<unknown>, HttpRequestSettings {
  readonly errorStatus: number;
  // Plain fields (no getters over the gate): the lifecycle reads them per request.
  readonly tracker: QueueTracker;
  readonly autoStart: boolean;
  readonly source: string;
  private readonly shedAnswer: ShedAnswer;
  private readonly gate: RequestGate;
  private readonly modelFromRoute: boolean;
  private readonly routeOf: ((req: unknown) => string | undefined) | undefined;
  private readonly replyShed: HttpTrackingSettings['replyShed'];

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
      keys: ['errorStatus', 'modelFromRoute', 'shedResponse', ...(settings.keys ?? [])],
    });
    this.modelFromRoute = fieldOrDefault('options.modelFromRoute', options.modelFromRoute, { type: 'boolean' }, false);
    this.routeOf = settings.route;
    this.replyShed = settings.replyShed;
    this.tracker = this.gate.tracker;
    this.autoStart = this.gate.autoStart;
    this.source = this.gate.source;
  }

  open(req: unknown, res: ServerResponse, pattern?: string, owner?: HttpReplyOwner): TrackedHttpRequest | undefined {
    // Read once, here and for the lifecycle: Object.getPrototypeOf on a response is a runtime call.
    const proto: unknown = Object.getPrototypeOf(res);
    const tracked = trackedRequestWith(res, proto);
    if (tracked !== undefined) return tracked;
    const route =
      pattern === undefined
        ? this.gate.label('route', this.routeOf, undefined, req, undefined)
        : this.monitor.label('route', pattern);
    const model = this.gate.model(this.modelFromRoute ? route : undefined, req);
    const seconds = this.gate.shed(model, res, REQUEST_HEADERS);
    if (seconds !== undefined) {
      // The handler gets Node's request: the one Node links to `res` (Fastify's request.raw), not the framework's wrapper.
      const raw = (res.req as IncomingMessage | undefined) ?? (req as IncomingMessage);
      this.answerShed(raw, res, String(Math.max(1, Math.ceil(seconds))), model, owner);
      return undefined;
    }
    return trackHttpRequest(this, this.gate.enqueue(model), route, res, owner, proto);
  }

  /**
   * Answers a shed request: the configured answer (through replyShed where
   * the adapter gave an owner), or the app's handler on the raw objects
   * (a throw, or a handler that left the response unanswered, is counted
   * as `<source>.shedResponse` and gets the default 503).
   */
  private answerShed(
    req: IncomingMessage,
    res: ServerResponse,
    retryAfter: string,
    model: string | undefined,
    owner: HttpReplyOwner | undefined,
  ): void {
    const handler = this.shedAnswer.handler;
    if (handler === undefined) {
      if (owner !== undefined && this.replyShed !== undefined) this.replyShed(owner, this.shedAnswer, retryAfter);
      else writeShedAnswer(this.shedAnswer, res, retryAfter);
      return;
    }
    // The app writes the answer on the raw objects: the framework must send nothing for this request.
    owner?.hijack();
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
  settings: HttpTrackingSettings<Req>,
): HttpTracking<Req> {
  return new HttpRequestTracking(
    monitor,
    options as HttpTrackingOptions<unknown>,
    settings as HttpTrackingSettings,
  ) as HttpTracking<Req>;
}
