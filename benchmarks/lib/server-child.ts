/**
 * A hello-inference server in its own process, so the load generator's CPU
 * (in the parent) is not counted: `fork()`ed by the load suites with
 * `[framework, variant]`. It answers `GET /v1/infer` with a tiny JSON body,
 * and talks over IPC:
 *   → { type: 'ready', port, metricsUrl }      once listening
 *   ← { type: 'begin' }                        start of a measured window
 *   ← { type: 'end' }   → { type: 'window', cpuUs, mainUs, waitUs, gcUs, gcs, majorGcs, newSpaceBytes, wallUs, requests, spans }
 * cpuUs is this process's `process.cpuUsage()` delta (user + system) over
 * the window: the server's own cost, GC and export included; mainUs and
 * waitUs the event-loop thread's time on and waiting for a CPU (Linux
 * schedstat), so what ran on other threads (JIT compilers, GC helpers) and
 * how much a neighbour took the server's CPU are visible per window.
 *
 * Variant-specific modules are imported dynamically after the telemetry
 * they need is set up: instrumentation-http must patch `http` before the
 * framework loads it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

import { importFrom } from './baseline';
import { DropSpanExporter } from './otel';
import { threadSchedule } from './schedstat';
import {
  CPU_PROFILE_ENV,
  FRAMEWORKS,
  PACKAGES_FROM_ENV,
  VARIANTS,
  type ChildMessage,
  type Framework,
  type Variant,
} from './servers';

const BODY = { id: 0, model: 'tiny', output: 'hello' };

interface Telemetry {
  metricsUrl: string;
  spans: () => number;
  /** Express/Fastify wiring: returns the handler-side hooks. */
  fastify?: (app: import('fastify').FastifyInstance) => Promise<void>;
  express?: (app: import('express').Express) => void;
}

/**
 * An `@infersignal/*` package: this tree's (`own`), or the same package
 * from the checkout named by PACKAGES_FROM_ENV (an A/B of two builds).
 */
function infersignal<T>(name: string, own: () => Promise<T>): Promise<T> {
  const tree = process.env[PACKAGES_FROM_ENV];
  return tree ? importFrom<T>(tree, name) : own();
}

