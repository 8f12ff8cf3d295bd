/**
 * The Fastify plugin's own work per request, without sockets or the load
 * generator: its onRequest hook (route and model labels, the ticket, the
 * request's lifecycle on the raw response), the response head (which starts
 * the ticket) and the response's `close` (which counts the request), on real
 * IncomingMessage / ServerResponse objects, against the same request
 * without the plugin. The server suite's figure includes everything else a
 * request costs and moves by ±10 % on a shared machine; this one isolates
 * the plugin's part, to a few tens of nanoseconds.
 *
 *   pnpm build && pnpm --filter @infersignal/benchmarks fastify-hooks
 *   BENCH_BASELINE=/path/to/other/checkout …   also that checkout's plugin (built, installed), interleaved
 *
 * Arms run in rotated order each round; the figure is process CPU time per
 * request (GC included) of each arm minus bare's in the same round, median
 * over the rounds. Prints only (docs/benchmarks.md is left alone).
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { BASELINE, importFrom } from './lib/baseline';
import { SMOKE, rounds } from './lib/env';
import { table } from './lib/report';
import { rotate, spread } from './lib/stats';

const REQUESTS = SMOKE ? 200 : Number(process.env.BENCH_REQUESTS ?? 20_000);
const ROUND_COUNT = SMOKE ? 1 : rounds(25);
const ROUTE = '/v1/infer';

type OnRequest = (request: object, reply: object, next: () => void) => void;
interface Packages {
  core: typeof import('@infersignal/core');
  fastify: typeof import('@infersignal/fastify');
}

/** The plugin's onRequest hook, registered on a stand-in for a Fastify instance (the hooks are all it needs). */
async function onRequestOf({ core, fastify }: Packages): Promise<OnRequest> {
  const monitor = core.createMonitor({
    exportMode: 'producer',
    traces: false,
    detectorIntervalMs: 0,
    eventLoop: false,
    logger: { warn: () => {} },
  });
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
  // Without a socket the response never finishes: `close` counts it cancelled, the same lifecycle work.
  res.emit('close');
}

const arms: Array<{ name: string; onRequest: OnRequest | undefined }> = [
  { name: 'bare', onRequest: undefined },
  {
    name: 'this tree',
    onRequest: await onRequestOf({
      core: await import('@infersignal/core'),
      fastify: await import('@infersignal/fastify'),
    }),
  },
];
if (BASELINE !== undefined) {
  arms.push({
    name: BASELINE,
    onRequest: await onRequestOf({
      core: await importFrom(BASELINE, '@infersignal/core'),
      fastify: await importFrom(BASELINE, '@infersignal/fastify'),
    }),
  });
}

const nsPerRequest = new Map(arms.map((a) => [a.name, [] as number[]]));
// Two unmeasured rounds first: JIT tiers and heap sizing.
for (let round = -2; round < ROUND_COUNT; round++) {
  for (const arm of rotate(arms, round + 2)) {
    const before = process.cpuUsage();
    for (let i = 0; i < REQUESTS; i++) request(arm.onRequest);
    const used = process.cpuUsage(before);
    if (round >= 0) nsPerRequest.get(arm.name)!.push(((used.user + used.system) * 1000) / REQUESTS);
  }
}

const bare = nsPerRequest.get('bare')!;
const rows = arms.map((arm) => {
  const ns = nsPerRequest.get(arm.name)!;
  const added = spread(ns.map((x, i) => x - bare[i]!));
  return [
    arm.name,
    `${spread(ns).median.toFixed(0)} ns`,
    arm.onRequest === undefined
      ? '—'
      : `${added.median.toFixed(0)} ns (IQR ${added.q1.toFixed(0)}–${added.q3.toFixed(0)})`,
  ];
});
console.log(`${ROUND_COUNT} rounds × ${REQUESTS} requests per arm, CPU time per request`);
console.log(table(['arm', 'per request', 'added over bare (per round)'], rows));
if (BASELINE !== undefined) {
  const here = nsPerRequest.get('this tree')!;
  const there = nsPerRequest.get(BASELINE)!;
  const diff = spread(here.map((x, i) => x - there[i]!));
  console.log(
    `this tree − baseline per round: ${diff.median.toFixed(0)} ns (IQR ${diff.q1.toFixed(0)}–${diff.q3.toFixed(0)})`,
  );
}
