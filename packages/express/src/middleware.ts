import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { InferSignalConfigError, type Monitor, type QueueOptions, type QueueTracker } from '@infersignal/core';
import { RequestSignal, type Shared } from './request-signal';

export interface InferSignalOptions {
  /** Queue the requests are tracked in: a name (created with `queueOptions`) or a tracker. Default `'http'`. */
  queue?: string | QueueTracker;
  /** Capacity and concurrency of the queue when `queue` is a name. */
  queueOptions?: QueueOptions;
  /**
   * Model label of a request, read at arrival (mount the middleware after
   * your body parser to read `req.body`). Default: the route pattern when
   * the middleware is mounted on a route, else core's `default`.
   */
  model?: (req: Request) => string | undefined;
  /** Route pattern label at arrival. Default `req.route.path` (known only when mounted on a route). */
  route?: (req: Request) => string | undefined;
  /** At CRITICAL backpressure answer 503 + Retry-After without calling the handler. Default false. */
  shed?: boolean;
  /** A finished response with this status or above counts as `error`. Default 500. */
  errorStatus?: number;
  /** Count the response head as the start of inference when the handler never called start(). Default true. */
  autoStart?: boolean;
}

const OPTION_KEYS = new Set(['queue', 'queueOptions', 'model', 'route', 'shed', 'errorStatus', 'autoStart']);
const SOURCE = 'express';

function validate(monitor: Monitor, options: InferSignalOptions): void {
  if (typeof monitor?.queue !== 'function') throw new InferSignalConfigError('monitor', 'must be a monitor from createMonitor()');
  if (typeof options !== 'object' || options === null) throw new InferSignalConfigError('options', 'must be an object');
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) throw new InferSignalConfigError(`options.${key}`, `unknown option (expected one of ${[...OPTION_KEYS].join(', ')})`);
  }
  for (const key of ['model', 'route'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'function') throw new InferSignalConfigError(`options.${key}`, 'must be a function of the request');
  }
  for (const key of ['shed', 'autoStart'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'boolean') throw new InferSignalConfigError(`options.${key}`, 'must be a boolean');
  }
  const status = options.errorStatus;
  if (status !== undefined && (!Number.isInteger(status) || status < 100 || status > 600)) {
    throw new InferSignalConfigError('options.errorStatus', `must be an HTTP status (100–600), got ${JSON.stringify(status)}`);
  }
  if (typeof options.queue === 'object' && options.queue !== null && options.queueOptions !== undefined) {
    throw new InferSignalConfigError('options.queueOptions', 'only applies when options.queue is a name');
  }
}

function routePattern(req: Request): string | undefined {
  const path: unknown = req.route?.path;
  // A string pattern as declared (`/v1/models/:id`); regexes and arrays are patterns too.
  return path === undefined ? undefined : Array.isArray(path) ? path.join(',') : String(path);
}

/** 503 body for a shed request; the same bytes every time. */
const SHED_BODY = JSON.stringify({ error: 'overloaded', message: 'The server is at critical backpressure; retry later.' });

/**
 * Express 4/5 middleware: records each request's arrival in a core queue
 * tracker, exposes `req.inferSignal` (start, stream, SSE, run) and counts the
 * outcome once when the response finishes or the client goes away.
 */
export function inferSignal(monitor: Monitor, options: InferSignalOptions = {}): RequestHandler {
  validate(monitor, options);
  const tracker = typeof options.queue === 'object' ? options.queue : monitor.queue(options.queue ?? 'http', options.queueOptions);
  const shared: Shared = {
    monitor,
    tracker,
    errorStatus: options.errorStatus ?? 500,
    autoStart: options.autoStart ?? true,
    source: SOURCE,
  };
  const modelOf = options.model;
  const routeOf = options.route ?? routePattern;
  const shed = options.shed === true;

  function routeLabel(req: Request): string | undefined {
    try {
      const pattern = routeOf(req);
      return pattern === undefined ? undefined : monitor.label('route', pattern);
    } catch (error) {
      monitor.internalError(`${SOURCE}.route`, error);
      return undefined;
    }
  }

  function modelLabel(req: Request, route: string | undefined): string | undefined {
    if (modelOf === undefined) return route;
    try {
      const value = modelOf(req);
      if (value !== undefined) return monitor.label('model', value);
    } catch (error) {
      monitor.internalError(`${SOURCE}.model`, error);
    }
    return route;
  }

  return function inferSignalMiddleware(req: Request, res: Response, next: NextFunction): void {
    // Mounted twice on one path (app-level and per route): the first one tracks the request.
    if (req.inferSignal !== undefined) return next();
    try {
      const route = routeLabel(req);
      const model = modelLabel(req, route);
      if (shed) {
        const admission = tracker.admit();
        if (!admission.admit) {
          tracker.reject(model);
          res.statusCode = 503;
          res.setHeader('retry-after', String(Math.max(1, Math.ceil(admission.retryAfterSeconds))));
          res.setHeader('content-type', 'application/json; charset=utf-8');
          res.end(SHED_BODY);
          return;
        }
      }
      req.inferSignal = new RequestSignal(shared, tracker.enqueue(model), route, res);
    } catch (error) {
      // Instrumentation must never take a request down: count and carry on.
      monitor.internalError(SOURCE, error);
    }
    next();
  };
}

/**
 * Error middleware to mount after your routes and before your own error
 * handler: marks the request as failed and passes the error on unchanged.
 * It matters when a handler fails after the response head was sent (an SSE
 * stream): Express then destroys the socket, which alone would read as a
 * client disconnect (`cancelled`); with this it is counted `error`.
 */
export function inferSignalErrors(): ErrorRequestHandler {
  return function inferSignalErrorMarker(error: unknown, req: Request, _res: Response, next: NextFunction): void {
    // A client that left while its body was being read surfaces here as the
    // body parser's `request.aborted` error: that is a cancellation, not a failure.
    if (!clientAborted(error, req)) req.inferSignal?.fail();
    next(error);
  };
}

/** The request stream was cut off by the client (body-parser's `request.aborted`, or any reader of an aborted request). */
function clientAborted(error: unknown, req: Request): boolean {
  return (error as { type?: unknown } | null)?.type === 'request.aborted' || req.readableAborted === true;
}
