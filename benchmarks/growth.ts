/**
 * How cost grows with what a server tracks:
 *
 *   pnpm bench:growth          (tsx benchmarks/growth.ts; --node 24)
 *   BENCH_GROWTH=cap,loaded    only those parts (cost, cap, loaded): a quick
 *                              rerun of one verdict; docs/benchmarks.md left alone
 *
 * 1. Per-request cost with 1, 10 and 50 models × 1 and 8 queues, through
 *    core's hot path (enqueue → start → stream → end, lib/requests.ts), in
 *    both export modes, requests spread round-robin over every (queue,
 *    model) pair. tinybench time, not instruction counts: what can make
 *    cost grow here is the working set (one set of aggregates per pair, 400
 *    at 8 × 50) outgrowing the caches, which instruction counts do not see;
 *    all configurations run interleaved in one process, in many short
 *    rounds, and each figure is the median of per-round ratios, so the
 *    machine's noise cancels; each mode's 1 × 1 runs twice (A/A) to show
 *    what the method reads where nothing differs. Beside them the floor,
 *    the same records into bare per-series typed arrays. Goal: each
 *    configuration's growth over its mode's 1 × 1 ≤ 1.10× the floor's
 *    over the same pairs (flat is out of reach: the floor grows too).
 * 2. One Prometheus collection at the cardinality cap: `start()`'s reader
 *    (mounted on this process's HTTP server), 20 queues (maxQueues) × 50
 *    models (maxModels) and the `_other` slot, every outcome, streams and
 *    model loads, scraped from another process. Its time (handler called →
 *    response finished) and the event-loop block it causes: a probe
 *    re-arms `setImmediate` while the scrape runs, and the longest gap
 *    between two of its turns is the longest stretch anything else (a
 *    request) would have waited. Goal: the block ≤ 5 ms.
 * 3. A scrape every 100 ms while 10 000 requests are in flight and
 *    requests keep ending and arriving: each scrape's totals must equal the
 *    counts at some moment between two steps of the load (none lost, none
 *    twice), and the last scrape, after every request has ended, the exact
 *    totals.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { execFileSync, spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { performance, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { MeterProvider, type MetricProducer } from '@opentelemetry/sdk-metrics';
import {
  createMonitor,
  HISTOGRAM_BUCKETS,
  METRICS,
  type Monitor,
  type Outcome,
  type QueueTracker,
  type Ticket,
} from '@infersignal/core';
import { start } from '@infersignal/node';
import { Bench } from 'tinybench';
import { rounds, SMOKE, subset, TASK_MS } from './lib/env';
import { PullReader } from './lib/otel';
import { printVerdict, table, writeSection, type Goal } from './lib/report';
import { threadSchedule } from './lib/schedstat';
import { fmtNs, fmtRatio, roundRatios, rotate, spread } from './lib/stats';

const BATCH = 16;
const TOKENS = 16;
const MODEL_COUNTS = [1, 10, 50] as const;
const QUEUE_COUNTS = [1, 8] as const;
/** Growth over 1 × 1 at most this much more than the floor's over the same pairs. */
const GROWTH_OVER_FLOOR = 1.1;
/**
 * Many short rounds rather than a few long ones: a ratio is taken inside
 * each round, so a burst of other work spoils one ratio of many instead of
 * a third of them (BENCH_ROUNDS and BENCH_TASK_MS scale both).
 */
const COST_ROUNDS = rounds(12);
const COST_TASK_MS = SMOKE ? TASK_MS : Math.max(1, Math.round(TASK_MS / 4));
const BLOCK_GOAL_MS = 5;
const IN_FLIGHT = SMOKE ? 1_000 : 10_000;
const SCRAPE_EVERY_MS = 100;
const LOADED_SECONDS = SMOKE ? 0.5 : 3;
const CAP_SCRAPES = SMOKE ? 3 : 20;
const PARTS = ['cost', 'cap', 'loaded'] as const;
const RUN = subset('BENCH_GROWTH', PARTS);
const PARTIAL = RUN.length < PARTS.length;

