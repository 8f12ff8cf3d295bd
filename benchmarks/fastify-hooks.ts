/**
 * The adapters' own work per request, without sockets or the load
 * generator, on real IncomingMessage / ServerResponse objects, against the
 * same request without them. The server suite's figure includes everything
 * else a request costs and moves by ±10 % on a shared machine; this one
 * isolates the adapter's part, to a few tens of nanoseconds.
 *
 * - Fastify: the plugin's onRequest hook (route and model labels, the
 *   ticket, the request's lifecycle on the raw response), the response head
 *   (which starts the ticket) and the response's `close` (which counts it).
 * - Express: the objects re-parented onto `app.request` / `app.response`
 *   as Express does to every request; the middleware, the head and
 *   `finish` + `close`; beside it the server suite's hand-written hook (a
 *   `finish` listener recording one OTel histogram and one counter) and the
 *   floor any per-request hook pays (the listener and two clock reads, no
 *   records).
 *
 *   pnpm build && pnpm --filter @infersignal/benchmarks fastify-hooks
 *   BENCH_BASELINE=/path/to/other/checkout …   also that checkout's adapters (built, installed), interleaved
 *   BENCH_FRAMEWORKS=express                    one framework only
 *
 * Arms run in rotated order each round; the figure is process CPU time per
 * request (GC included) of each arm minus its framework's bare in the same
 * round, median over the rounds. Prints only (docs/benchmarks.md is left alone).
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { RequestHandler } from 'express';
import { ROOT_CONTEXT, context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { BASELINE, importFrom } from './lib/baseline';
import { SMOKE, rounds, subset } from './lib/env';
import { DropSpanExporter, PullReader } from './lib/otel';
import { table } from './lib/report';
import { rotate, spread } from './lib/stats';

const REQUESTS = SMOKE ? 200 : Number(process.env.BENCH_REQUESTS ?? 20_000);
const ROUND_COUNT = SMOKE ? 1 : rounds(25);
const ROUTE = '/v1/infer';

type OnRequest = (request: object, reply: object, next: () => void) => void;
interface Packages {
  core: typeof import('@infersignal/core');
  fastify: typeof import('@infersignal/fastify');
  express: typeof import('@infersignal/express');
}
const FRAMEWORKS = subset('BENCH_FRAMEWORKS', ['fastify', 'express'] as const);

/** Outlier traces' spans: the tracer provider `start({ traces: true })` makes, into a dropping exporter. */
const spans = new DropSpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(spans)] });
// The context manager such a setup registers, run once (as the batch processor's first export does): the
// traces arm's capture of the parent context at arrival reads a live AsyncLocalStorage.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
context.with(ROOT_CONTEXT, () => {});

function monitorOf(core: Packages['core'], traces: 'outliers' | false = false) {
  return core.createMonitor({
    exportMode: 'producer',
    traces,
    tracerProvider,
    detectorIntervalMs: 0,
    eventLoop: false,
    logger: { warn: () => {} },
  });
}

/** The plugin's onRequest hook, registered on a stand-in for a Fastify instance (the hooks are all it needs). */
async function onRequestOf({ core, fastify }: Packages, traces: 'outliers' | false = false): Promise<OnRequest> {
  const monitor = monitorOf(core, traces);
  let hook: OnRequest | undefined;
  const instance = {
    addHook: (name: string, fn: OnRequest) => {
      if (name === 'onRequest') hook = fn;
    },
    hasRequestDecorator: () => true,
    decorateRequest: () => {},
  };
  await new Promise<void>((resolve, reject) =>
    (fastify.inferSignal as unknown as (i: object, o: object, done: (e?: Error) => void) => void)(
      instance,
      { monitor },
      (error) => (error ? reject(error) : resolve()),
    ),
  );
  if (hook === undefined) throw new Error('the plugin added no onRequest hook');
  return hook;
}

const socket = new Socket();
const config = { url: ROUTE, method: 'GET' };
const headers = { 'content-type': 'application/json; charset=utf-8' };
const next = () => {};
const hijack = () => {};

