import type { FastifyError, FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { InferSignalConfigError, instrumentServer, type InstrumentServerOptions, type Monitor, type QueueOptions, type QueueTracker } from '@infersignal/core';
import { readinessHandler } from './readiness';
import { RequestSignal, type InferSignalRequest, type Shared } from './request-signal';

export interface InferSignalFastifyOptions {
  monitor: Monitor;
  /** Queue the requests are tracked in: a name (created with `queueOptions`) or a tracker. Default `'http'`. */
  queue?: string | QueueTracker;
  /** Capacity and concurrency of the queue when `queue` is a name. */
  queueOptions?: QueueOptions;
  /**
   * Model label of a request, read in onRequest (params, headers and query
   * are parsed; the body is not yet). Default: the route pattern.
   */
  model?: (request: FastifyRequest) => string | undefined;
  /** At CRITICAL backpressure answer 503 + Retry-After without running the route. Default false. */
  shed?: boolean;
  /** A finished response with this status or above counts as `error`. Default 500. */
  errorStatus?: number;
  /** Count the response head as the start of inference when the handler never called start(). Default true. */
  autoStart?: boolean;
  /** Also register `GET <path>` (default `/healthz/ready`): 503 while CRITICAL, 200 + snapshot otherwise. */
  readiness?: boolean | { path?: string };
  /**
   * Instrument `fastify.server` (HTTP or HTTPS): open connections against
   * capacity (`server.maxConnections` unless `capacity` is given), rejected
   * connections, keep-alive reuse, TLS handshakes. `true` uses the defaults.
   * Default false.
   */
  connections?: boolean | InstrumentServerOptions;
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Set by the InferSignal plugin on the requests it tracks; null on
     * untracked or shed requests in its scope, undefined outside it.
     */
    inferSignal?: InferSignalRequest | null;
  }
  interface FastifyContextConfig {
    /** `false` keeps a route out of InferSignal's request tracking. */
    inferSignal?: boolean;
  }
}

const OPTION_KEYS = new Set(['monitor', 'queue', 'queueOptions', 'model', 'shed', 'errorStatus', 'autoStart', 'readiness', 'connections']);
const SOURCE = 'fastify';
/** 503 body for a shed request; the same bytes every time. */
const SHED_BODY = JSON.stringify({ error: 'overloaded', message: 'The server is at critical backpressure; retry later.' });

function validate(options: InferSignalFastifyOptions): void {
  if (typeof options !== 'object' || options === null) throw new InferSignalConfigError('options', 'must be an object');
  if (typeof options.monitor?.queue !== 'function') throw new InferSignalConfigError('options.monitor', 'must be a monitor from createMonitor()');
  for (const key of Object.keys(options)) {
    if (!OPTION_KEYS.has(key)) throw new InferSignalConfigError(`options.${key}`, `unknown option (expected one of ${[...OPTION_KEYS].join(', ')})`);
  }
  if (options.model !== undefined && typeof options.model !== 'function') throw new InferSignalConfigError('options.model', 'must be a function of the request');
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
  const readiness = options.readiness;
  if (readiness !== undefined && typeof readiness !== 'boolean') {
    if (typeof readiness !== 'object' || readiness === null) throw new InferSignalConfigError('options.readiness', 'must be a boolean or { path }');
    if (readiness.path !== undefined && (typeof readiness.path !== 'string' || !readiness.path.startsWith('/'))) {
      throw new InferSignalConfigError('options.readiness.path', `must be a path starting with "/", got ${JSON.stringify(readiness.path)}`);
    }
  }
  const connections = options.connections;
  if (connections !== undefined && typeof connections !== 'boolean' && (typeof connections !== 'object' || connections === null)) {
    throw new InferSignalConfigError('options.connections', 'must be a boolean or instrumentServer options ({ capacity, name, saturationWarn, saturationCritical, reuseWindow })');
  }
}

/**
 * The plugin body. Wrapped with fastify-plugin, so its hooks apply to the
 * context it is registered in (and that context's children): register it
 * inside the scope of your inference routes to leave the rest untracked.
 */