// --- 1. per-request cost by number of models and queues --------------------
/** `floor`: what any per-series store pays, the same records into bare typed arrays (see floorConfiguration). */
type Mode = 'producer' | 'api' | 'floor';

function request(queue: QueueTracker, model: string): void {
  const ticket = queue.enqueue(model);
  ticket.start();
  const stream = ticket.stream();
  stream.token(1);
  stream.token(TOKENS - 1);
  stream.end('completed');
  ticket.end('completed');
}

/** `1 model × 1 queue`, with ` (A/A)` for the second instance of a baseline. */
function configName(mode: Mode, models: number, queues: number, again: boolean): string {
  return `${mode}, ${models} model${models > 1 ? 's' : ''} × ${queues} queue${queues > 1 ? 's' : ''}${again ? ' (A/A)' : ''}`;
}

function configuration(mode: 'producer' | 'api', models: number, queues: number, again = false) {
  // Producer mode: the reader needs the producer and the producer the monitor, bound through a box.
  const box: { monitor?: Monitor } = {};
  const producer: MetricProducer = {
    collect: async (o) =>
      (await box.monitor!.metricProducer!.collect(o)) as Awaited<ReturnType<MetricProducer['collect']>>,
  };
  const reader = new PullReader(mode === 'producer' ? [producer] : undefined);
  const monitor = (box.monitor = createMonitor({
    meterProvider: new MeterProvider({ readers: [reader] }),
    exportMode: mode,
    traces: false,
    detectorIntervalMs: 0,
    eventLoop: false,
  }));
  const pairs: Array<{ queue: QueueTracker; model: string }> = [];
  const trackers = Array.from({ length: queues }, (_, q) => monitor.queue(`queue-${q}`, { capacity: 1024 }));
  for (let m = 0; m < models; m++) for (const queue of trackers) pairs.push({ queue, model: `model-${m}` });
  // Every pair once before timing: first sight of a label allocates its slot, which is not the steady state.
  for (const p of pairs) request(p.queue, p.model);
  let next = 0;
  return {
    name: configName(mode, models, queues, again),
    mode,
    models,
    queues,
    again,
    monitor,
    run: () => {
      for (let i = 0; i < BATCH; i++) {
        const p = pairs[next]!;
        next = next + 1 === pairs.length ? 0 : next + 1;
        request(p.queue, p.model);
      }
    },
  };
}

/** The histograms one request records (wait, inference, request, time to first token, time per output token). */
const REQUEST_HISTOGRAMS = [
  METRICS.queueWait,
  METRICS.inferenceDuration,
  METRICS.requestDuration,
  METRICS.timeToFirstToken,
  METRICS.timePerOutputToken,
].map((spec) => HISTOGRAM_BUCKETS[spec.name]!);
/** Its counter adds: requests, streams, and tokens twice (two token calls). */
const REQUEST_COUNTER_ADDS = 4;

/** A histogram record into bare numbers: count, sum, min, max, then the bucket counts. */
function recordBare(values: Float64Array, boundaries: readonly number[], value: number): void {
  let i = 0;
  while (i < boundaries.length && value > boundaries[i]!) i++;
  values[4 + i]!++;
  values[0]!++;
  values[1]! += value;
  if (!(value >= values[2]!)) values[2] = value;
  if (value > values[3]!) values[3] = value;
}

/**
 * The floor: per (queue, model) pair, one Float64Array per histogram
 * series (count, sum, min, max, buckets, as core's aggregates) and one cell
 * per counter series, reached by a direct reference (no lookup, no
 * detector, no clock); per request the same 5 histogram records and 4
 * counter adds, round-robin over the same pairs. Its growth with the pairs
 * is the memory locality any store with one set of numbers per series
 * pays once the pairs' numbers outgrow the caches.
 */
