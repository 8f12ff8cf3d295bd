/**
 * The fidelity suite: does an alert come before the failure it predicts,
 * and does nothing alert on a healthy service?
 * Each run starts the fastify-onnx example server as a child process,
 * measures its capacity, then runs one scenario against it with
 * `@infersignal/bench`, which scrapes the server's Prometheus endpoint for
 * signal levels:
 *
 * - steady: 60 % of capacity with a CPU-bound neighbour process on one core;
 * - ramp: 0.3× → 1.5× of capacity, one rate step per second (short mode: to 2.5×);
 * - step: 0.5× then 2×;
 * - halving: 0.6× throughout, and half the server's CPU taken away halfway
 *   (the server runs pinned to one core; a busy loop joins it there), as a
 *   CPU-bound neighbour or a slowed model would;
 *
 * then the fault scenarios of ./faults (a resource other than request
 * capacity degrades under a light load: storage, stream clients, …), each
 * starting its own server.
 *
 * A fresh server per run: no earlier overload has shaped its detectors'
 * baselines (the servers of a repeat start side by side, then wait idle for
 * their turn). Capacity is measured again for each run, just before it (for
 * steady, with the neighbour already running): on a shared machine it
 * drifts by tens of per cent within minutes, and a figure taken earlier
 * would make "0.5×" something else.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { ThresholdsInput } from '@infersignal/core';
import { runBench, type BenchConfig, type BenchResult } from '@infersignal/bench';
import { subjectOf } from '../examples/demo/src/precursors';
import type { FaultRunFigures, FaultScenario, JudgedAlert } from './faults/types';

type AlertRecord = BenchResult['alerts'][number];
type Stage = NonNullable<BenchConfig['stages']>[number];
type TimelinePoint = BenchResult['timeline'][number];
import { runHeapLeak, type HeapLeakFigures, type HeapLeakOptions } from './heap-leak';
import { startAlertServer, type AlertServer } from './server';

/** One 512-wide row tiled into the batch: the same request the demo sends. */
export const INFER_BODY = { input: [0.5, -0.25, 1, 0.125] };
/** Rows per /v1/infer batch: a few ms of model time, so the model (not HTTP) is the bottleneck. */
export const ROWS = 1024;
/**
 * The demo's thresholds: rates over 5 s (half-life 2 s) and waits over 10 s
 * instead of the production 10 s / 30 s, so a signal follows a scenario
 * that lasts seconds; a queue level holds 2 s before it counts (and sheds).
 * The event loop does not shed: the model runs on the main thread, so a
 * busy loop here is the model working, and admission is the queue's job.
 */
export const FIDELITY_THRESHOLDS: ThresholdsInput = {
  capacity: { rateHalfLifeSeconds: 2, rateWindowSeconds: 5, serviceWindowSeconds: 10, trendWindowSeconds: 10 },
  queue: { waitWindowSeconds: 10, forSeconds: 2 },
  eventLoop: { backpressure: false },
  stream: { minSamples: 20 },
};

/**
 * What a failed /v1/infer request went through: its route queue, the model
 * queue behind it and the model. An alert about one of these is about the
 * resource that failed.
 */
export const FAILING_SUBJECTS: readonly string[] = [
  'queue "infer"',
  'queue "onnx:matmul-chain"',
  'model "matmul-chain"',
];

export type ScenarioName = 'steady' | 'ramp' | 'step' | 'halving';
export const SCENARIOS: readonly ScenarioName[] = ['steady', 'ramp', 'step', 'halving'];

/** The halving scenario's load, as a multiple of the capacity measured before half of it is taken away. */
export const HALVING_LOAD = 0.6;
/** The halving scenario runs this much longer after the halving than before it: the queue fills at 0.2× of what is left. */
const HALVING_EXTRA_SECONDS = 15;

export interface FidelityOptions {
  /** One short run of each scenario (ramp 20 s to 2.5×, step 10 s, steady 10 s). */
  short?: boolean;
  /** Repeats of each scenario (default 5; 1 in short mode). */
  repeats?: number;
  /** Length of the steady scenario (default 600 s; 10 s in short mode). */
  steadySeconds?: number;
  /** Length of the ramp (default 90 s; 20 s in short mode). */
  rampSeconds?: number;
  /** Each half of the step (default 15 s; 5 s in short mode). */
  stepSeconds?: number;
  /** The scenarios to run, load or fault, by name (default: all; see `selectScenarios`). */
  scenarios?: readonly string[];
  /** The heap-leak grid (nodes, limits, rates, healthy length); long mode only. */
  heapLeak?: Omit<HeapLeakOptions, 'repeats' | 'log' | 'signal'>;
  /**
   * The fault scenarios, run after the load scenarios (`pnpm fidelity` passes
   * ./faults's FAULT_SCENARIOS; they build on this module, which therefore
   * cannot import them). Default: none.
   */
  faults?: readonly FaultScenario[];
  log?: (line: string) => void;
  signal?: AbortSignal;
}