/** A loopback server for a Prometheus handler: what a scrape costs is this process's CPU, as in production. */
async function metricsServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const { createServer } = await import('node:http');
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}/metrics`;
}

/**
 * The scraper's endpoint on a server with no metrics: an empty answer. Every
 * server then serves the same two kinds of client, the load generators and
 * the scraper, whose different header sets shape V8's caches in Node's own
 * request parsing (the `IncomingMessage` headers getter's stores go
 * megamorphic: ~2 000 instructions a request on Fastify, Node 24, counted
 * against InferSignal while only the instrumented servers saw a second
 * client), as any production server with health checks does.
 */
function noMetricsServer(): Promise<string> {
  return metricsServer((_req, res) => res.end());
}

/** A MeterProvider whose Prometheus exporter is served on loopback, as the hand-written variants use. */
async function prometheusMeter(name: string) {
  const { MeterProvider } = await import('@opentelemetry/sdk-metrics');
  const { PrometheusExporter } = await import('@opentelemetry/exporter-prometheus');
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meter = new MeterProvider({ readers: [exporter] }).getMeter(name);
  const metricsUrl = await metricsServer((req, res) => exporter.getMetricsRequestHandler(req, res));
  return { meter, metricsUrl };
}

/**
 * A hand-written per-request hook in both frameworks: `begin` at arrival
 * (Fastify `onRequest`, an Express middleware), `finish` with its result
 * when the response is done (`onResponse`, `res.on('finish')`).
 */
function perRequest<T>(begin: () => T, finish: (state: T) => void): Pick<Telemetry, 'fastify' | 'express'> {
  return {
    fastify: async (app) => {
      app.addHook('onRequest', (request, _reply, done) => {
        (request as unknown as { hookState: T }).hookState = begin();
        done();
      });
      app.addHook('onResponse', (request, _reply, done) => {
        finish((request as unknown as { hookState: T }).hookState);
        done();
      });
    },
    express: (app) => {
      app.use((_req, res, next) => {
        const state = begin();
        res.on('finish', () => finish(state));
        next();
      });
    },
  };
}

/**
 * A global tracer provider with a BatchSpanProcessor into a counting,
 * dropping exporter, as `start({ traces: true })` registers; with
 * `contextManager`, the AsyncLocalStorage context manager NodeSDK adds.
 */
async function globalTracing(contextManager: boolean): Promise<DropSpanExporter> {
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { context, trace } = await import('@opentelemetry/api');
  const spans = new DropSpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(spans)] }));
  if (contextManager) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    await contextManagerHasRun();
  }
  return spans;
}

/**
 * One `context.with()` through the global context manager, as the batch
 * span processor's first export (and any instrumentation's first request)
 * makes. On Node 20 that turns AsyncLocalStorage's async hooks on for the
 * life of the process; without it a server would pay for them only from its
 * first export on (5 s after its first span), part-way through the rounds.
 */
async function contextManagerHasRun(): Promise<void> {
  const { context, ROOT_CONTEXT } = await import('@opentelemetry/api');
  context.with(ROOT_CONTEXT, () => {});
}

/** A metrics-only hand-written hook: the arrival time in, `finish(arrival)` when the response is done. */
function timedHook(metricsUrl: string, finish: (arrival: number) => void): Telemetry {
  return { metricsUrl, spans: () => 0, ...perRequest(() => performance.now(), finish) };
}

async function setup(variant: Variant): Promise<Telemetry> {
  if (variant === 'bare' || variant === 'bare-again') return { metricsUrl: await noMetricsServer(), spans: () => 0 };

  if (variant === 'hook') {
    // The minimal hand-written alternative: one histogram + one counter per request, OTel SDK + Prometheus.
    const { meter, metricsUrl } = await prometheusMeter('hook');
    const duration = meter.createHistogram('http.server.request.duration', { unit: 's' });
    const requests = meter.createCounter('http.server.requests');
    const attributes = { 'http.route': '/v1/infer' };
    return timedHook(metricsUrl, (t0) => {
      duration.record((performance.now() - t0) / 1000, attributes);
      requests.add(1, attributes);
    });
  }

  if (variant === 'hook-empty') {
    // The hook without its two OTel records: what any per-request hook pays in this framework.
    return {
      metricsUrl: await noMetricsServer(),
      spans: () => 0,
      ...perRequest(
        () => performance.now(),
        () => {},
      ),
    };
  }

  if (variant === 'otel-calls') {
    // What InferSignal's API export asks of the SDK per request, by hand: the
    // same three histograms (names, buckets) with the same attribute sets
    // the plugin's requests export (2, 3 and 5 attributes: the request
    // duration carries the GenAI conventions' operation and provider with
    // core's defaults), nothing else.
    const { METRICS, ATTR, HISTOGRAM_BUCKETS } = await import('@infersignal/core');
    const { UNKNOWN_MODEL } = await import('../../packages/core/src/names');
    const { meter, metricsUrl } = await prometheusMeter('otel-calls');
    const histogram = (name: string) =>
      meter.createHistogram(name, { unit: 's', advice: { explicitBucketBoundaries: [...HISTOGRAM_BUCKETS[name]!] } });
    const queueWait = histogram(METRICS.queueWait.name);
    const inference = histogram(METRICS.inferenceDuration.name);
    const request = histogram(METRICS.requestDuration.name);
    const waitAttributes = { [ATTR.queue]: 'http', [ATTR.model]: UNKNOWN_MODEL };
    const endAttributes = { ...waitAttributes, [ATTR.outcome]: 'completed' };
    const requestAttributes = {
      [ATTR.operationName]: 'chat',
      [ATTR.providerName]: 'self_hosted',
      [ATTR.model]: UNKNOWN_MODEL,
      [ATTR.queue]: 'http',
      [ATTR.outcome]: 'completed',
    };
    return timedHook(metricsUrl, (t0) => {
      const started = performance.now();
      queueWait.record((started - t0) / 1000, waitAttributes);
      const now = performance.now();
      inference.record((now - started) / 1000, endAttributes);
      request.record((now - t0) / 1000, requestAttributes);
    });
  }

  if (variant === 'otel-span') {
    // What one SDK span per request costs, by hand, with the tracing setup
    // start({ traces: true }) makes: AsyncLocalStorage context manager,
    // BasicTracerProvider, BatchSpanProcessor. No metrics.
    const { context, trace } = await import('@opentelemetry/api');
    const { ATTR, SPANS } = await import('@infersignal/core');
    const spans = await globalTracing(false);
    const tracer = trace.getTracer('otel-span');
    const attributes = { [ATTR.queue]: 'http', [ATTR.model]: 'default' };
    return {
      metricsUrl: await noMetricsServer(),
      spans: () => spans.spans,
      ...perRequest(
        () => tracer.startSpan(SPANS.request, { attributes }, context.active()),
        (span) => {
          span.setAttribute(ATTR.queueWait, 0);
          span.setAttribute(ATTR.outcome, 'completed');
          span.end();
        },
      ),
    };
  }

  if (variant === 'otel-http') {
    // What NodeSDK + auto-instrumentation does for HTTP: metrics and spans for every request.
    const { registerInstrumentations } = await import('@opentelemetry/instrumentation');
    const { HttpInstrumentation } = await import('@opentelemetry/instrumentation-http');
    const { MeterProvider } = await import('@opentelemetry/sdk-metrics');
    const { PrometheusExporter } = await import('@opentelemetry/exporter-prometheus');
    const { metrics } = await import('@opentelemetry/api');
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const spans = await globalTracing(true);
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
    registerInstrumentations({ instrumentations: [new HttpInstrumentation()] });
    const metricsUrl = await metricsServer((req, res) => exporter.getMetricsRequestHandler(req, res));
    return { metricsUrl, spans: () => spans.spans };
  }

  // InferSignal through the one-call start(): Prometheus on a loopback port, scraped by the parent.
  const { start } = await infersignal('@infersignal/node', () => import('@infersignal/node'));
  const { BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const spans = new DropSpanExporter();
  // Outliers: start()'s default once traces are on (slow, failed, cancelled, shed and 1 % of the rest).
  const traces =
    variant === 'infersignal-traces'
      ? 'all'
      : variant === 'infersignal-outliers' || variant === 'infersignal-outliers-context'
        ? 'outliers'
        : false;
  const contextManager = variant === 'infersignal-outliers-context';
  const signal = start({
    serviceName: 'bench',
    prometheus: { host: '127.0.0.1', port: 0 },
    otlp: false,
    // The traces variants keep start()'s default export mode (producer) and add spans.
    ...(variant === 'infersignal-api'
      ? { exportMode: 'api' as const }
      : variant === 'infersignal-producer'
        ? { exportMode: 'producer' as const }
        : {}),
    ...(traces
      ? {
          traces,
          contextManager,
          spanProcessors: [new BatchSpanProcessor(spans)],
        }
      : { traces: false }),
  });
  if (contextManager) await contextManagerHasRun();
  const address = await signal.prometheus!.ready;
  if (!address) throw new Error('Prometheus endpoint did not start');
  const monitor = signal.monitor;
  return {
    metricsUrl: address.url,
    spans: () => spans.spans,
    fastify: async (app) => {
      const { inferSignal } = await infersignal('@infersignal/fastify', () => import('@infersignal/fastify'));
      await app.register(inferSignal, { monitor });
    },
    express: (app) => {
      // Imported above the switch would load http before instrumentation in other variants; here it is harmless.
      app.use(expressMiddleware!(monitor));
    },
  };
}

/**
 * With CPU_PROFILE_ENV set to a directory: a V8 CPU profile of each measured
 * window (200 µs sampling), written there as <framework>-<variant>-<n>.cpuprofile;
 * open it in Chrome's DevTools or speedscope. Only the window, so start-up and
 * warm-up stay out of it.
 */
function windowProfiler(framework: string, variant: string) {
  const dir = process.env[CPU_PROFILE_ENV];
  if (!dir) return { start: () => {}, stop: () => {} };
  mkdirSync(dir, { recursive: true });
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 200 });
  let n = 0;
  return {
    start: () => session.post('Profiler.start'),
    stop: () =>
      session.post('Profiler.stop', (error, result) => {
        if (!error)
          writeFileSync(join(dir, `${framework}-${variant}-${++n}.cpuprofile`), JSON.stringify(result.profile));
      }),
  };
}

/** GC pause time V8 reports, summed, µs. */
let gcUs = 0;
/** GC pauses V8 reported, counted; of them, the old generation's (mark-compact, or a step of incremental marking). */
let gcs = 0;
let majorGcs = 0;
const OLD_GENERATION = perfConstants.NODE_PERFORMANCE_GC_MAJOR | perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcUs += entry.duration * 1000;
    gcs++;
    if (((entry as { detail?: { kind?: number } }).detail?.kind ?? 0) & OLD_GENERATION) majorGcs++;
  }
}).observe({ entryTypes: ['gc'] });

let expressMiddleware: ((monitor: import('@infersignal/core').Monitor) => import('express').RequestHandler) | undefined;

async function main(): Promise<void> {
  const [framework, variant] = process.argv.slice(2) as [Framework, Variant];
  if (!FRAMEWORKS.includes(framework) || !VARIANTS.includes(variant))
    throw new Error(`usage: server-child <${FRAMEWORKS.join('|')}> <${VARIANTS.join('|')}>`);
  if (framework === 'express' && variant.startsWith('infersignal')) {
    const { inferSignal } = await infersignal('@infersignal/express', () => import('@infersignal/express'));
    expressMiddleware = (monitor) => inferSignal(monitor);
  }
  const telemetry = await setup(variant);
  let served = 0;
  let port: number;
  if (framework === 'fastify') {
    const { default: Fastify } = await import('fastify');
    const app = Fastify({ logger: false });
    await telemetry.fastify?.(app);
    app.get('/v1/infer', async () => {
      served++;
      return BODY;
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
  } else {
    const { default: express } = await import('express');
    const app = express();
    app.disable('x-powered-by');
    telemetry.express?.(app);
    app.get('/v1/infer', (_req, res) => {
      served++;
      res.json(BODY);
    });
    const server = await new Promise<import('node:http').Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    port = (server.address() as { port: number }).port;
  }

  const profiler = windowProfiler(framework, process.env[PACKAGES_FROM_ENV] ? `${variant}@baseline` : variant);
  let cpu0 = process.cpuUsage();
  let served0 = 0;
  let spans0 = 0;
  let main0 = threadSchedule();
  let gc0 = 0;
  let gcs0 = 0;
  let majorGcs0 = 0;
  let newSpaceBytes = 0;
  let wall0 = 0;
  process.on('message', (message: { type: string }) => {
    if (message.type === 'begin') {
      served0 = served;
      spans0 = telemetry.spans();
      gc0 = gcUs;
      gcs0 = gcs;
      majorGcs0 = majorGcs;
      newSpaceBytes = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
      wall0 = performance.now();
      main0 = threadSchedule();
      cpu0 = process.cpuUsage();
      profiler.start();
    } else if (message.type === 'end') {
      const cpu = process.cpuUsage(cpu0);
      const main = threadSchedule();
      send({
        type: 'window',
        cpuUs: cpu.user + cpu.system,
        systemUs: cpu.system,
        mainUs: main.runUs - main0.runUs,
        waitUs: main.waitUs - main0.waitUs,
        gcUs: gcUs - gc0,
        gcs: gcs - gcs0,
        majorGcs: majorGcs - majorGcs0,
        newSpaceBytes,
        wallUs: (performance.now() - wall0) * 1000,
        requests: served - served0,
        spans: telemetry.spans() - spans0,
      });
      profiler.stop();
    } else if (message.type === 'exit') {
      process.exit(0);
    }
  });
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready', port, metricsUrl: telemetry.metricsUrl });
}

function send(message: ChildMessage): void {
  process.send?.(message);
}

main().catch((error: unknown) => {
  send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
});