function floorConfiguration(models: number, queues: number, again = false) {
  const pairs = Array.from({ length: models * queues }, () => ({
    histograms: REQUEST_HISTOGRAMS.map((b) => new Float64Array(b.length + 5)),
    counters: Array.from({ length: REQUEST_COUNTER_ADDS - 1 }, () => ({ value: 0 })),
  }));
  let next = 0;
  let sink = 0;
  return {
    name: configName('floor', models, queues, again),
    mode: 'floor' as Mode,
    models,
    queues,
    again,
    monitor: undefined,
    run: () => {
      for (let i = 0; i < BATCH; i++) {
        const p = pairs[next]!;
        next = next + 1 === pairs.length ? 0 : next + 1;
        for (let h = 0; h < REQUEST_HISTOGRAMS.length; h++)
          recordBare(p.histograms[h]!, REQUEST_HISTOGRAMS[h]!, 0.001 * h);
        p.counters[0]!.value += 1;
        p.counters[1]!.value += 1;
        p.counters[2]!.value += 1;
        p.counters[2]!.value += TOKENS - 1;
        sink += p.counters[2]!.value;
      }
      return sink;
    },
  };
}

/**
 * Each mode's configurations, then its 1 × 1 once more (A/A): the same
 * configuration over its own monitor, measured like the others, so its
 * ratio to the first is the spread the method itself gives.
 */
const configs = RUN.includes('cost')
  ? (['producer', 'api', 'floor'] as const).flatMap((mode) => {
      const make = (models: number, queues: number, again = false) =>
        mode === 'floor' ? floorConfiguration(models, queues, again) : configuration(mode, models, queues, again);
      return [
        ...MODEL_COUNTS.flatMap((models) => QUEUE_COUNTS.map((queues) => make(models, queues))),
        make(1, 1, true),
      ];
    })
  : [];
const perRequest = new Map<string, number[]>(configs.map((c) => [c.name, []]));
for (let round = 0; configs.length > 0 && round < COST_ROUNDS; round++) {
  // The first round warms every configuration up (compilation, caches); later ones only settle.
  const bench = new Bench({ time: COST_TASK_MS, warmupTime: SMOKE ? 10 : round === 0 ? 100 : 10 });
  for (const c of rotate(configs, round)) bench.add(c.name, c.run);
  await bench.run();
  for (const task of bench.tasks) {
    const mean = task.result?.latency.mean;
    if (mean === undefined) throw new Error(`tinybench produced no result for ${task.name}`);
    perRequest.get(task.name)!.push((mean * 1e6) / BATCH);
  }
  console.log(`round ${round + 1}/${COST_ROUNDS} done`);
}
await Promise.all(configs.map((c) => c.monitor?.close()));

const baseline = (mode: Mode) => perRequest.get(configs.find((c) => c.mode === mode)!.name)!;
/** The interquartile range over many rounds (the full range of many short windows mostly shows the noisiest). */
const nsSpread = (values: number[]) => {
  const s = spread(values);
  return s.n >= 8
    ? `${fmtNs(s.median)} (IQR ${fmtNs(s.q1)}–${fmtNs(s.q3)})`
    : `${fmtNs(s.median)} (${fmtNs(s.min)}–${fmtNs(s.max)})`;
};
const COST_HEADER = [
  'configuration',
  `per request, median (${COST_ROUNDS >= 8 ? 'IQR' : 'range'})`,
  'vs 1 model × 1 queue',
];
const costRows = configs.map((c) => {
  const values = perRequest.get(c.name)!;
  return [c.name, nsSpread(values), fmtRatio(roundRatios(values, baseline(c.mode)))];
});
const worstGrowth = (mode: Mode) =>
  Math.max(
    ...configs
      .filter((c) => c.mode === mode && !c.again)
      .map((c) => roundRatios(perRequest.get(c.name)!, baseline(mode)).median),
  );
/** The A/A ratio of a mode: 1 × 1 over 1 × 1, what the method reads where nothing differs. */
const aaRatio = (mode: Mode) =>
  roundRatios(perRequest.get(configs.find((c) => c.mode === mode && c.again)!.name)!, baseline(mode));