export interface CapacityFigure {
  /**
   * The figure the scenarios are sized by (req/s): the lowest of the
   * closed-loop figure and, from the sustained phase, 1 / S and the rate that
   * would keep the server's main thread busy all the time.
   */
  rps: number;
  /** The median closed-loop throughput of the windows (req/s). */
  closedLoopRps: number;
  /**
   * Cross-check: concurrency (1) / the `infer` queue's service time as the
   * server's capacity signal estimates it (median over the windows).
   */
  serviceRps: number;
  /** Per window: throughput (req/s) and the server's service time (s). */
  windows: { throughputRps: number; serviceSeconds: number | null }[];
  /** (max − min) / median of the windows' throughputs. */
  spread: number;
  /** The fastest window's throughput (req/s): a neighbour's load only slows a window, never speeds one up. */
  peakRps: number;
  /**
   * The open-loop phase at the steady scenario's share of the closed-loop
   * figure, longer than the server's service window: its rate and the
   * server's S. Null where the phase was not run (short mode).
   */
  sustained: {
    rateRps: number;
    /** The highest of `serviceReads`. */
    serviceSeconds: number | null;
    /** The server's S (s), read every 5 s once its service window held only this phase. */
    serviceReads: number[];
    /** The server's utilization of `infer` at the highest read. */
    utilization: number | null;
    /**
     * Share of the last service window (10 s) the server's main thread was
     * busy: on a CPU or waiting in the run queue for one (Linux schedstat).
     * Null where /proc does not tell.
     */
    mainThreadBusy: number | null;
  } | null;
}

export interface RunFigures {
  scenario: ScenarioName;
  repeat: number;
  capacityRps: number;
  /** Offered rates the run went through (req/s), first and last. */
  fromRps: number;
  toRps: number;
  durationSeconds: number;
  requests: number;
  failed: number;
  /** Seconds from the run start; null when nothing failed. */
  failureAtSeconds: number | null;
  failureDetail: string | null;
  /** Every first rise per (signal, subject, level), in order. */
  alerts: JudgedAlert[];
  firstAlert: JudgedAlert | null;
  firstTruePrecursor: JudgedAlert | null;
  /** Seconds from the first true precursor to the first failure. */
  leadSeconds: number | null;
  falseAlerts: JudgedAlert[];
  /** Whether the run met its scenario's goal (see `goalMet`). */
  met: boolean;
  /**
   * The first rise of `queue_age` and of `queue_wait` (any level) about a
   * failing queue, seconds on the run's clock: which of the two announced
   * the overload first. Null where it never rose.
   */
  firstAgeSeconds: number | null;
  firstWaitSeconds: number | null;
  /** Halving: when the neighbour joined the server's core (s on the run's clock); null otherwise. */
  halvedAtSeconds: number | null;
  /** CPU-bound neighbour process during the run (steady only). */
  neighbour: string | null;
  /**
   * The load generator's worst lateness (ms after an arrival was due) and
   * the second it was in: arrivals a stalled generator owed go out at
   * once, a burst of the bench's making. 0 in closed loop; null with no timeline.
   */
  worstSendLag: { ms: number; second: number } | null;
  /**
   * The timeline from 15 s before to 5 s after the first failure (or the
   * first alert, where nothing failed): what led up to it. Empty when
   * neither came.
   */
  nearFirstTrouble: TimelinePoint[];
  /**
   * The second in which the server's main thread waited longest for a CPU
   * (runnable, not running); null where /proc does not tell.
   */
  worstThreadWait: ThreadSecond | null;
  /** The server's main thread, second by second, over the same span as `nearFirstTrouble`. */
  threadNearFirstTrouble: ThreadSecond[];
}

export interface FidelityResult {
  startedAt: string;
  short: boolean;
  repeats: number;
  settings: { steadySeconds: number; rampSeconds: number; rampTo: number; stepSeconds: number; rows: number };
  capacities: CapacityFigure[];
  runs: RunFigures[];
  /**
   * Long mode: overload runs in which nothing failed, each run again on a fresh server (not counted in
   * `runs`); absent in results written before.
   */
  notOverloaded?: RunFigures[];
  /** The fault scenarios' runs, in the order they ran. */
  faults: FaultRunFigures[];
  /** The heap-leak cells and healthy heap runs (long mode, where `heap-leak` was chosen). */
  heapLeak?: HeapLeakFigures;
  wallSeconds: number;
}

/** The heap-leak scenario's name (fidelity/heap-leak.ts): real processes, not the server. */
export const HEAP_LEAK = 'heap-leak';

/**
 * The load and fault scenarios to run, in suite order (default: all); an
 * unknown name is an error that lists the known ones.
 */
export function selectScenarios(
  names: readonly string[] | undefined,
  faults: readonly FaultScenario[],
): { load: ScenarioName[]; faults: FaultScenario[]; heapLeak: boolean } {
  const known: string[] = [...SCENARIOS, ...faults.map((f) => f.name), HEAP_LEAK];
  const unknown = (names ?? []).filter((n) => !known.includes(n));
  if (unknown.length > 0)
    throw new RangeError(`unknown fidelity scenario ${unknown.join(', ')}: choose from ${known.join(', ')}`);
  const chosen = (name: string): boolean => names === undefined || names.length === 0 || names.includes(name);
  return { load: SCENARIOS.filter(chosen), faults: faults.filter((f) => chosen(f.name)), heapLeak: chosen(HEAP_LEAK) };
}

/**
 * Alerts are timed when the server's alert event reaches the suite (a line
 * over a pipe), failures when the failed response does (over a socket).
 * Raised in the same evaluation, either may arrive first by a few
 * milliseconds: an alert that arrives within this much after the failure
 * counts as raised no later than it (`judgeAlerts`).
 */
export const ARRIVAL_TOLERANCE_MS = 50;
/** The bench also scrapes /metrics (the result's value lanes, and levels as a second source). */
const SCRAPE_INTERVAL_MS = 500;

/**
 * Where the ramp ends, as a multiple of the measured capacity. The short ramp
 * runs inside the test command beside other work, whose load can ease between
 * the capacity measurement and the ramp's top (the server then serves more
 * than it was measured at): it is sized from no less than the fastest
 * measuring window less a margin, and climbs to 2.5× so that the overload
 * still comes, and is asked for the ordering only.
 */