/** One request: made, seen by the hook (if any), its head written, its response closed. */
function request(onRequest: OnRequest | undefined): void {
  const req = new IncomingMessage(socket);
  req.complete = true;
  const res = new ServerResponse(req);
  onRequest?.({ routeOptions: { url: ROUTE, config }, inferSignal: null, raw: req }, { raw: res, hijack }, next);
  res.writeHead(200, headers);
  finish(res);
  res.emit('close');
}

/**
 * Node 24's flag behind `writableFinished` (a symbol set when the response
 * finishes); Node 20 and 22 derive it from `finished` instead.
 */
const WRITABLE_FINISHED = Object.getOwnPropertySymbols(new ServerResponse(new IncomingMessage(new Socket()))).find(
  (symbol) => symbol.description === 'kWritableFinished',
);

/**
 * Without a socket a response never finishes by itself: marked finished
 * (`writableFinished` then holds), it counts as completed at `close`, as a
 * served request does. Unmarked it counts as cancelled, and with outlier
 * traces every request would make a span (as on Node 24 before 2026-12-05,
 * when only `finished` was set: 100 % spans instead of 2 %).
 */
function finish(res: ServerResponse): void {
  (res as { finished: boolean }).finished = true;
  if (WRITABLE_FINISHED !== undefined) (res as unknown as Record<symbol, boolean>)[WRITABLE_FINISHED] = true;
}

const { default: express } = await import('express');
type Middleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;
/**
 * Express's request and response prototypes (`app.request`, `app.response`), which it re-parents every request
 * onto: one app per arm, as two copies of the middleware on one app would each hook its response prototype.
 */
type ExpressApp = ReturnType<typeof express>;

/** One Express request: re-parented as Express does, through `middleware` (if any), head, `finish` and `close`. */
function expressRequest(app: ExpressApp, middleware: Middleware | undefined): void {
  const req = new IncomingMessage(socket);
  req.complete = true;
  const res = new ServerResponse(req);
  Object.setPrototypeOf(req, app.request);
  Object.setPrototypeOf(res, app.response);
  (req as unknown as { res: ServerResponse }).res = res;
  middleware?.(req, res, next);
  res.writeHead(200, headers);
  finish(res);
  res.emit('finish');
  res.emit('close');
}

/** The server suite's hand-written hook: one OTel histogram and one counter from a `finish` listener. */
function expressHook(): Middleware {
  const meter = new MeterProvider({ readers: [new PullReader()] }).getMeter('hook');
  const duration = meter.createHistogram('http.server.request.duration', { unit: 's' });
  const requests = meter.createCounter('http.server.requests');
  const attributes = { 'http.route': ROUTE };
  return (_req, res, next) => {
    const t0 = performance.now();
    res.on('finish', () => {
      duration.record((performance.now() - t0) / 1000, attributes);
      requests.add(1, attributes);
    });
    next();
  };
}

/** What any per-request hook pays: a `finish` listener (a closure) and two clock reads, nothing recorded. */
let floorSink = 0;
function expressFloor(): Middleware {
  return (_req, res, next) => {
    const t0 = performance.now();
    res.on('finish', () => {
      floorSink += performance.now() - t0;
    });
    next();
  };
}

function expressMiddlewareOf({ core, express: adapter }: Packages): Middleware {
  return adapter.inferSignal(monitorOf(core)) as RequestHandler as unknown as Middleware;
}

interface Arm {
  name: string;
  framework: 'fastify' | 'express';
  run: () => void;
}
const own: Packages = {
  core: await import('@infersignal/core'),
  fastify: await import('@infersignal/fastify'),
  express: await import('@infersignal/express'),
};
const baseline: Packages | undefined =
  BASELINE === undefined
    ? undefined
    : {
        core: await importFrom(BASELINE, '@infersignal/core'),
        fastify: await importFrom(BASELINE, '@infersignal/fastify'),
        express: await importFrom(BASELINE, '@infersignal/express'),
      };