const aaLine = (mode: Mode) => {
  const s = aaRatio(mode);
  return `A/A ${s.median.toFixed(2)}×, IQR ${s.q1.toFixed(2)}–${s.q3.toFixed(2)}`;
};
/** Median ns a configuration adds per request over its mode's 1 × 1, at 50 models × 8 queues. */
const addedNs = (mode: Mode) => {
  const widest = configs.find((c) => c.mode === mode && c.models === 50 && c.queues === 8 && !c.again)!;
  return spread(perRequest.get(widest.name)!).median - spread(baseline(mode)).median;
};
/**
 * A configuration's growth over its mode's 1 × 1 divided by the floor's growth over the same pairs, per round
 * (every configuration has one value per round, in order), median over the rounds; the worst configuration.
 * 1.00× is growing exactly as much as bare per-series typed arrays do: the memory any store pays.
 */
const worstOverFloor = (mode: Mode) =>
  Math.max(
    ...configs
      .filter((c) => c.mode === mode && !c.again)
      .map((c) => {
        const floor = configs.find(
          (f) => f.mode === 'floor' && !f.again && f.models === c.models && f.queues === c.queues,
        )!;
        const mine = perRequest.get(c.name)!;
        const floors = perRequest.get(floor.name)!;
        const [base, floorBase] = [baseline(mode), baseline('floor')];
        return spread(mine.map((v, i) => v / base[i]! / (floors[i]! / floorBase[i]!))).median;
      }),
  );
const growthLine = (mode: Mode) =>
  `${worstGrowth(mode).toFixed(2)}× (+${fmtNs(addedNs(mode))} at 50 × 8, ${aaLine(mode)})`;
if (configs.length > 0) {
  console.log(table(COST_HEADER, costRows));
  console.log(
    `worst growth over 1 × 1: producer ${growthLine('producer')}, api ${growthLine('api')}, floor (bare typed arrays) ${growthLine('floor')}`,
  );
}

// --- scraping from another process ------------------------------------------
/**
 * The scraper: a child process, so the client's work (a fetch and a parse of
 * tens of MB of text) never runs on the event loop being measured. Each
 * scrape reports its round trip and the totals the checks need, summed over
 * every series of a metric.
 */
const SCRAPER = `
process.on('disconnect', () => process.exit(0));
const sum = (body, prefix) => {
  let total = 0;
  for (const line of body.split('\\n')) {
    if (!line.startsWith(prefix)) continue;
    const rest = line.slice(prefix.length);
    if (rest[0] !== '{' && rest[0] !== ' ') continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
};
process.on('message', async (message) => {
  if (message.type !== 'scrape') return;
  const t0 = performance.now();
  let response, body;
  try {
    response = await fetch(process.env.SCRAPE_URL);
    body = await response.text();
  } catch (err) {
    process.send({ status: 0, error: String(err.cause ?? err) });
    return;
  }
  process.send({
    status: response.status,
    ms: performance.now() - t0,
    bytes: Buffer.byteLength(body),
    series: body.split('\\n').filter((line) => line !== '' && !line.startsWith('#')).length,
    requests: sum(body, 'infersignal_requests_total'),
    inFlight: sum(body, 'infersignal_queue_in_flight'),
    waits: sum(body, 'infersignal_queue_wait_duration_seconds_count'),
  });
});
`;

interface ScrapeReport {
  /** 0: the fetch failed (`error` says how). */
  status: number;
  error?: string;
  ms: number;
  bytes: number;
  series: number;
  requests: number;
  inFlight: number;
  waits: number;
}

/** What one scrape cost this process: the handler's time to the response's end, and the longest loop block in it. */
interface ScrapeCost {
  ms: number;
  blockMs: number;
  /** Garbage-collection pauses inside that longest block (V8 stops the loop for them). */
  gcMs: number;
  /**
   * Inside that longest block, the time the main thread was runnable but waiting for a CPU (another
   * thread or process had it: the scraper, a GC helper, another program); NaN where /proc does not tell.
   */
  cpuWaitMs: number;
}

/** The main thread's run-queue wait so far, ms (Linux schedstat); NaN where it cannot be read. */
const runQueueWaitMs = (): number => threadSchedule().waitUs / 1000;

