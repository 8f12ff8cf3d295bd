/**
 * Load generator: `@infersignal/bench` (runBench, closed loop) vs
 * autocannon against the same bare Fastify server (forked child), same
 * connections and duration, interleaved; then open-loop rate accuracy and
 * a coordinated-omission check.
 *
 *   pnpm bench:loadgen         (tsx benchmarks/loadgen.ts; BENCH_SECONDS, BENCH_ROUNDS)
 *
 * Throughput is judged by the server's own count of requests served in
 * the window divided by the window's wall time — one yardstick for both
 * tools — and each tool's own figure is shown beside it.
 *
 * Open loop: at a fixed rate the achieved send rate must be within 1 % of
 * the target. Latency from the scheduled time: during one open-loop run the
 * load generator's own event loop is blocked for STALL_MS; a tool that
 * measures from the scheduled send time shows the requests due during the
 * stall as ≥ STALL_MS late (max latency ≥ 0.9 × STALL_MS); one that measures
 * from the actual send (coordinated omission) would not.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { runBench, type BenchResult } from '@infersignal/bench';
import { ROUNDS, SECONDS, SMOKE } from './lib/env';
import { printVerdict, table, writeSection, type Goal } from './lib/report';
import { startServer } from './lib/servers';
import { fmtRatio, fmtSpread, roundRatios, rotate, spread } from './lib/stats';

const CONNECTIONS = 32;
/** autocannon runs whole seconds; both tools get the same duration. */
const CLOSED_SECONDS = Math.max(1, Math.round(SECONDS));
const RATE = SMOKE ? 500 : 2000;
const OPEN_SECONDS = Math.max(SMOKE ? 1 : 3, SECONDS);
const STALL_MS = 200;

type Tool = 'bench' | 'autocannon';
const TOOLS: Tool[] = ['bench', 'autocannon'];

const server = await startServer('fastify', 'bare');
const closed = new Map<Tool, { serverRps: number[]; toolRps: number[]; p99: number[] }>(
  TOOLS.map((t) => [t, { serverRps: [], toolRps: [], p99: [] }]),
);
const open: { offered: number; throughput: number; p99: number }[] = [];
let stall: { max: number; p99: number; offered: number } | undefined;

async function closedLoop(tool: Tool): Promise<{ rps: number; p99: number }> {
  if (tool === 'autocannon') {
    const r = await autocannon({ url: server.url, connections: CONNECTIONS, duration: CLOSED_SECONDS, pipelining: 1 });
    if (r.errors + r.non2xx > 0) throw new Error(`autocannon: ${r.errors} errors, ${r.non2xx} non-2xx`);
    return { rps: r['2xx'] / r.duration, p99: r.latency.p99 };
  }
  const r = await runBench({
    target: server.url,
    method: 'GET',
    connections: CONNECTIONS,
    durationMs: CLOSED_SECONDS * 1000,
    progress: false,
  });
  if (r.total.ok !== r.total.responses) throw new Error(`bench: ${r.total.responses - r.total.ok} failed requests`);
  return { rps: r.total.throughput, p99: r.total.latency.p99 };
}

try {
  // Warm-up of the server and of both tools (smoke mode checks that the suite runs, not settled figures).
  if (!SMOKE) {
    await closedLoop('autocannon');
    await closedLoop('bench');
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const tool of rotate(TOOLS, round)) {
      const t0 = performance.now();
      const { result, server: w } = await server.window(() => closedLoop(tool));
      const wall = (performance.now() - t0) / 1000;
      const c = closed.get(tool)!;
      c.serverRps.push(w.requests / wall);
      c.toolRps.push(result.rps);
      c.p99.push(result.p99);
    }
    console.log(
      `round ${round + 1}/${ROUNDS} closed loop, server-counted req/s: ${TOOLS.map((t) => `${t} ${closed.get(t)!.serverRps.at(-1)!.toFixed(0)}`).join(', ')}`,
    );
  }
  for (let round = 0; round < ROUNDS; round++) {
    const r: BenchResult = await runBench({
      target: server.url,
      method: 'GET',
      rate: RATE,
      durationMs: OPEN_SECONDS * 1000,
      progress: false,
    });
    open.push({ offered: r.total.offeredRate, throughput: r.total.throughput, p99: r.total.latency.p99 });
    console.log(
      `round ${round + 1}/${ROUNDS} open loop at ${RATE}/s: sent ${r.total.offeredRate.toFixed(1)}/s, answered ${r.total.throughput.toFixed(1)}/s, P99 ${r.total.latency.p99.toFixed(2)} ms`,
    );
  }
  // Coordinated omission: block this (the generator's) thread for STALL_MS, 40 % into the run.
  const stallTimer = setTimeout(() => {
    const until = performance.now() + STALL_MS;
    while (performance.now() < until) {
      // busy: nothing can be sent or received meanwhile
    }
  }, OPEN_SECONDS * 400);
  const r = await runBench({
    target: server.url,
    method: 'GET',
    rate: RATE,
    durationMs: OPEN_SECONDS * 1000,
    progress: false,
  });
  clearTimeout(stallTimer);
  stall = { max: r.total.latency.max, p99: r.total.latency.p99, offered: r.total.offeredRate };
  console.log(
    `stall run: generator blocked ${STALL_MS} ms; max latency ${stall.max.toFixed(1)} ms, P99 ${stall.p99.toFixed(1)} ms, sent ${stall.offered.toFixed(1)}/s`,
  );
} finally {
  await server.close();
}