export const RAMP_TO = { long: 1.5, short: 2.5 } as const;

/**
 * Short mode: the overload scenarios are sized from at least the fastest capacity window divided by this.
 * A quiet measurement's windows lie within it of one another (spread 4–23 % in such runs), so it changes
 * nothing there; a measurement slowed by a neighbour gets a figure the overload still exceeds.
 */
const PEAK_MARGIN = 1.25;

/** Lead the ramp must give, in long mode; the short ramp (20 s) is asked for the ordering only. */
export const RAMP_LEAD_GOAL_SECONDS = 10;

/**
 * The goal of one run: ramp, a true precursor ≥ 10 s before the first
 * failure (short mode: no later than it); step and halving, a true
 * precursor strictly before the first failure (lead > 0; short mode: no
 * later than it, see ARRIVAL_TOLERANCE_MS); steady, no failure and no alert
 * of any signal. The short ramp crosses its capacity
 * and fills the queue within ~3 s, too fast for a predictive lead: on a
 * quiet machine its first precursor (occupancy WARN at 70 %) came 0.0–0.1 s
 * before the shed at 85 %, an ordering that the way alerts and responses
 * reach the suite can blur by the arrival tolerance.
 */
export function goalMet(run: Omit<RunFigures, 'met'>, short: boolean): boolean {
  switch (run.scenario) {
    case 'steady':
      return run.failureAtSeconds === null && run.alerts.length === 0;
    case 'ramp':
      return short ? run.firstTruePrecursor !== null : (run.leadSeconds ?? 0) >= RAMP_LEAD_GOAL_SECONDS;
    case 'step':
    case 'halving':
      // Long mode: strictly before it, not within the arrival tolerance: shedding must never be the first
      // thing anyone hears. The short step runs beside other tests and is asked for the ordering only.
      return short ? run.firstTruePrecursor !== null : (run.leadSeconds ?? 0) > 0;
  }
}

/**
 * Judges every alert of a bench run against its first failure (see
 * JudgedAlert). An alert seen within `resolutionMs` after the failure
 * counts as raised no later than it (its lead is then between −resolution
 * and 0): see ARRIVAL_TOLERANCE_MS. `failingSubjects` names the resources
 * the failure is about (default: those of /v1/infer); `null` in it makes a
 * process-wide alert (event loop, …) one of them, for a failure of the
 * whole process.
 */
export function judgeAlerts(
  records: readonly AlertRecord[],
  failureAtMs: number | null,
  resolutionMs = ARRIVAL_TOLERANCE_MS,
  factorAt: (atMs: number) => number | null = () => null,
  failingSubjects: readonly (string | null)[] = FAILING_SUBJECTS,
): JudgedAlert[] {
  const seen = new Set<string>();
  const out: JudgedAlert[] = [];
  for (const record of [...records].sort((a, b) => a.atMs - b.atMs)) {
    if (record.level !== 'warn' && record.level !== 'critical') continue;
    const { subject } = subjectOf(record.labels);
    const key = `${record.signal}|${subject}|${record.level}`;
    if (seen.has(key)) continue;
    seen.add(key);
    let verdict: JudgedAlert['verdict'];
    if (failureAtMs === null) verdict = 'false';
    else if (record.signal === 'queue_backpressure') verdict = 'shedding';
    else if (subject === null && !failingSubjects.includes(null)) verdict = 'process';
    else if (!failingSubjects.includes(subject)) verdict = 'false';
    else verdict = record.atMs <= failureAtMs + resolutionMs ? 'true' : 'late';
    out.push({
      signal: record.signal,
      level: record.level,
      subject,
      atSeconds: record.atMs / 1000,
      offeredFactor: factorAt(record.atMs),
      verdict,
      ...(record.message ? { message: record.message } : {}),
    });
  }
  return out;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = (sorted.length - 1) / 2;
  return (sorted[Math.floor(mid)] + sorted[Math.ceil(mid)]) / 2;
};

interface ReadyJson {
  level?: string;
  active?: unknown[];
  queues?: Record<string, { utilization?: number | null; serviceTimeSeconds?: number | null }>;
}

async function readiness(url: string): Promise<{ status: number; body: ReadyJson } | null> {
  try {
    const response = await fetch(`${url}/healthz/ready`, { signal: AbortSignal.timeout(1000) });
    return { status: response.status, body: (await response.json()) as ReadyJson };
  } catch {
    return null;
  }
}

/**
 * How long to wait for a calm server at most: a warning resolves only once its value stayed low for core's
 * `keepFiringSeconds` (10 s), after ρ itself has decayed (the rate's half-life is 2 s here).
 */
const CALM_TIMEOUT_MS = 20_000;

/**
 * Waits (bounded) until the server is ready, no signal is raised and every queue's utilization is below 0.5:
 * a calibration that drove one queue near its 0.8 bound, without raising it, leaves its ρ there for seconds.
 */
export async function waitForCalm(url: string, timeoutMs = CALM_TIMEOUT_MS): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const ready = await readiness(url);
    if (
      ready?.status === 200 &&
      ready.body.level === 'ok' &&
      (ready.body.active?.length ?? 0) === 0 &&
      Object.values(ready.body.queues ?? {}).every((queue) => (queue.utilization ?? 0) < 0.5)
    )
      return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

/** The server's service window, ms: S is first read once it holds only the sustained phase. */
const SERVICE_WINDOW_MS = FIDELITY_THRESHOLDS.capacity!.serviceWindowSeconds! * 1000;
/** The open-loop phase of a long-mode capacity measurement: S read at 10, 15 and 20 s. */
const SUSTAINED_PHASE_MS = 20_250;
/** Its load, as a share of the closed-loop figure: the steady scenario's. */
const SUSTAINED_SHARE = 0.6;