/**
 * Where Linux and `taskset` allow (2 CPUs or more): this process's main
 * thread (its event loop, what the block is measured on) alone on CPU 1;
 * the scraper process and this process's other threads (V8's GC and
 * compiler helpers) on CPU 0. Unpinned, on 2 CPUs, the scraper's parse of
 * ~60 MB and the helpers took the loop's CPU during scrapes: the main
 * thread waited for a CPU 3.8 ms of a median 4.3 ms block (Linux
 * schedstat); with only the main thread pinned, still 2.7 of 3.2 ms. A
 * Prometheus server runs on another machine, and a server's helpers have
 * other cores.
 */
const SCRAPE_PINNING = pinScrape();

function pinScrape(): { pinned: boolean; line: string } {
  if (RUN.every((part) => part === 'cost')) return { pinned: false, line: '' };
  if (process.platform !== 'linux' || availableParallelism() < 2)
    return { pinned: false, line: 'scraper and event loop not pinned (needs Linux and 2 CPUs or more)' };
  try {
    // Every thread to CPU 0, then (without -a) the main thread alone to CPU 1.
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
    execFileSync('taskset', ['-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  } catch {
    return { pinned: false, line: 'scraper and event loop not pinned (`taskset` failed or is missing)' };
  }
  return {
    pinned: true,
    line: 'the event loop (main thread) alone on CPU 1, the scraper process and the other threads on CPU 0 (`taskset`)',
  };
}

/**
 * `start()` with its reader mounted on a server of this process, so each
 * scrape can be timed from the handler's call to the response's end, with
 * the loop-lateness probe running in between.
 */
async function scrapedMonitor() {
  const signal = start({
    serviceName: 'growth',
    prometheus: { mount: true },
    otlp: false,
    traces: false,
  });
  const handler = signal.metricsHandler!;
  const costs: ScrapeCost[] = [];
  const blocks: Array<{ cost: ScrapeCost; from: number; to: number }> = [];
  const pauses: PerformanceEntry[] = [];
  const gc = new PerformanceObserver((list) => pauses.push(...list.getEntries()));
  gc.observe({ entryTypes: ['gc'] });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const t0 = performance.now();
    let last = t0;
    let lastWait = runQueueWaitMs();
    let blockMs = 0;
    let blockFrom = t0;
    let blockWaitMs = Number.NaN;
    let probing = true;
    const turn = () => {
      const now = performance.now();
      const wait = runQueueWaitMs();
      if (now - last > blockMs) {
        blockMs = now - last;
        blockFrom = last;
        blockWaitMs = wait - lastWait;
      }
      last = now;
      lastWait = wait;
    };
    const probe = () => {
      turn();
      if (probing) setImmediate(probe);
    };
    setImmediate(probe);
    res.on('finish', () => {
      probing = false;
      turn();
      const end = last;
      const cost = { ms: end - t0, blockMs, gcMs: 0, cpuWaitMs: blockWaitMs };
      costs.push(cost);
      blocks.push({ cost, from: blockFrom, to: blockFrom + blockMs });
    });
    handler(req, res);
  });
  // No idle timeout on the scraper's keep-alive connection: on a loaded machine its parse of a 23 MB body can
  // outlast the default 5 s, and a socket closed as the next scrape goes out fails that fetch.
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  const node = [process.execPath, '-e', SCRAPER];
  const scraper = spawn(
    SCRAPE_PINNING.pinned ? 'taskset' : node[0],
    SCRAPE_PINNING.pinned ? ['-c', '0', ...node] : node.slice(1),
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, SCRAPE_URL: url },
    },
  );
  const scraperExited = new Promise<void>((resolve) => scraper.once('exit', () => resolve()));
  const pending: Array<(r: ScrapeReport) => void> = [];
  scraper.on('message', (r: ScrapeReport) => pending.shift()?.(r));
  const scrape = () =>
    new Promise<ScrapeReport>((resolve) => {
      pending.push(resolve);
      scraper.send({ type: 'scrape' });
    });
  return {
    monitor: signal.monitor,
    costs,
    scrape,
    /** Fills in each cost's `gcMs` (GC entries arrive after the fact). */
    async attributeGc() {
      await new Promise((resolve) => setTimeout(resolve, 20));
      for (const { cost, from, to } of blocks.splice(0)) {
        for (const p of pauses) {
          const overlap = Math.min(to, p.startTime + p.duration) - Math.max(from, p.startTime);
          if (overlap > 0) cost.gcMs += overlap;
        }
      }
    },
    async close() {
      gc.disconnect();
      scraper.disconnect();
      await scraperExited;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await signal.shutdown();
    },
  };
}

