import type {
  FastifyError,
  FastifyInstance,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify';
import fp from 'fastify-plugin';
import { InferSignalConfigError, type Monitor } from '@infersignal/core';
import { rejectValue } from '@infersignal/core/signals';
import {
  createHttpTracking,
  instrumentServer,
  type HttpRequestSignal,
  type HttpTrackingOptions,
  type InstrumentServerOptions,
  type SseOptions,
  type SseStream,
  type TrackedHttpRequest,
} from '@infersignal/http';
import { readinessHandler } from './readiness';

/** What a handler sees as `request.inferSignal` (the shared HTTP request lifecycle of `@infersignal/http`). */
export interface InferSignalRequest extends HttpRequestSignal {
  /** Route pattern label (`request.routeOptions.url`); never the raw URL. */
  readonly route: string;
  /**
   * Hijacks the reply and turns it into a `text/event-stream` over
   * `reply.raw` whose events count as tokens. Fastify no longer sends
   * anything for this request: end the stream with `sse.end()`.
   */
  sse(options?: SseOptions): SseStream;
}

/**
 * The adapters' shared options (`queue`, `model`, `shed`, `autoStart`,
 * `errorStatus`, `shedResponse`), the monitor, and the plugin's routes and server
 * instrumentation. `model` is read in onRequest (params, headers and query
 * are parsed; the body is not yet); its default is the route pattern.
 */
export interface InferSignalFastifyOptions extends HttpTrackingOptions<FastifyRequest> {
  monitor: Monitor;
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

/** The plugin's own options, besides the shared ones. */
const PLUGIN_KEYS = ['monitor', 'readiness', 'connections'];
const SOURCE = 'fastify';

/** What the plugin stores on a request: the shared lifecycle, whose route is always known here. */
type FastifyTracked = TrackedHttpRequest & InferSignalRequest;

/** A route's config as Fastify keeps it: the route's own `config`, plus its `url` pattern and `method`. */
interface RouteConfig {
  url?: string;
  inferSignal?: boolean;
}
type RouteContexts = Record<symbol, { config?: RouteConfig } | undefined>;

/**
 * Reads each request's route config (what `request.routeOptions.config`
 * returns; `routeOptions.url` is its `url`) without the public getter,
 * which builds a 13-field object and asks the router about version
 * constraints at every call: about 1 200 instructions a request on a
 * hello-world route, a fifth of the plugin's whole cost.
 * Fastify 4 and 5 keep the route's context on
 * every request under `Symbol('fastify.context')`, and its `config` is that
 * same object: the symbol is looked for on the first request and used only
 * if it holds exactly what the getter returned there; otherwise, and on any
 * request that lacks it, the getter is used. One reader per registration:
 * two copies of Fastify in a process have two symbols.
 */
function routeConfigReader(): (request: FastifyRequest) => RouteConfig | undefined {
  // undefined: not looked for yet; null: not usable, the getter it is.
  let contextKey: symbol | null | undefined;
  const viaGetter = (request: FastifyRequest): RouteConfig => {
    const options = request.routeOptions;
    return { url: options.url, inferSignal: (options.config as RouteConfig | undefined)?.inferSignal };
  };
  return (request) => {
    if (contextKey) return (request as unknown as RouteContexts)[contextKey]?.config ?? viaGetter(request);
    if (contextKey === undefined) contextKey = findContextKey(request);
    return viaGetter(request);
  };
}

/** The symbol, null where none holds the route's config, undefined where this request cannot tell (no config). */
function findContextKey(request: FastifyRequest): symbol | null | undefined {
  const expected = request.routeOptions.config;
  if (typeof expected !== 'object' || expected === null) return undefined;
  for (const key of Object.getOwnPropertySymbols(request)) {
    if (key.description === 'fastify.context' && (request as unknown as RouteContexts)[key]?.config === expected)
      return key;
  }
  return null;
}

/** The plugin's own options; the shared ones are checked by createHttpTracking. */
function validate(options: InferSignalFastifyOptions): void {
  if (typeof options !== 'object' || options === null) rejectValue('options', options, 'an object');
  if (typeof options.monitor?.queue !== 'function')
    throw new InferSignalConfigError('options.monitor', 'must be a monitor from createMonitor()');
  const readiness = options.readiness;
  if (readiness !== undefined && typeof readiness !== 'boolean') {
    if (typeof readiness !== 'object' || readiness === null)
      rejectValue('options.readiness', readiness, 'a boolean or { path }');
    if (readiness.path !== undefined && (typeof readiness.path !== 'string' || !readiness.path.startsWith('/'))) {
      rejectValue('options.readiness.path', readiness.path, 'a path starting with "/"');
    }
  }
  const connections = options.connections;
  if (
    connections !== undefined &&
    typeof connections !== 'boolean' &&
    (typeof connections !== 'object' || connections === null)
  ) {
    rejectValue(
      'options.connections',
      connections,
      'a boolean or instrumentServer options ({ capacity, name, saturationWarn, saturationCritical, reuseWindow })',
    );
  }
}

/**
 * The plugin body. Wrapped with fastify-plugin, so its hooks apply to the
 * context it is registered in (and that context's children): register it
 * inside the scope of your inference routes to leave the rest untracked.
 */
const plugin: FastifyPluginCallback<InferSignalFastifyOptions> = (fastify: FastifyInstance, options, done) => {
  const monitor = options?.monitor;
  let tracking: ReturnType<typeof createHttpTracking>;
  try {
    validate(options);
    tracking = createHttpTracking(monitor, options, { source: SOURCE, keys: PLUGIN_KEYS });
  } catch (error) {
    // Fails registration (ready()/listen() reject), naming the field.
    return done(error as Error);
  }

  const routeConfig = routeConfigReader();
  // Sibling scopes may each register the plugin (one queue each); the decorator is made once.
  if (!fastify.hasRequestDecorator('inferSignal')) fastify.decorateRequest('inferSignal', null);

  fastify.addHook(
    'onRequest',
    function inferSignalOnRequest(request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction) {
      try {
        const config = routeConfig(request);
        const url = config?.url;
        // 404s have no route (and no inference); routes can opt out with config.inferSignal = false.
        // A plugin registered in an enclosing scope too: the outer one (whose hook ran first) tracks the request.
        if (url !== undefined && config?.inferSignal !== false && request.inferSignal == null) {
          const route = monitor.label('route', url);
          const model = tracking.model(request, route);
          const retryAfter = tracking.shed(model, reply.raw);
          if (retryAfter !== undefined) {
            // Replying from onRequest without calling next() skips the rest of the lifecycle, handler included.
            const answer = tracking.shedAnswer;
            if (answer.handler === undefined) {
              reply.code(answer.status).header('retry-after', retryAfter).headers(answer.headers).send(answer.body);
            } else {
              // The app writes the answer on the raw objects; Fastify sends nothing for this request.
              reply.hijack();
              tracking.answerShed(request.raw, reply.raw, retryAfter, model);
            }
            return;
          }
          // The reply is the owner the lifecycle hijacks before SSE takes over reply.raw.
          request.inferSignal = tracking.track(model, route, reply.raw, reply) as FastifyTracked;
        }
      } catch (error) {
        // Instrumentation must never take a request down: count and carry on.
        monitor.internalError(SOURCE, error);
      }
      // Outside the try: the rest of the lifecycle runs inside next(), and its errors are Fastify's.
      next();
    },
  );

  // No onResponse or onRequestAbort hook: the lifecycle's one `close` listener on
  // reply.raw sees both (finished in full, or cut off), hijacked SSE replies
  // included. Each of those hooks makes Fastify add listeners of its own to
  // every request (two for onResponse, one for onRequestAbort), which the
  // server benchmark priced at several per cent of a hello-world request.

  fastify.addHook(
    'onError',
    function inferSignalOnError(
      request: FastifyRequest,
      reply: FastifyReply,
      _error: FastifyError,
      next: HookHandlerDoneFunction,
    ) {
      // Once the head is out, the status can no longer say the request failed.
      if (reply.raw.headersSent) request.inferSignal?.fail();
      next();
    },
  );

  if (options.connections) {
    try {
      // At registration rather than onReady, so a bad option fails registration like the others; the server object is
      // the same, and its maxConnections is read at every connection, so setting it later still counts.
      const instrumentation = instrumentServer(
        monitor,
        fastify.server,
        options.connections === true ? {} : options.connections,
      );
      fastify.addHook('onClose', (_instance, next) => {
        instrumentation.stop();
        next();
      });
    } catch (error) {
      // instrumentServer names its own options `options.*`; here they are `options.connections.*`.
      return done(
        error instanceof InferSignalConfigError && error.field.startsWith('options')
          ? new InferSignalConfigError(error.field.replace(/^options/, 'options.connections'), error.detail)
          : (error as Error),
      );
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