const arms: Arm[] = [];
if (FRAMEWORKS.includes('fastify')) {
  const fastifyArm = async (name: string, packages: Packages | undefined, traces: 'outliers' | false = false) => {
    const hook = packages === undefined ? undefined : await onRequestOf(packages, traces);
    return { name, framework: 'fastify', run: () => request(hook) } satisfies Arm;
  };
  arms.push(
    await fastifyArm('fastify bare', undefined),
    await fastifyArm('fastify: this tree', own),
    await fastifyArm('fastify: this tree, outlier traces', own, 'outliers'),
  );
  if (baseline !== undefined)
    arms.push(
      await fastifyArm(`fastify: ${BASELINE}`, baseline),
      await fastifyArm(`fastify: ${BASELINE}, outlier traces`, baseline, 'outliers'),
    );
}
if (FRAMEWORKS.includes('express')) {
  const expressArm = (name: string, middleware: Middleware | undefined): Arm => {
    const app = express();
    return { name, framework: 'express', run: () => expressRequest(app, middleware) };
  };
  arms.push(
    expressArm('express bare', undefined),
    expressArm('express: a finish listener + 2 clock reads (the floor)', expressFloor()),
    expressArm('express: hand-written hook (1 histogram + 1 counter)', expressHook()),
    expressArm('express: this tree', expressMiddlewareOf(own)),
  );
  if (baseline !== undefined) arms.push(expressArm(`express: ${BASELINE}`, expressMiddlewareOf(baseline)));
}

// A response the arms mark finished must read as finished, or every outlier-traces request is a cancelled one.
{
  const res = new ServerResponse(new IncomingMessage(socket));
  finish(res);
  if (!res.writableFinished) throw new Error('finish() no longer marks a response finished on this Node');
}

const nsPerRequest = new Map(arms.map((a) => [a.name, [] as number[]]));
// Two unmeasured rounds first: JIT tiers and heap sizing.
for (let round = -2; round < ROUND_COUNT; round++) {
  for (const arm of rotate(arms, round + 2)) {
    const before = process.cpuUsage();
    const run = arm.run;
    for (let i = 0; i < REQUESTS; i++) run();
    const used = process.cpuUsage(before);
    if (round >= 0) nsPerRequest.get(arm.name)!.push(((used.user + used.system) * 1000) / REQUESTS);
    // Timers get their turn between arms (the batch span processor's export), outside the measured loop.
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

const bareOf = (framework: Arm['framework']) => nsPerRequest.get(`${framework} bare`)!;
const rows = arms.map((arm) => {
  const ns = nsPerRequest.get(arm.name)!;
  const bare = bareOf(arm.framework);
  const added = spread(ns.map((x, i) => x - bare[i]!));
  return [
    arm.name,
    `${spread(ns).median.toFixed(0)} ns`,
    arm.name.endsWith(' bare')
      ? '—'
      : `${added.median.toFixed(0)} ns (IQR ${added.q1.toFixed(0)}–${added.q3.toFixed(0)})`,
  ];
});
console.log(
  `${ROUND_COUNT} rounds × ${REQUESTS} requests per arm, CPU time per request${floorSink > 0 ? '' : ' (the floor arm measured no time?)'}`,
);
console.log(table(['arm', 'per request', 'added over bare (per round)'], rows));
/** Per round, arm `a` minus arm `b`. */
const minus = (a: string, b: string) => {
  const there = nsPerRequest.get(b)!;
  const diff = spread(nsPerRequest.get(a)!.map((x, i) => x - there[i]!));
  return `${diff.median.toFixed(0)} ns (IQR ${diff.q1.toFixed(0)}–${diff.q3.toFixed(0)})`;
};
for (const framework of FRAMEWORKS) {
  if (baseline !== undefined)
    console.log(
      `${framework}: this tree − baseline per round: ${minus(`${framework}: this tree`, `${framework}: ${BASELINE}`)}`,
    );
}
if (FRAMEWORKS.includes('fastify')) {
  console.log(
    `fastify: outlier traces − producer export per round: ${minus('fastify: this tree, outlier traces', 'fastify: this tree')}`,
  );
  if (baseline !== undefined)
    console.log(
      `fastify: outlier traces, this tree − baseline per round: ${minus('fastify: this tree, outlier traces', `fastify: ${BASELINE}, outlier traces`)} (spans exported: ${spans.spans})`,
    );
}
if (FRAMEWORKS.includes('express'))
  console.log(
    `express: middleware − hand-written hook per round: ${minus('express: this tree', 'express: hand-written hook (1 histogram + 1 counter)')}`,
  );