const b = closed.get('bench')!;
const a = closed.get('autocannon')!;
const ratio = roundRatios(b.serverRps, a.serverRps);
const toolRatio = roundRatios(b.toolRps, a.toolRps);
const rateErrors = open.map((o) => Math.abs(o.offered - RATE) / RATE);
const worstRateError = Math.max(...rateErrors);
const rows = TOOLS.map((t) => {
  const c = closed.get(t)!;
  return [
    t === 'bench' ? '@infersignal/bench (runBench)' : 'autocannon',
    fmtSpread(spread(c.serverRps), 0),
    fmtSpread(spread(c.toolRps), 0),
    fmtSpread(spread(c.p99), 1),
  ];
});
const openRows = open.map((o, i) => [
  `${i + 1}`,
  `${RATE}`,
  o.offered.toFixed(1),
  `${((100 * (o.offered - RATE)) / RATE).toFixed(2)} %`,
  o.throughput.toFixed(1),
  o.p99.toFixed(2),
]);
console.log('');
console.log(table(['tool (closed loop)', 'req/s (server count)', 'req/s (tool report)', 'P99 ms (tool)'], rows));
console.log(`bench / autocannon: ${fmtRatio(ratio)} by server count, ${fmtRatio(toolRatio)} by the tools' own reports`);
console.log(table(['open-loop run', 'target req/s', 'sent req/s', 'error', 'answered req/s', 'P99 ms'], openRows));

const goals: Goal[] = [
  { text: `closed loop bench ${ratio.median.toFixed(2)}× autocannon req/s`, goal: '≥ 1.0×', met: ratio.median >= 1.0 },
  {
    text: `open loop at ${RATE}/s sent within ${(100 * worstRateError).toFixed(2)} % of target (worst of ${open.length})`,
    goal: '≤ 1 %',
    met: worstRateError <= 0.01,
  },
  {
    text: `latency from the scheduled time: max ${stall!.max.toFixed(0)} ms after a ${STALL_MS} ms generator stall`,
    goal: `≥ ${0.9 * STALL_MS} ms`,
    met: stall!.max >= 0.9 * STALL_MS,
  },
];
const verdict = printVerdict('loadgen', goals);

writeSection('loadgen', {
  title: 'loadgen: @infersignal/bench vs autocannon',
  command: 'pnpm bench:loadgen',
  packages: ['@infersignal/bench', 'autocannon', 'fastify'],
  method: `Both tools against the same bare Fastify server in a forked child: closed loop (${CONNECTIONS} connections, ${CLOSED_SECONDS} s, ${ROUNDS} rounds, req/s by the **server's** count); open loop at ${RATE} req/s; a ${STALL_MS} ms stall of the generator's own event loop.`,
  results: [
    table(['tool (closed loop)', 'req/s (server count)', 'req/s (tool report)', 'P99 ms (tool)'], rows),
    '',
    `bench / autocannon, per round: **${fmtRatio(ratio)}** by server count, ${fmtRatio(toolRatio)} by the tools' own reports. Open loop at ${RATE} req/s for ${OPEN_SECONDS} s: sent ${open.map((o) => o.offered.toFixed(1)).join(', ')} req/s, P99 ${open.map((o) => o.p99.toFixed(2)).join(', ')} ms.  `,
    `${STALL_MS} ms generator stall: max ${stall!.max.toFixed(1)} ms, P99 ${stall!.p99.toFixed(1)} ms from the scheduled time (requests due meanwhile count from when they were due), sent ${stall!.offered.toFixed(1)} req/s overall.  `,
  ].join('\n'),
  verdict,
});