// --- 2. one collection at the cardinality cap -------------------------------
/** Every outcome a started request can end with (a rejection is counted apart, before a ticket exists). */
const OUTCOMES = [
  'completed',
  'cancelled',
  'error',
  'timeout',
  'unavailable',
  'deadline_exceeded',
] as const satisfies readonly Outcome[];
const MAX_QUEUES = 20;
const MAX_MODELS = 50;

async function atCap() {
  const cap = await scrapedMonitor();
  {
    // One more model than the cap, so the `_other` slot exists too.
    const models = Array.from({ length: MAX_MODELS + 1 }, (_, m) => `model-${m}`);
    for (const model of models) await cap.monitor.modelLoad(model, 'load', () => undefined);
    for (let q = 0; q < MAX_QUEUES; q++) {
      const queue = cap.monitor.queue(`queue-${q}`, { capacity: 1024 });
      for (const model of models) {
        queue.reject(model);
        for (const outcome of OUTCOMES) {
          const ticket = queue.enqueue(model);
          ticket.start();
          const stream = ticket.stream();
          stream.token(4);
          stream.end(outcome === 'timeout' ? 'error' : outcome);
          ticket.end(outcome);
        }
      }
    }
    cap.monitor.tick();
  }
  const capReports: ScrapeReport[] = [];
  for (let i = 0; i < CAP_SCRAPES; i++) capReports.push(await cap.scrape());
  await cap.attributeGc();
  const capCosts = cap.costs.splice(0);
  await cap.close();
  const capFailed = capReports.find((r) => r.status !== 200);
  if (capFailed) throw new Error(`a scrape at the cap failed: ${capFailed.error ?? `status ${capFailed.status}`}`);
  // The first scrape pays for lazy set-up and compilation; the steady cost is what recurs every scrape.
  const steadyCap = capCosts.slice(1);
  const capMs = spread(steadyCap.map((c) => c.ms));
  const capBlock = spread(steadyCap.map((c) => c.blockMs));
  const capGc = spread(steadyCap.map((c) => c.gcMs));
  const capWait = spread(steadyCap.map((c) => c.cpuWaitMs));
  const capLine = `${capReports[0]!.series} series, ${(capReports[0]!.bytes / 1024).toFixed(0)} KiB`;
  console.log(
    `cap: ${capLine}; collection ${capMs.median.toFixed(2)} ms (max ${capMs.max.toFixed(2)}), block ${capBlock.median.toFixed(2)} ms (max ${capBlock.max.toFixed(2)}), of it GC pauses ${capGc.median.toFixed(2)} ms (max ${capGc.max.toFixed(2)}), waiting for a CPU ${capWait.median.toFixed(2)} ms (max ${capWait.max.toFixed(2)}); first scrape ${capCosts[0]!.ms.toFixed(1)} ms`,
  );
  console.log(
    `  blocks (ms, of it waiting for a CPU): ${steadyCap.map((c) => `${c.blockMs.toFixed(1)} (${c.cpuWaitMs.toFixed(1)})`).join(', ')}`,
  );
  return { capCosts, steadyCap, capMs, capBlock, capGc, capWait, capLine };
}