/** Closed-loop warm-up before the measuring windows (JIT, first allocations). */
const CAPACITY_WARM_UP_MS = 400;

/**
 * Capacity from service time and concurrency. First consecutive windows of
 * one closed-loop run: 3 users keep the `infer` queue (concurrency 1) busy,
 * so each window's throughput X is 1 / S for the whole request path (HTTP,
 * JSON and the model share one thread), and wait about 2 S for it: far
 * below any queue threshold, so the run sheds nothing. The closed-loop figure
 * is the median window: one window is only good to tens of per cent on a
 * shared machine. The server's own estimate of S (its capacity signal's), read
 * as each window ends, is kept beside it as a cross-check.
 *
 * A short closed loop overstates what the server sustains: under an open-loop
 * load S was 13.5 ms where the windows read 8.5–11 ms (ONNX Runtime runs
 * the model on the main thread, and under open-loop arrivals each run also
 * waits behind other requests' HTTP work), and S grows with the load. So,
 * where `sustainedMs` is given, an open-loop phase at the steady scenario's
 * share of the closed-loop figure follows, longer than the server's service
 * window, and the capacity is the lower of the closed-loop figure and 1 / the
 * highest S the server reports during it: the S its `capacity` alert divides
 * by, in the regime the scenarios run in. S covers the model run only; the
 * same thread does the HTTP work, so the rate that would keep the server's
 * main thread busy all the time (from /proc, where there is one) bounds the
 * capacity too. (A first version ran the phase at
 * half the figure for 12 s and read S once: steady then ran at 51 req/s where
 * that read gave 11.8 ms, and S reached 16 ms, utilization 0.82, by 386 s.)
 */
export async function measureCapacity(
  url: string,
  options: { windows: number; windowMs: number; sustainedMs?: number; pid?: number; signal?: AbortSignal },
): Promise<CapacityFigure> {
  await waitForCalm(url);
  const services: Promise<number | null>[] = [];
  const readService = (): void =>
    void services.push(readiness(url).then((ready) => ready?.body.queues?.infer?.serviceTimeSeconds ?? null));
  const timers = Array.from({ length: options.windows }, (_, i) =>
    setTimeout(readService, CAPACITY_WARM_UP_MS + (i + 1) * options.windowMs),
  );
  const result = await runBench({
    target: `${url}/v1/infer`,
    body: INFER_BODY,
    stages: [
      { name: 'warm-up', concurrency: 3, durationMs: CAPACITY_WARM_UP_MS },
      ...Array.from({ length: options.windows }, (_, i) => ({
        name: `window ${i + 1}`,
        concurrency: 3,
        durationMs: options.windowMs,
      })),
    ],
    timeoutMs: 5000,
    progress: false,
    signal: options.signal,
  }).finally(() => {
    for (const timer of timers) clearTimeout(timer);
  });
  const serviceAtEnd = await Promise.all(services);
  const windows: CapacityFigure['windows'] = result.stages.slice(1).map((stage, i) => ({
    throughputRps: stage.throughput,
    serviceSeconds: serviceAtEnd[i] ?? null,
  }));
  const throughputs = windows.map((w) => w.throughputRps).filter((t) => t > 0);
  const serviceTimes = windows.map((w) => w.serviceSeconds).filter((s): s is number => s !== null && s > 0);
  if (throughputs.length === 0) throw new Error('capacity: no window delivered a response');
  const closedLoopRps = median(throughputs);
  const sustained = options.sustainedMs
    ? await measureSustained(url, options.pid, SUSTAINED_SHARE * closedLoopRps, options.sustainedMs, options.signal)
    : null;
  const serviceBound = sustained?.serviceSeconds ? 1 / sustained.serviceSeconds : Number.POSITIVE_INFINITY;
  const threadBound = sustained?.mainThreadBusy
    ? sustained.rateRps / sustained.mainThreadBusy
    : Number.POSITIVE_INFINITY;
  return {
    rps: Math.min(closedLoopRps, serviceBound, threadBound),
    closedLoopRps,
    serviceRps: serviceTimes.length > 0 ? 1 / median(serviceTimes) : Number.NaN,
    windows,
    spread: (Math.max(...throughputs) - Math.min(...throughputs)) / closedLoopRps,
    peakRps: Math.max(...throughputs),
    sustained,
  };
}

/**
 * An open-loop phase at `rate`; the server's S and utilization of `infer`, read every 5 s once its
 * service window holds only this phase, the highest S kept: a 10 s window's S wanders by a quarter
 * around its mean over minutes (13.0–16.9 ms at 40 req/s), and one low read would size the steady
 * run near the WARN line.
 */
