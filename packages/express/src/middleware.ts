import { IncomingMessage } from 'node:http';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { InferSignalConfigError, type Monitor } from '@infersignal/core';
import { rejectValue } from '@infersignal/core/signals';
import {
  createHttpTracking,
  trackedRequestOf,
  type HttpRequestSignal,
  type HttpTrackingOptions,
} from '@infersignal/http';

/** What a handler sees as `req.inferSignal` (the shared HTTP request lifecycle of `@infersignal/http`). */
export type InferSignalRequest = HttpRequestSignal;

/**
 * The adapters' shared options (`queue`, `model`, `shed`, `autoStart`,
 * `errorStatus`, `shedResponse`) and Express's `route`. `model` is read at arrival (mount
 * the middleware after your body parser to read `req.body`); its default is
 * the route pattern when the middleware is mounted on a route, else core's
 * `default`.
 */
export interface InferSignalOptions extends HttpTrackingOptions<Request> {
  /** Route pattern label at arrival. Default `req.route.path` (known only when mounted on a route). */
  route?: (req: Request) => string | undefined;
}

const SOURCE = 'express';

function routePattern(req: Request): string | undefined {
  // Express sets `route` on the request itself once a route matches. Mounted on the app, before any route, it is
  // absent, and reading it would walk the re-parented request's prototypes: a lookup V8 cannot cache for objects
  // that each have a hidden class of their own (~0.3 µs a request).
  const path: unknown = Object.hasOwn(req, 'route') ? req.route?.path : undefined;
  // A string pattern as declared (`/v1/models/:id`); regexes and arrays are patterns too.
  return path === undefined ? undefined : Array.isArray(path) ? path.join(',') : String(path);
}

/** Request prototypes seen, and whether `inferSignal` is served by our accessor on each. */
const accessorPrototypes = new WeakMap<object, boolean>();
/** The prototype accessorServes() answered for last, and its answer (held strongly: one app's `app.request`). */
let lastPrototype: object | undefined;
let lastServes = false;

/**
 * Express re-parents every request onto `app.request` with
 * `Object.setPrototypeOf`, and each such request ends up with a hidden
 * class of its own: a property added to it makes V8 build a new one, and
 * every property read on it is a lookup. So `inferSignal` is an accessor on
 * that prototype (Express's documented place to extend requests) that reads
 * the request core tracks on `req.res`: nothing is stored on `req`. True
 * when the accessor serves `req`; a plain or frozen prototype, or one with
 * an `inferSignal` of its own, gets an ordinary own property instead.
 */
function accessorServes(req: Request): boolean {
  const proto: unknown = Object.getPrototypeOf(req);
  // An app's requests all share one prototype: the last answer saves the WeakMap lookup.
  if (proto === lastPrototype) return lastServes;
  if (typeof proto !== 'object' || proto === null) return false;
  let serves = accessorPrototypes.get(proto);
  if (serves === undefined) {
    serves = proto !== IncomingMessage.prototype && !Object.hasOwn(proto, 'inferSignal') && Object.isExtensible(proto);
    try {
      if (serves) {
        Object.defineProperty(proto, 'inferSignal', {
          configurable: true,
          get(this: Request) {
            return this.res === undefined ? undefined : trackedRequestOf(this.res);
          },
          // Whoever assigns it (a test, another middleware) gets an own property, as without the accessor.
          set(this: Request, value: unknown) {
            Object.defineProperty(this, 'inferSignal', { value, writable: true, enumerable: true, configurable: true });
          },
        });
      }
    } catch {
      // An exotic prototype (a Proxy that refuses the definition): own properties it is.
      serves = false;
    }
    accessorPrototypes.set(proto, serves);
  }
  lastPrototype = proto;
  lastServes = serves;
  return serves;
}

/**
 * Express 4/5 middleware: records each request's arrival in a core queue
 * tracker, exposes `req.inferSignal` (start, stream, SSE, run) and counts the
 * outcome once when the response finishes or the client goes away. The
 * lifecycle is `@infersignal/http`'s; this is where Express shows it the request.
 */
export function inferSignal(monitor: Monitor, options: InferSignalOptions = {}): RequestHandler {
  if (typeof monitor?.queue !== 'function')
    throw new InferSignalConfigError('monitor', 'must be a monitor from createMonitor()');
  if (options?.route !== undefined && typeof options.route !== 'function')
    rejectValue('options.route', options.route, 'a function of the request');
  const tracking = createHttpTracking(monitor, options, {
    source: SOURCE,
    keys: ['route'],
    route: options.route ?? routePattern,
  });

  return function inferSignalMiddleware(req: Request, res: Response, next: NextFunction): void {
    // Mounted twice on one path (app-level and per route): the first one tracks the request. Where the accessor
    // serves req, open() finds that request on `res` and returns it; otherwise the own property says.
    const viaAccessor = accessorServes(req);
    if (!viaAccessor && req.inferSignal !== undefined) {
      next();
      return;
    }
    try {
      // Labels, shed decision and arrival in one call; undefined: shed, and answered.
      const signal = tracking.open(req, res);
      if (signal === undefined) return;
      // The accessor answers from `res`, where open() tracked the request.
      if (!viaAccessor) req.inferSignal = signal;
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

declare global {
  // Express's own augmentation point (@types/express-serve-static-core, v4 and v5).
  namespace Express {
    interface Request {
      /** Set by the InferSignal middleware on the requests it tracks (undefined elsewhere, when shed, and once a finished response is counted). */
      inferSignal?: InferSignalRequest;
    }
  }
}