// --- 3. a scrape every 100 ms under 10 000 requests in flight ---------------
async function underLoad() {
  const loaded = await scrapedMonitor();
  const queue = loaded.monitor.queue('in-flight', { capacity: IN_FLIGHT * 2 });
  const inFlight: Ticket[] = [];
  let started = 0;
  let ended = 0;
  /** Counts after every step of the load: a scrape must report one of these moments, exactly. */
  const endedSeen = new Set<number>([0]);
  const startedSeen = new Set<number>([0]);
  const inFlightSeen = new Set<number>([0]);
  const note = () => {
    endedSeen.add(ended);
    startedSeen.add(started);
    inFlightSeen.add(inFlight.length);
  };
  const arrive = (n: number) => {
    for (let i = 0; i < n; i++) {
      const ticket = queue.enqueue(`model-${started % 10}`);
      ticket.start();
      inFlight.push(ticket);
      started++;
    }
  };
  const finish = (n: number) => {
    for (const ticket of inFlight.splice(0, n)) {
      ticket.end('completed');
      ended++;
    }
  };
  arrive(IN_FLIGHT);
  note();
  // Each step (one macrotask) ends the oldest 1 % and lets as many arrive: always IN_FLIGHT in flight.
  let loading = true;
  const STEP = IN_FLIGHT / 100;
  const step = () => {
    if (!loading) return;
    finish(STEP);
    arrive(STEP);
    note();
    setImmediate(step);
  };
  setImmediate(step);
  const loadedReports: ScrapeReport[] = [];
  const until = performance.now() + LOADED_SECONDS * 1000;
  while (performance.now() < until) {
    const next = performance.now() + SCRAPE_EVERY_MS;
    loadedReports.push(await loaded.scrape());
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
  }
  loading = false;
  finish(inFlight.length);
  note();
  const last = await loaded.scrape();
  await loaded.attributeGc();
  const loadedCosts = loaded.costs.splice(0);
  await loaded.close();

  const loadedFailed = [...loadedReports, last].find((r) => r.status !== 200);
  if (loadedFailed)
    throw new Error(`a scrape under load failed: ${loadedFailed.error ?? `status ${loadedFailed.status}`}`);
  const torn = loadedReports.filter(
    (r) => !endedSeen.has(r.requests) || !startedSeen.has(r.waits) || !inFlightSeen.has(r.inFlight),
  );
  const finalExact = last.requests === started && last.waits === started && last.inFlight === 0 && ended === started;
  const loadedBlock = spread(loadedCosts.slice(1).map((c) => c.blockMs));
  const loadedGc = spread(loadedCosts.slice(1).map((c) => c.gcMs));
  const loadedWait = spread(loadedCosts.slice(1).map((c) => c.cpuWaitMs));
  const loadedMs = spread(loadedCosts.slice(1).map((c) => c.ms));
  console.log(
    `under ${IN_FLIGHT} in flight: ${loadedReports.length} scrapes, ${torn.length} off any counted moment; last scrape requests ${last.requests}, waits ${last.waits}, in flight ${last.inFlight} for ${started} started; block median ${loadedBlock.median.toFixed(2)} ms, max ${loadedBlock.max.toFixed(2)} ms (GC in it median ${loadedGc.median.toFixed(2)} ms)`,
  );
  return { loadedReports, torn, finalExact, last, started, loadedBlock, loadedGc, loadedWait, loadedMs, loadedCosts };
}

const capRun = RUN.includes('cap') ? await atCap() : undefined;
const loadedRun = RUN.includes('loaded') ? await underLoad() : undefined;
if (PARTIAL) {
  console.log('subset run (BENCH_GROWTH): no verdict, docs/benchmarks.md left alone');
  process.exit(0);
}
const { capCosts, steadyCap, capMs, capBlock, capGc, capWait, capLine } = capRun!;
const { loadedReports, torn, finalExact, last, started, loadedBlock, loadedGc, loadedWait, loadedMs, loadedCosts } =
  loadedRun!;