async function measureSustained(
  url: string,
  pid: number | undefined,
  rate: number,
  durationMs: number,
  signal: AbortSignal | undefined,
): Promise<NonNullable<CapacityFigure['sustained']>> {
  const rateRps = Math.max(1, Math.round(rate));
  const reads: ReturnType<typeof readiness>[] = [];
  // Every 5 s back from just before the load stops, down to a full service window in.
  const readAt: number[] = [];
  for (let at = durationMs - 250; at >= SERVICE_WINDOW_MS; at -= 5000) readAt.push(at);
  const timers = readAt.map((at) => setTimeout(() => reads.push(readiness(url)), at));
  // The main thread's busy time over the last service window, from its first read to the end.
  const busyFrom: { at: number; busyNs: number | null }[] = [];
  timers.push(
    setTimeout(
      () => busyFrom.push({ at: performance.now(), busyNs: threadBusyNs(pid) }),
      durationMs - SERVICE_WINDOW_MS,
    ),
  );
  await runBench({
    target: `${url}/v1/infer`,
    body: INFER_BODY,
    stages: [{ name: 'sustained', rate: rateRps, durationMs }],
    timeoutMs: 5000,
    progress: false,
    signal,
  }).finally(() => {
    for (const timer of timers) clearTimeout(timer);
  });
  const busyTo = threadBusyNs(pid);
  const from = busyFrom[0];
  const mainThreadBusy =
    from?.busyNs != null && busyTo !== null ? (busyTo - from.busyNs) / 1e6 / (performance.now() - from.at) : null;
  const serviceReads: number[] = [];
  let utilization: number | null = null;
  for (const read of await Promise.all(reads)) {
    const infer = read?.body.queues?.infer;
    const serviceSeconds = infer?.serviceTimeSeconds;
    if (serviceSeconds == null || serviceSeconds <= 0) continue;
    if (serviceReads.every((s) => serviceSeconds > s)) utilization = infer?.utilization ?? null;
    serviceReads.push(serviceSeconds);
  }
  return {
    rateRps,
    serviceSeconds: serviceReads.length > 0 ? Math.max(...serviceReads) : null,
    serviceReads,
    utilization,
    mainThreadBusy,
  };
}

/**
 * Nanoseconds a process's main thread has spent on a CPU and runnable in the run queue, waiting
 * for one (/proc/PID/task/PID/schedstat, Linux); null where that cannot be read.
 */
export function threadSchedNs(pid: number | undefined): { onCpuNs: number; waitNs: number } | null {
  if (!pid) return null;
  try {
    const [onCpuNs, waitNs] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    return Number.isFinite(onCpuNs) && Number.isFinite(waitNs) ? { onCpuNs, waitNs } : null;
  } catch {
    return null;
  }
}

/** Busy: on a CPU or waiting for one. */
function threadBusyNs(pid: number | undefined): number | null {
  const sched = threadSchedNs(pid);
  return sched ? sched.onCpuNs + sched.waitNs : null;
}

/** One second of the server's main thread: ms on a CPU, ms runnable but waiting for one. */
export interface ThreadSecond {
  second: number;
  onCpuMs: number;
  waitMs: number;
}

/**
 * Samples a process's main thread once a second until stopped (stop() may be called again): whether a
 * slow second was the process's own work or a CPU it did not get. Empty where /proc does not tell. The
 * first second is numbered `firstSecond` (the fleet suite counts from 1, its clock's first second).
 */
export function sampleThread(pid: number | undefined, firstSecond = 0): { stop(): ThreadSecond[] } {
  const seconds: ThreadSecond[] = [];
  let last = threadSchedNs(pid);
  let second = firstSecond;
  const timer = setInterval(() => {
    const now = threadSchedNs(pid);
    if (now && last)
      seconds.push({
        second,
        onCpuMs: Math.round((now.onCpuNs - last.onCpuNs) / 1e6),
        waitMs: Math.round((now.waitNs - last.waitNs) / 1e6),
      });
    second++;
    last = now;
  }, 1000);
  return {
    stop() {
      clearInterval(timer);
      return seconds;
    },
  };
}

/** Pins every thread of a process to core 0 (taskset -a); a no-op where taskset is missing. */
function pinToCore0(pid: number): void {
  if (!existsSync('/usr/bin/taskset') || !pid) return;
  spawnSync('/usr/bin/taskset', ['-a', '-p', '-c', '0', String(pid)], { stdio: 'ignore' });
}

