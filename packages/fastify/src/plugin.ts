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
  type HttpReplyOwner,
  type HttpRequestSignal,
  type HttpTracking,
  type HttpTrackingOptions,
  type InstrumentServerOptions,
  type ShedAnswer,
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

/** The part of a route's `config` the plugin reads. */
interface RouteConfig {
  inferSignal?: boolean;
}

/** Sends the configured shed answer through Fastify's reply, so that the app's onSend and onResponse hooks see it. */
function replyShed(owner: HttpReplyOwner, answer: ShedAnswer, retryAfter: string): void {
  (owner as FastifyReply)
    .code(answer.status)
    .header('retry-after', retryAfter)
    .headers(answer.headers)
    .send(answer.body);
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
  let tracking: HttpTracking<FastifyRequest>;
  try {
    validate(options);
    tracking = createHttpTracking(monitor, options, { source: SOURCE, keys: PLUGIN_KEYS, replyShed });
  } catch (error) {
    // Fails registration (ready()/listen() reject), naming the field.
    return done(error as Error);
  }

  // Sibling scopes may each register the plugin (one queue each); the decorator is made once.
  if (!fastify.hasRequestDecorator('inferSignal')) fastify.decorateRequest('inferSignal', null);

  fastify.addHook(
    'onRequest',
    function inferSignalOnRequest(request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction) {
      try {
        // A plugin registered in an enclosing scope too: the outer one (whose hook ran first) tracks the request.
        if (request.inferSignal == null) {
          // Fastify's public route view (4.26+ and 5): one object a request, read once.
          const route = request.routeOptions;
          const url = route.url;
          // 404s have no route (and no inference); routes can opt out with config.inferSignal = false.
          if (url !== undefined && (route.config as RouteConfig | undefined)?.inferSignal !== false) {
            // Labels, shed decision and arrival in one call. The reply is the owner that sends a shed answer, and
            // that the lifecycle hijacks before a shed handler or SSE takes over reply.raw.
            const signal = tracking.open(request, reply.raw, url, reply);
            // Shed and answered: replying from onRequest without calling next() skips the rest of the lifecycle,
            // handler included.
            if (signal === undefined) return;
            request.inferSignal = signal as FastifyTracked;
          }
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