// --- verdict and docs ---------------------------------------------------------
const goals: Goal[] = [
  ...(['producer', 'api'] as const).map((mode) => ({
    text: `${mode} export per request at up to 50 models × 8 queues ${growthLine(mode)} its 1 × 1 cost, ${worstOverFloor(mode).toFixed(2)}× the growth of its floor (bare per-series typed arrays: ${growthLine('floor')})`,
    goal: `≤ ${GROWTH_OVER_FLOOR.toFixed(2)}× the floor's growth`,
    met: worstOverFloor(mode) <= GROWTH_OVER_FLOOR,
  })),
  {
    text: `one scrape at the cap (${capLine}) blocks the event loop ${capBlock.median.toFixed(2)} ms (max ${capBlock.max.toFixed(2)} of ${steadyCap.length}), takes ${capMs.median.toFixed(2)} ms`,
    goal: `≤ ${BLOCK_GOAL_MS} ms`,
    met: capBlock.median <= BLOCK_GOAL_MS,
  },
  {
    text: `a scrape every ${SCRAPE_EVERY_MS} ms under ${IN_FLIGHT.toLocaleString('en')} in-flight requests: ${loadedReports.length - torn.length}/${loadedReports.length} scrapes exact, final counts ${finalExact ? 'exact' : 'WRONG'} (${last.requests}/${started})`,
    goal: 'no count lost',
    met: torn.length === 0 && finalExact && loadedReports.length > 0,
  },
];
const verdict = printVerdict('growth', goals);

writeSection('growth', {
  title: 'growth: cost per request by models and queues, a scrape at the cardinality cap',
  command: 'pnpm bench:growth',
  packages: ['@infersignal/core', '@infersignal/node', '@opentelemetry/sdk-metrics', 'tinybench'],
  method: `Per request: core's hot path over every (queue, model) pair, ${COST_ROUNDS} rotated rounds, against its 1 × 1 and a floor of bare per-series typed arrays. A scrape at the cap (${MAX_QUEUES} queues × ${MAX_MODELS} models), and every ${SCRAPE_EVERY_MS} ms under ${IN_FLIGHT.toLocaleString('en')} requests in flight.`,
  results: [
    table(
      ['pairs', ...(['producer', 'api', 'floor'] as const).flatMap((m) => [`${m}, per request`, `${m} vs 1 × 1`])],
      configs
        .filter((c) => c.mode === 'producer')
        .map((p) => [
          p.name.slice('producer, '.length),
          ...(['producer', 'api', 'floor'] as const).flatMap((mode) => {
            const c = configs.find(
              (x) => x.mode === mode && x.models === p.models && x.queues === p.queues && x.again === p.again,
            )!;
            const values = perRequest.get(c.name)!;
            return [nsSpread(values), fmtRatio(roundRatios(values, baseline(mode)))];
          }),
        ]),
    ),
    '',
    table(
      [
        'scrape',
        'series, size',
        'collection, median (max)',
        'event-loop block, median (max)',
        'of it GC / waiting for a CPU',
        'first',
      ],
      [
        [
          'at the cap, idle',
          capLine,
          `${capMs.median.toFixed(2)} ms (${capMs.max.toFixed(2)})`,
          `**${capBlock.median.toFixed(2)} ms** (${capBlock.max.toFixed(2)})`,
          `${capGc.median.toFixed(2)} / ${capWait.median.toFixed(2)} ms`,
          `${capCosts[0]!.ms.toFixed(1)} ms`,
        ],
        [
          `every ${SCRAPE_EVERY_MS} ms, ${IN_FLIGHT.toLocaleString('en')} in flight`,
          `${last.series} series`,
          `${loadedMs.median.toFixed(2)} ms (${loadedMs.max.toFixed(2)})`,
          `${loadedBlock.median.toFixed(2)} ms (${loadedBlock.max.toFixed(2)})`,
          `${loadedGc.median.toFixed(2)} / ${loadedWait.median.toFixed(2)} ms`,
          `${loadedCosts[0]!.ms.toFixed(1)} ms`,
        ],
      ],
    ),
    '',
    `Under load: ${loadedReports.length} scrapes, ${torn.length} off every counted moment; the last, after every request ended: ${last.requests.toLocaleString('en')} requests, ${last.waits.toLocaleString('en')} queue waits for ${started.toLocaleString('en')} started, ${last.inFlight} in flight.  `,
  ].join('\n'),
  verdict,
});