/** A CPU-bound process on core 0 (pinned with taskset where it exists), until stopped. */
function startNeighbour(): { describe: string; stop(): Promise<void> } {
  const pinned = existsSync('/usr/bin/taskset');
  const args = ['-e', 'for (;;) {}'];
  const child: ChildProcess = pinned
    ? spawn('/usr/bin/taskset', ['-c', '0', process.execPath, ...args], { stdio: 'ignore' })
    : spawn(process.execPath, args, { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    describe: pinned ? 'busy loop pinned to core 0 (taskset -c 0)' : 'busy loop (no taskset: not pinned)',
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** A ramp from 0.3× to `to`× of `capacity` (req/s), one rate step per second. */
export function rampStages(capacity: number, seconds: number, to: number): Stage[] {
  const steps = Math.max(2, Math.round(seconds));
  return Array.from({ length: steps }, (_, i) => {
    const factor = 0.3 + (to - 0.3) * (i / (steps - 1));
    return {
      name: `${factor.toFixed(2)}x`,
      rate: Math.max(1, Math.round(factor * capacity)),
      durationMs: (seconds * 1000) / steps,
    };
  });
}

function scenarioStages(scenario: ScenarioName, capacity: number, settings: FidelityResult['settings']): Stage[] {
  switch (scenario) {
    case 'steady':
      return [
        { name: '0.6x', rate: Math.max(1, Math.round(0.6 * capacity)), durationMs: settings.steadySeconds * 1000 },
      ];
    case 'ramp':
      return rampStages(capacity, settings.rampSeconds, settings.rampTo);
    case 'step':
      return [
        { name: '0.5x', rate: Math.max(1, Math.round(0.5 * capacity)), durationMs: settings.stepSeconds * 1000 },
        { name: '2x', rate: Math.max(1, Math.round(2 * capacity)), durationMs: settings.stepSeconds * 1000 },
      ];
    case 'halving': {
      const rate = Math.max(1, Math.round(HALVING_LOAD * capacity));
      return [
        { name: `${HALVING_LOAD}x`, rate, durationMs: settings.stepSeconds * 1000 },
        {
          name: `${HALVING_LOAD}x, half the CPU`,
          rate,
          durationMs: (settings.stepSeconds + HALVING_EXTRA_SECONDS) * 1000,
        },
      ];
    }
  }
}

function figures(
  scenario: ScenarioName,
  repeat: number,
  capacityRps: number,
  stages: Stage[],
  result: BenchResult,
  thread: ThreadSecond[],
  neighbour: string | null,
  short: boolean,
  halvedAtSeconds: number | null = null,
): RunFigures {
  const failureAtMs = result.firstFailure?.atMs ?? null;
  const factorAt = (atMs: number): number | null => {
    let end = 0;
    for (const stage of stages) {
      end += stage.durationMs;
      // After the halving the same rate is twice the load on what is left.
      if (atMs < end)
        return ((stage.rate ?? 0) / capacityRps) * (halvedAtSeconds !== null && atMs >= halvedAtSeconds * 1000 ? 2 : 1);
    }
    return null;
  };
  const alerts = judgeAlerts(result.alerts, failureAtMs, ARRIVAL_TOLERANCE_MS, factorAt);
  const firstTruePrecursor = alerts.find((a) => a.verdict === 'true') ?? null;
  const troubleAtMs = failureAtMs ?? (alerts[0] ? alerts[0].atSeconds * 1000 : null);
  const run: Omit<RunFigures, 'met'> = {
    scenario,
    repeat,
    capacityRps,
    fromRps: stages[0]?.rate ?? 0,
    toRps: stages.at(-1)?.rate ?? 0,
    durationSeconds: result.durationMs / 1000,
    requests: result.total.responses,
    failed: result.total.responses - result.total.ok,
    failureAtSeconds: failureAtMs === null ? null : failureAtMs / 1000,
    failureDetail: result.firstFailure ? `${result.firstFailure.errorClass} ${result.firstFailure.detail}` : null,
    alerts,
    firstAlert: alerts[0] ?? null,
    firstTruePrecursor,
    leadSeconds: firstTruePrecursor && failureAtMs !== null ? failureAtMs / 1000 - firstTruePrecursor.atSeconds : null,
    falseAlerts: alerts.filter((a) => a.verdict === 'false'),
    firstAgeSeconds: firstRise(alerts, 'queue_age'),
    firstWaitSeconds: firstRise(alerts, 'queue_wait'),
    halvedAtSeconds,
    neighbour,
    worstSendLag: worstSendLag(result.timeline),
    nearFirstTrouble: around(result.timeline, troubleAtMs),
    worstThreadWait: thread.reduce<ThreadSecond | null>(
      (worst, s) => (!worst || s.waitMs > worst.waitMs ? s : worst),
      null,
    ),
    threadNearFirstTrouble: around(thread, troubleAtMs),
  };
  return { ...run, met: goalMet(run, short) };
}

/** The first rise (any level) of `signal` about a failing queue, s; null where none. */
function firstRise(alerts: readonly JudgedAlert[], signal: string): number | null {
  const first = alerts.find((a) => a.signal === signal && a.subject !== null && FAILING_SUBJECTS.includes(a.subject));
  return first ? first.atSeconds : null;
}

function worstSendLag(timeline: readonly TimelinePoint[]): RunFigures['worstSendLag'] {
  let worst: RunFigures['worstSendLag'] = null;
  for (const point of timeline)
    if (point.sendLagMs !== undefined && (!worst || point.sendLagMs > worst.ms))
      worst = { ms: point.sendLagMs, second: point.second };
  return worst;
}

/** Timeline points from 15 s before `atMs` to 5 s after it. */
function around<T extends { second: number }>(timeline: readonly T[], atMs: number | null): T[] {
  if (atMs === null) return [];
  const at = Math.floor(atMs / 1000);
  return timeline.filter((point) => point.second >= at - 15 && point.second <= at + 5);
}

/**
 * The fresh servers of one repeat, started side by side: start-up (tsx, the
 * runtime, the model, the warm-up runs) is seconds of CPU no scenario
 * measures, and a server that waits idle for its turn is as fresh as one
 * started just before it (no load has shaped its baselines). Each is stopped
 * after its run; `stopAll` stops what is left when a run fails.
 */
function startServers(count: number): { next(index: number): Promise<AlertServer>; stopAll(): Promise<void> } {
  const starts = Array.from({ length: count }, () =>
    startAlertServer({ thresholds: FIDELITY_THRESHOLDS, env: { ROWS: String(ROWS) }, readyTimeoutMs: 60_000 }),
  );
  // A failed start is reported by the run that awaits it.
  for (const start of starts) start.catch(() => {});
  return {
    next: (index) => starts[index],
    async stopAll() {
      await Promise.allSettled(starts.map((start) => start.then((server) => server.stop())));
    },
  };
}

async function withServer<T>(started: Promise<AlertServer>, use: (server: AlertServer) => Promise<T>): Promise<T> {
  const server = await started;
  try {
    // Start-up holds the loop for a moment, and a server waiting beside another's run may see its loop delayed;
    // let that settle.
    await waitForCalm(server.url);
    return await use(server);
  } finally {
    await server.stop();
  }
}

async function runScenario(
  server: AlertServer,
  scenario: ScenarioName,
  repeat: number,
  capacityRps: number,
  settings: FidelityResult['settings'],
  short: boolean,
  neighbour: string | null,
  signal?: AbortSignal,
): Promise<RunFigures> {
  const stages = scenarioStages(scenario, capacityRps, settings);
  // Stopped however the run ends (the `finally`); a second stop() only hands back the seconds.
  const thread = sampleThread(server.pid);
  // Halving: a busy loop joins the server on its core (pinned there before the capacity was measured) when the
  // first stage ends; the bench's clock starts with the call below, within milliseconds of this timer's.
  let halver: { describe: string; stop(): Promise<void> } | null = null;
  let halvedAtSeconds: number | null = null;
  const halvingStart = performance.now();
  const halving =
    scenario === 'halving'
      ? setTimeout(() => {
          halver = startNeighbour();
          halvedAtSeconds = (performance.now() - halvingStart) / 1000;
        }, stages[0]!.durationMs)
      : null;
  const result = await runBench({
    target: `${server.url}/v1/infer`,
    body: INFER_BODY,
    stages,
    timeoutMs: 2000,
    subscribeAlerts: (listener) => server.onAlert(listener),
    metricsUrl: server.metricsUrl,
    scrapeIntervalMs: SCRAPE_INTERVAL_MS,
    progress: false,
    signal,
  }).finally(async () => {
    thread.stop();
    if (halving) clearTimeout(halving);
    await (halver as { stop(): Promise<void> } | null)?.stop();
  });
  const described = halver ? (halver as { describe: string }).describe : neighbour;
  return figures(scenario, repeat, capacityRps, stages, result, thread.stop(), described, short, halvedAtSeconds);
}

/** Fresh attempts an overload run gets when nothing failed in it (see `notOverloaded`). */
const NOT_OVERLOADED_RETRIES = 2;

/** An overload scenario's run in which nothing failed: the load did not overload the server. */
function notOverloaded(run: RunFigures): boolean {
  return run.scenario !== 'steady' && run.failureAtSeconds === null;
}

export async function runFidelity(options: FidelityOptions = {}): Promise<FidelityResult> {
  const short = options.short ?? false;
  const repeats = options.repeats ?? (short ? 1 : 5);
  const settings = {
    steadySeconds: options.steadySeconds ?? (short ? 10 : 600),
    rampSeconds: options.rampSeconds ?? (short ? 20 : 90),
    rampTo: short ? RAMP_TO.short : RAMP_TO.long,
    stepSeconds: options.stepSeconds ?? (short ? 5 : 15),
    rows: ROWS,
  };
  const log = options.log ?? (() => {});
  const selected = selectScenarios(options.scenarios, options.faults ?? []);
  const started = performance.now();
  const result: FidelityResult = {
    startedAt: new Date().toISOString(),
    short,
    repeats,
    settings,
    capacities: [],
    runs: [],
    notOverloaded: [],
    faults: [],
    wallSeconds: 0,
  };
  const runOne = (server: Promise<AlertServer>, scenario: ScenarioName, repeat: number): Promise<RunFigures> => {
    // The steady run's neighbour runs through the capacity measurement too: "60 %" is of what the
    // server can do beside it (on 2 cores it takes half the machine), or the run is no longer healthy.
    const neighbour = scenario === 'steady' ? startNeighbour() : null;
    return withServer(server, async (server) => {
      // Halving: the server runs on core 0 alone from here, so the capacity is what one core gives it, and the
      // neighbour that joins it there later takes half of that.
      if (scenario === 'halving') pinToCore0(server.pid);
      const capacity = await measureCapacity(server.url, {
        windows: 5,
        windowMs: short ? 600 : 1500,
        sustainedMs: short ? 0 : SUSTAINED_PHASE_MS,
        pid: server.pid,
        signal: options.signal,
      });
      result.capacities.push(capacity);
      // Short mode runs beside the rest of the test command, whose load can slow most windows and then ease
      // before the overload: a calibration slowed that way can read a third of what the server sustains, and a
      // ramp sized from it never overloads the server. The overload scenarios are sized from no less than the
      // fastest window less PEAK_MARGIN, so they still overload; a quiet measurement (windows within it) is
      // unchanged. Steady keeps the conservative figure, under which it must stay healthy.
      // In long mode the overload scenarios are sized from no less than the closed-loop figure (what the server
      // does flat out) either: on a shared machine the conservative figure, bounded by the main thread's busy
      // share, read 22–27 req/s under others' load where the server then served 55/s, and a step to 2× of it or
      // a halving at 0.6× of it overloaded nothing.
      const sizedRps =
        scenario === 'steady'
          ? capacity.rps
          : Math.max(capacity.rps, capacity.peakRps / PEAK_MARGIN, short ? 0 : capacity.closedLoopRps);
      log(
        `${scenario} #${repeat}: capacity ${capacity.rps.toFixed(0)} req/s${sizedRps === capacity.rps ? '' : `, sized at ${sizedRps.toFixed(0)} from its closed loop or fastest window`}${neighbour ? ' (neighbour running)' : ''} (${describeCapacity(capacity)})`,
      );
      // The measurement drove utilization to 1 by design; start from a calm server.
      await waitForCalm(server.url);
      return runScenario(
        server,
        scenario,
        repeat,
        sizedRps,
        settings,
        short,
        neighbour?.describe ?? null,
        options.signal,
      );
    }).finally(() => neighbour?.stop());
  };
  // The leak cells first: dozens of processes whose collections would take CPU from the load scenarios' server.
  if (selected.heapLeak && !short && !options.signal?.aborted)
    result.heapLeak = await runHeapLeak({ ...options.heapLeak, repeats, log, signal: options.signal });
  for (let repeat = 1; repeat <= repeats && selected.load.length > 0 && !options.signal?.aborted; repeat++) {
    const servers = startServers(selected.load.length);
    try {
      for (const [index, scenario] of selected.load.entries()) {
        if (options.signal?.aborted) break;
        let run = await runOne(servers.next(index), scenario, repeat);
        log(`  ${describeRun(run)}`);
        // An overload scenario in which nothing failed did not overload the server (others' load eased between
        // the capacity measurement and the overload): it says nothing about a precursor's timing. In long mode
        // it is run again on a fresh server, at most NOT_OVERLOADED_RETRIES times, and listed in the doc.
        for (let retry = 1; !short && notOverloaded(run) && retry <= NOT_OVERLOADED_RETRIES; retry++) {
          if (options.signal?.aborted) break;
          (result.notOverloaded ??= []).push(run);
          log(`  ${scenario} #${repeat}: nothing failed, so the server was not overloaded; again on a fresh server`);
          const fresh = startAlertServer({
            thresholds: FIDELITY_THRESHOLDS,
            env: { ROWS: String(ROWS) },
            readyTimeoutMs: 60_000,
          });
          run = await runOne(fresh, scenario, repeat);
          log(`  ${describeRun(run)}`);
        }
        result.runs.push(run);
      }
    } finally {
      await servers.stopAll();
    }
  }
  // A fault run starts its own server, configured for its fault.
  for (let repeat = 1; repeat <= repeats && !options.signal?.aborted; repeat++) {
    for (const scenario of selected.faults) {
      if (options.signal?.aborted) break;
      const run = await scenario.run({ short, repeat, log, signal: options.signal });
      log(`  ${describeFaultRun(run)}`);
      result.faults.push(run);
    }
  }
  result.wallSeconds = (performance.now() - started) / 1000;
  return result;
}

/** How a capacity figure came about, for the progress line. */
function describeCapacity(capacity: CapacityFigure): string {
  const closed = `closed loop ${capacity.closedLoopRps.toFixed(0)}: median of ${capacity.windows.length} windows, spread ${(capacity.spread * 100).toFixed(0)} %, the server's 1 / S ${capacity.serviceRps.toFixed(0)}`;
  const sustained = capacity.sustained;
  if (!sustained) return closed;
  const service =
    sustained.serviceReads.length > 0
      ? `S ${sustained.serviceReads.map((s) => (s * 1000).toFixed(1)).join(' / ')} ms`
      : 'no S';
  const utilization =
    sustained.utilization != null ? `, utilization ${sustained.utilization.toFixed(2)} at the highest` : '';
  const busy =
    sustained.mainThreadBusy != null
      ? `, main thread busy ${sustained.mainThreadBusy.toFixed(2)} (${(sustained.rateRps / sustained.mainThreadBusy).toFixed(0)} req/s at 1)`
      : '';
  return `${closed}; open loop at ${sustained.rateRps} req/s: ${service}${utilization}${busy}`;
}

export function describeAlert(alert: JudgedAlert): string {
  const factor = alert.offeredFactor === null ? '' : ` (${alert.offeredFactor.toFixed(2)}×)`;
  return `${alert.signal} ${alert.level.toUpperCase()}${alert.subject ? ` on ${alert.subject}` : ''} at ${alert.atSeconds.toFixed(1)} s${factor}`;
}

/** A false alert with what the server said about it: the reader's first question is why it fired. */
function describeFalseAlert(alert: JudgedAlert): string {
  return alert.message ? `${describeAlert(alert)} ("${alert.message}")` : describeAlert(alert);
}

export function describeRun(run: RunFigures): string {
  const failure =
    run.failureAtSeconds === null
      ? 'nothing failed'
      : `first failure ${run.failureDetail} at ${run.failureAtSeconds.toFixed(1)} s (${run.failed} of ${run.requests} failed)`;
  const precursor = run.firstTruePrecursor
    ? `; first true precursor ${describeAlert(run.firstTruePrecursor)}, lead ${run.leadSeconds!.toFixed(1)} s`
    : run.failureAtSeconds === null
      ? ''
      : '; no true precursor';
  const falses = run.falseAlerts.length ? `; false: ${run.falseAlerts.map(describeFalseAlert).join(', ')}` : '';
  const lag = run.worstSendLag;
  const late = lag && lag.ms >= 100 ? `; the generator sent up to ${lag.ms.toFixed(0)} ms late at ${lag.second} s` : '';
  const wait = run.worstThreadWait;
  const starved =
    wait && wait.waitMs >= 300
      ? `; the server's main thread waited ${wait.waitMs} ms for a CPU in second ${wait.second} (${wait.onCpuMs} ms on one)`
      : '';
  return `${run.scenario} #${run.repeat} (${run.fromRps}→${run.toRps} req/s): ${failure}${precursor}${falses}${late}${starved} — ${run.met ? 'met' : 'NOT met'}`;
}

export function describeFaultRun(run: FaultRunFigures): string {
  const failure =
    run.failureAtSeconds === null
      ? 'nothing failed'
      : `first failure at ${run.failureAtSeconds.toFixed(1)} s: ${run.failureDetail}`;
  const precursor = run.firstTruePrecursor
    ? `; first true precursor ${describeAlert(run.firstTruePrecursor)}, lead ${run.leadSeconds!.toFixed(1)} s`
    : run.failureAtSeconds === null
      ? ''
      : '; no true precursor';
  const falses = run.falseAlerts.length ? `; false: ${run.falseAlerts.map(describeFalseAlert).join(', ')}` : '';
  return `${run.scenario} #${run.repeat} (${run.conditions}): ${failure}${precursor}${falses} — ${run.met ? 'met' : 'NOT met'}`;
}