const plugin: FastifyPluginCallback<InferSignalFastifyOptions> = (fastify: FastifyInstance, options, done) => {
  try {
    validate(options);
  } catch (error) {
    // Fails registration (ready()/listen() reject), naming the field.
    return done(error as Error);
  }
  const monitor = options.monitor;
  const tracker = typeof options.queue === 'object' ? options.queue : monitor.queue(options.queue ?? 'http', options.queueOptions);
  const shared: Shared = {
    monitor,
    tracker,
    errorStatus: options.errorStatus ?? 500,
    autoStart: options.autoStart ?? true,
    source: SOURCE,
  };
  const modelOf = options.model;
  const shed = options.shed === true;

  // Sibling scopes may each register the plugin (one queue each); the decorator is made once.
  if (!fastify.hasRequestDecorator('inferSignal')) fastify.decorateRequest('inferSignal', null);

  function modelLabel(request: FastifyRequest, route: string): string {
    if (modelOf === undefined) return route;
    try {
      const value = modelOf(request);
      if (value !== undefined) return monitor.label('model', value);
    } catch (error) {
      monitor.internalError(`${SOURCE}.model`, error);
    }
    return route;
  }

  fastify.addHook('onRequest', function inferSignalOnRequest(request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction) {
    try {
      const routeOptions = request.routeOptions;
      const url = routeOptions.url;
      // 404s have no route (and no inference); routes can opt out with config.inferSignal = false.
      // A plugin registered in an enclosing scope too: the outer one (whose hook ran first) tracks the request.
      if (url !== undefined && routeOptions.config?.inferSignal !== false && request.inferSignal == null) {
        const route = monitor.label('route', url);
        const model = modelLabel(request, route);
        if (shed) {
          const admission = tracker.admit();
          if (!admission.admit) {
            tracker.reject(model);
            // Replying from onRequest without calling next() skips the rest of the lifecycle, handler included.
            reply
              .code(503)
              .header('retry-after', String(Math.max(1, Math.ceil(admission.retryAfterSeconds))))
              .header('content-type', 'application/json; charset=utf-8')
              .send(SHED_BODY);
            return;
          }
        }
        request.inferSignal = new RequestSignal(shared, tracker.enqueue(model), route, reply);
      }
    } catch (error) {
      // Instrumentation must never take a request down: count and carry on.
      monitor.internalError(SOURCE, error);
    }
    // Outside the try: the rest of the lifecycle runs inside next(), and its errors are Fastify's.
    next();
  });

  fastify.addHook('onResponse', function inferSignalOnResponse(request: FastifyRequest, _reply: FastifyReply, next: HookHandlerDoneFunction) {
    (request.inferSignal as RequestSignal | null)?.finished();
    next();
  });

  fastify.addHook('onRequestAbort', function inferSignalOnRequestAbort(request: FastifyRequest, next: HookHandlerDoneFunction) {
    (request.inferSignal as RequestSignal | null)?.closed();
    next();
  });

  fastify.addHook('onError', function inferSignalOnError(request: FastifyRequest, _reply: FastifyReply, _error: FastifyError, next: HookHandlerDoneFunction) {
    (request.inferSignal as RequestSignal | null)?.errored();
    next();
  });

  if (options.connections) {
    try {
      // At registration rather than onReady, so a bad option fails registration like the others; the server object is
      // the same, and its maxConnections is read at every connection, so setting it later still counts.
      const instrumentation = instrumentServer(monitor, fastify.server, options.connections === true ? {} : options.connections);
      fastify.addHook('onClose', (_instance, next) => {
        instrumentation.stop();
        next();
      });
    } catch (error) {
      return done(error as Error);
    }
  }

  if (options.readiness) {
    const path = (typeof options.readiness === 'object' ? options.readiness.path : undefined) ?? '/healthz/ready';
    fastify.get(path, { config: { inferSignal: false } }, readinessHandler(monitor));
  }
  done();
};

/**
 * Fastify 4/5 plugin: records each routed request's arrival in a core queue
 * tracker, exposes `request.inferSignal` (start, stream, SSE, run), counts the
 * outcome once, optionally sheds at CRITICAL and serves a readiness route.
 */
export const inferSignal = fp(plugin, { fastify: '4.x || 5.x', name: '@infersignal/fastify' });
