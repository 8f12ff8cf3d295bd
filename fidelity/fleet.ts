/**
 * The fleet fidelity suite: is the page as trustworthy as the in-process
 * alert? Each run starts two replicas of a real server, each a process of
 * its own (Fastify, the `@infersignal/fastify` plugin with a shedding queue,
 * `start()` with its defaults: test/support/fleet-replica.ts), measures each replica's
 * capacity, then a real Prometheus scrapes both every second with the
 * generated rules (`@infersignal/rules`) and a real Alertmanager with the
 * generated config posts to a webhook receiver here. `@infersignal/bench`
 * offers the load on loopback, split evenly between the two (a round-robin
 * balancer).
 *
 * - healthy-0.3, healthy-0.6: the fleet at 0.3× / 0.6× of its capacity: no page;
 * - step: idle, then 0.6× at once: no page;
 * - ramp: 0.3× → 2×, one rate step per second: the first page at least 10 s
 *   before the first failed request;
 * - replica-loss: 0.6×, then one replica's service time doubles (half its
 *   capacity gone): a page that names it within 5 s of its in-process WARN,
 *   and nothing names the healthy one.
 *
 * An overload run then ends its episode (the ramp falls back to 0.3×, the
 * slowed replica gets its speed back) and waits, bounded, for every page
 * to resolve: one FIRING and one RESOLVED per alert and episode, counted
 * from the webhook payloads.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runBench, type BenchConfig, type BenchResult } from '@infersignal/bench';
import { renderAlertmanagerConfig, renderRules } from '@infersignal/rules';
import { findBinary, freePort, startPrometheusAndAlertmanager, waitFor } from '../packages/rules/test/helpers/binaries';
import { stopper } from './server';
import {
  INFER_BODY,
  measureCapacity,
  RAMP_LEAD_GOAL_SECONDS,
  rampStages,
  sampleThread,
  waitForCalm,
  type CapacityFigure,
  type ThreadSecond,
} from './suite';

type Stage = NonNullable<BenchConfig['stages']>[number];

export type FleetScenarioName = 'healthy-0.3' | 'healthy-0.6' | 'step' | 'ramp' | 'replica-loss';
export const FLEET_SCENARIOS: readonly FleetScenarioName[] = [
  'healthy-0.3',
  'healthy-0.6',
  'step',
  'ramp',
  'replica-loss',
];

/** A replica's service time (ms): one request at a time, so about 40 req/s each. */
export const FLEET_SERVICE_MS = 25;
/** Queue capacity of a replica's `infer` queue (1.6 s of work at 25 ms). */
export const FLEET_QUEUE_CAPACITY = 64;
/** The page naming the slowed replica must come at most this long after its in-process WARN. */
export const LOSS_PAGE_GOAL_SECONDS = 5;
/** Scrape and rule evaluation interval of the suite's Prometheus. */
export const FLEET_SCRAPE_INTERVAL = '1s';
/** Alertmanager's group_wait and group_interval here (the generated defaults are 30 s and 5 m). */
export const FLEET_GROUP_WAIT = '1s';
/** The open-loop phase of a long-mode capacity measurement (S is read once, 10 s in). */
const SUSTAINED_MS = 10_250;
/** A request without an answer after this long has failed (as a client's deadline). */
const TIMEOUT_MS = 2000;

export interface FleetOptions {
  /** One short run of `scenarios` (default: replica-loss, which starts with a step from idle to 0.6×), for the test. */
  short?: boolean;
  /** Runs of each scenario (default 5; 1 in short mode). */
  repeats?: number;
  scenarios?: readonly FleetScenarioName[];
  log?: (line: string) => void;
  signal?: AbortSignal;
}

/** One webhook notification, as the suite read it. */
export interface FleetNotification {
  /** Seconds on the run's clock. */
  atSeconds: number;
  status: 'firing' | 'resolved';
  title: string;
  /** `on replica HOST:PORT, job, queue q` or `fleet-wide, job, queue q`. */
  subject: string;
  /** The replica in the title; null for a fleet-wide notification. */
  instance: string | null;
  alerts: { alertname: string; severity: string; resolved: boolean }[];
  text: string;
}

/** One alert (name and subject) over a run: how often it went FIRING and RESOLVED. */
export interface FleetAlertCount {
  alert: string;
  firing: number;
  resolved: number;
  /** Seconds on the run's clock of its first FIRING. */
  firstFiringAtSeconds: number;
}

export interface InProcessAlert {
  replica: 'a' | 'b';
  signal: string;
  level: string;
  atSeconds: number;
  message: string;
}

export interface FleetRunFigures {
  scenario: FleetScenarioName;
  repeat: number;
  /** Fleet capacity (req/s): the sum of the two replicas' measured figures. */
  capacityRps: number;
  replicaCapacityRps: [number, number];
  /** Offered fleet load (req/s) at the start and at the peak. */
  fromRps: number;
  toRps: number;
  replicas: { a: string; b: string };
  durationSeconds: number;
  requests: number;
  failed: number;
  failureAtSeconds: number | null;
  failureDetail: string | null;
  /** FIRING notifications that reached the webhook. */
  pages: number;
  firstPage: FleetNotification | null;
  /** Ramp: seconds from the first page to the first failed request. */
  leadSeconds: number | null;
  /** Replica loss: when the service time doubled, the slowed replica's first in-process raise, its first page. */
  loss: {
    atSeconds: number;
    warnAtSeconds: number | null;
    warn: string | null;
    pageAtSeconds: number | null;
    pageTitle: string | null;
    /** Page after the in-process WARN (s). */
    pageAfterWarnSeconds: number | null;
    /** Notifications naming the healthy replica (title or text). */
    healthyNamed: number;
    /** Fleet-wide notifications. */
    fleetWide: number;
    /** Pages before the loss (the step from idle to 0.6× that starts the scenario). */
    pagesBefore: number;
  } | null;
  /** The episode's end (load back to 0.3× / speed restored), and whether every page resolved within the bound. */
  recovery: { atSeconds: number; allResolvedAtSeconds: number | null } | null;
  alerts: FleetAlertCount[];
  /** The most FIRINGs of one alert in the run (0 without a page). */
  flaps: number;
  inProcess: InProcessAlert[];
  /**
   * Each replica's main thread, second by second on the run's clock (ms on a CPU, ms runnable but waiting
   * for one; Linux schedstat, empty elsewhere): whether a slow second was the machine's.
   */
  threads: { a: ThreadSecond[]; b: ThreadSecond[] };
  /** The worst second of waiting for a CPU of each replica. */
  worstWait: { a: ThreadSecond | null; b: ThreadSecond | null };
  notifications: FleetNotification[];
  capacities: CapacityFigure[];
  /** 503s each replica answered while its capacity was measured (none expected: 3 users, one served at a time). */
  measurementSheds: number[];
  met: boolean;
  /** Why not, where not met. */
  misses: string[];
}

export interface FleetResult {
  startedAt: string;
  short: boolean;
  repeats: number;
  settings: {
    serviceMs: number;
    queueCapacity: number;
    healthySeconds: number;
    stepIdleSeconds: number;
    rampSeconds: number;
    rampTo: number;
    lossBaselineSeconds: number;
    recoveryBoundSeconds: number;
  };
  runs: FleetRunFigures[];
  wallSeconds: number;
}

const SETTINGS = {
  long: {
    healthySeconds: 30,
    stepIdleSeconds: 10,
    rampSeconds: 90,
    lossBaselineSeconds: 20,
    lossPageBoundSeconds: 30,
    recoveryBoundSeconds: 60,
  },
  short: {
    healthySeconds: 12,
    stepIdleSeconds: 3,
    rampSeconds: 40,
    lossBaselineSeconds: 6,
    lossPageBoundSeconds: 15,
    // The test ends at the page: a page resolves tens of seconds after its episode.
    recoveryBoundSeconds: 0,
  },
} as const;

/** Grace after a healthy load ends for a page it caused to reach the webhook (scrape, evaluation, group_wait). */
export const PAGE_PIPELINE_MS = 4000;

const TITLE = /^\[(FIRING:\d+|RESOLVED)\] (.*?) (on replica (\S+?)(?: \(pod [^)]*\))?(?:, .*)?|fleet-wide(?:, .*)?)$/;
const ALERT_LINE = /^\*.*\* \((InferSignal\w+), (\w+)(, resolved)?\)$/;

/** A Slack-compatible body from the generated Alertmanager config → the notification (null if unreadable). */
export function parseNotification(body: unknown, atSeconds: number): FleetNotification | null {
  const attachment = (body as { attachments?: { title?: string; text?: string }[] })?.attachments?.[0];
  const title = attachment?.title ?? '';
  const match = TITLE.exec(title);
  if (!match) return null;
  const text = attachment?.text ?? '';
  const alerts = text
    .split('\n')
    .map((line) => ALERT_LINE.exec(line.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ alertname: m[1], severity: m[2], resolved: m[3] !== undefined }));
  return {
    atSeconds,
    status: match[1].startsWith('FIRING') ? 'firing' : 'resolved',
    title,
    subject: match[3],
    instance: match[4] ?? null,
    alerts,
    text,
  };
}

/**
 * FIRING and RESOLVED per alert (name and subject), in the order the
 * notifications came: an alert that appears unresolved while not firing
 * went FIRING; one that appears resolved while firing went RESOLVED. A group
 * notification repeats the alerts already firing; they do not count again.
 */
export function countAlerts(notifications: readonly FleetNotification[]): FleetAlertCount[] {
  const counts = new Map<string, FleetAlertCount & { state: 'firing' | 'resolved' }>();
  for (const n of notifications) {
    for (const a of n.alerts) {
      const key = `${a.alertname} ${n.subject}`;
      let count = counts.get(key);
      if (!count) {
        if (a.resolved) continue;
        count = { alert: key, firing: 0, resolved: 0, firstFiringAtSeconds: n.atSeconds, state: 'resolved' };
        counts.set(key, count);
      }
      if (!a.resolved && count.state !== 'firing') {
        count.firing++;
        count.state = 'firing';
      } else if (a.resolved && count.state === 'firing') {
        count.resolved++;
        count.state = 'resolved';
      }
    }
  }
  return [...counts.values()].map(({ state: _state, ...count }) => count);
}

const REPLICA_MAIN = fileURLToPath(new URL('../test/support/fleet-replica-process.ts', import.meta.url));
const ROOT_TSCONFIG = fileURLToPath(new URL('../tsconfig.json', import.meta.url));

interface ReplicaAlert {
  signal: string;
  level: string;
  at: number;
  message: string;
}

/** A replica process (test/support/fleet-replica-process.ts) as the suite drives it. */
export interface ReplicaChild {
  url: string;
  /** `host:port` of its Prometheus exporter: the `instance` label of its series. */
  metricsTarget: string;
  metricsUrl: string;
  pid: number | undefined;
  /** Its alert events, as they happen (`at`: its clock, the same as ours). */
  onAlert(listener: (event: ReplicaAlert) => void): () => void;
  setServiceTime(ms: number): void;
  /** 503s on /v1/infer since `markSheds()`, and when the first of them was reported. */
  sheds(): { count: number; firstAt: number | null };
  /** Starts counting sheds from now; returns the count until now. */
  markSheds(): number;
  stop(): Promise<void>;
}

function startReplicaChild(serviceTimeMs: number, readyTimeoutMs = 60_000): Promise<ReplicaChild> {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const child = fork(REPLICA_MAIN, [], {
    execArgv: ['--import', tsx],
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: ROOT_TSCONFIG,
      SERVICE_MS: String(serviceTimeMs),
      QUEUE_CAPACITY: String(FLEET_QUEUE_CAPACITY),
    },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = stopper(child, exited);
  const listeners = new Set<(event: ReplicaAlert) => void>();
  let shedCount = 0;
  let baseline = 0;
  let firstAt: number | null = null;
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      void stop().then(() => reject(new Error(`fleet replica: ${why}\n${stderr}`)));
    };
    const timer = setTimeout(() => fail('no ready message'), readyTimeoutMs);
    const early = (code: number | null, signal: string | null) =>
      fail(`exited during start-up (${signal ?? `code ${code}`})`);
    child.once('exit', early);
    child.on('message', (message: Record<string, unknown>) => {
      switch (message?.type) {
        case 'alert':
          for (const listener of listeners) listener(message as unknown as ReplicaAlert);
          break;
        case 'shed':
          shedCount = Number(message.count);
          if (firstAt === null && shedCount > baseline) firstAt = Date.now();
          break;
        case 'error':
          fail(String(message.message));
          break;
        case 'ready':
          clearTimeout(timer);
          child.off('exit', early);
          resolve({
            url: String(message.url),
            metricsTarget: String(message.metricsTarget),
            metricsUrl: String(message.metricsUrl),
            pid: child.pid,
            onAlert(listener) {
              listeners.add(listener);
              return () => listeners.delete(listener);
            },
            setServiceTime: (ms) => child.send({ type: 'service', ms }),
            sheds: () => ({ count: shedCount - baseline, firstAt }),
            markSheds() {
              const before = shedCount - baseline;
              baseline = shedCount;
              firstAt = null;
              return before;
            },
            stop,
          });
      }
    });
  });
}

/** The webhook receiver: every notification, on the run's clock once `zero` is set. */
function startReceiver(): Promise<{
  url: string;
  raw: { at: number; body: unknown }[];
  close(): Promise<void>;
}> {
  const raw: { at: number; body: unknown }[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const at = Date.now();
      try {
        raw.push({ at, body: JSON.parse(body) });
      } catch {
        raw.push({ at, body: { attachments: [{ text: body }] } });
      }
      res.end('ok');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as { port: number }).port}/slack`,
        raw,
        close: () => new Promise<void>((done) => server.close(() => done())),
      }),
    ),
  );
}

/** Load on both replicas at once, each its share; stops at the stages' end or at `stop()`. */
function loadBoth(
  replicas: readonly ReplicaChild[],
  stagesOf: (index: number) => Stage[],
  signal?: AbortSignal,
): { done: Promise<{ startedAt: number; results: BenchResult[] }>; stop(): void } {
  const abort = new AbortController();
  const onOuter = () => abort.abort();
  signal?.addEventListener('abort', onOuter, { once: true });
  const startedAt = Date.now();
  const done = Promise.all(
    replicas.map((replica, i) =>
      runBench({
        target: `${replica.url}/v1/infer`,
        body: INFER_BODY,
        stages: stagesOf(i),
        timeoutMs: TIMEOUT_MS,
        progress: false,
        signal: abort.signal,
      }),
    ),
  )
    .then((results) => ({ startedAt, results }))
    .finally(() => signal?.removeEventListener('abort', onOuter));
  return { done, stop: () => abort.abort() };
}

/** The first failed request of a load (ms since the epoch), with what it was. */
function firstFailure(load: { startedAt: number; results: BenchResult[] }): { at: number; detail: string } | null {
  let first: { at: number; detail: string } | null = null;
  for (const result of load.results) {
    const failure = result.firstFailure;
    if (!failure) continue;
    const at = load.startedAt + failure.atMs;
    if (!first || at < first.at) first = { at, detail: `${failure.errorClass} ${failure.detail}` };
  }
  return first;
}

async function until(
  check: () => boolean,
  timeoutMs: number,
  signal?: AbortSignal,
  intervalMs = 200,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !signal?.aborted) {
    if (check()) return true;
    await sleep(intervalMs);
  }
  return check();
}

async function runFleetScenario(
  scenario: FleetScenarioName,
  repeat: number,
  options: { short: boolean; log: (line: string) => void; signal?: AbortSignal },
): Promise<FleetRunFigures> {
  const prometheusBin = findBinary('prometheus');
  const alertmanagerBin = findBinary('prometheus-alertmanager', 'alertmanager');
  if (!prometheusBin || !alertmanagerBin)
    throw new Error('the fleet suite needs prometheus and prometheus-alertmanager (or alertmanager) on PATH');
  const settings = options.short ? SETTINGS.short : SETTINGS.long;
  const cleanup: (() => unknown)[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'infersignal-fleet-fidelity-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  try {
    const starts = [0, 1].map(() => startReplicaChild(FLEET_SERVICE_MS));
    // Both are stopped, whichever failed to start.
    cleanup.push(() => Promise.allSettled(starts.map((start) => start.then((replica) => replica.stop()))));
    const replicas = await Promise.all(starts);
    const [a, b] = replicas;

    // Capacity, measured on the run's own replicas as the single-process suite does: closed-loop windows, then
    // (long mode) an open-loop phase at 0.6× of that figure, whose S bounds it too: on a busy machine a replica's
    // timer runs late and its S grows, and 0.6× of a figure it no longer reaches is not healthy. (Not its main
    // thread's time: a timer, not the CPU, serves the requests, and a thread waiting for a CPU would count as busy.)
    const capacities = await Promise.all(
      replicas.map((replica) =>
        measureCapacity(replica.url, {
          windows: 5,
          // Short: windows too short for the capacity detector to raise, so no calm to wait for.
          windowMs: options.short ? 400 : 1500,
          sustainedMs: options.short ? 0 : SUSTAINED_MS,
          signal: options.signal,
        }),
      ),
    );
    const replicaCapacity: [number, number] = [capacities[0].rps, capacities[1].rps];
    const measurementSheds = replicas.map((replica) => replica.markSheds());
    const fleetCapacity = replicaCapacity[0] + replicaCapacity[1];
    // A balancer splits evenly: each replica gets half the fleet's load, sized by the fleet's capacity.
    const half = fleetCapacity / 2;
    // The measurement drove both to utilization 1: calm first, then Prometheus, which never sees it.
    await Promise.all(replicas.map((replica) => waitForCalm(replica.url)));

    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const [amPort, promPort] = [await freePort(), await freePort()];
    writeFileSync(join(dir, 'rules.yml'), renderRules());
    writeFileSync(
      join(dir, 'alertmanager.yml'),
      renderAlertmanagerConfig({
        webhookUrl: receiver.url,
        groupWait: FLEET_GROUP_WAIT,
        groupInterval: FLEET_GROUP_WAIT,
        repeatInterval: '1h',
      }),
    );
    // JSON is YAML.
    writeFileSync(
      join(dir, 'prometheus.yml'),
      JSON.stringify({
        global: { scrape_interval: FLEET_SCRAPE_INTERVAL, evaluation_interval: FLEET_SCRAPE_INTERVAL },
        rule_files: ['rules.yml'],
        alerting: { alertmanagers: [{ static_configs: [{ targets: [`127.0.0.1:${amPort}`] }] }] },
        scrape_configs: [
          {
            job_name: 'inference-server',
            static_configs: [{ targets: replicas.map((r) => r.metricsTarget) }],
          },
        ],
      }),
    );
    await startPrometheusAndAlertmanager(
      { prometheus: prometheusBin, alertmanager: alertmanagerBin },
      dir,
      { prometheus: promPort, alertmanager: amPort },
      cleanup,
    );
    await waitFor('the first scrape of both replicas', 15_000, async () => {
      const response = await fetch(
        `http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent('sum(up{job="inference-server"})')}`,
      );
      const up = (await response.json()) as { data: { result: { value: [number, string] }[] } };
      return Number(up.data.result[0]?.value[1]) === 2 ? true : undefined;
    });

    // The run's clock starts here.
    const zero = Date.now();
    const threads = replicas.map((replica) => sampleThread(replica.pid, 1));
    cleanup.push(() => {
      for (const thread of threads) thread.stop();
    });
    const seconds = (at: number) => (at - zero) / 1000;
    const inProcess: InProcessAlert[] = [];
    replicas.forEach((replica, i) => {
      cleanup.push(
        replica.onAlert((event) => {
          if (event.level === 'ok') return;
          inProcess.push({
            replica: i === 0 ? 'a' : 'b',
            signal: event.signal,
            level: event.level,
            atSeconds: seconds(event.at),
            message: event.message,
          });
        }),
      );
    });
    const notifications = (): FleetNotification[] =>
      receiver.raw.flatMap((n) => {
        const parsed = parseNotification(n.body, seconds(n.at));
        return parsed ? [parsed] : [];
      });
    const allResolved = (): boolean => countAlerts(notifications()).every((count) => count.resolved >= count.firing);

    let fromRps = 0;
    let toRps = 0;
    const loads: { startedAt: number; results: BenchResult[] }[] = [];
    let loss: FleetRunFigures['loss'] = null;
    let recovery: FleetRunFigures['recovery'] = null;
    const steady = (factor: number, ms: number) => [
      { name: `${factor}x`, rate: Math.max(1, Math.round(factor * half)), durationMs: ms },
    ];

    switch (scenario) {
      case 'healthy-0.3':
      case 'healthy-0.6':
      case 'step': {
        const factor = scenario === 'healthy-0.3' ? 0.3 : 0.6;
        if (scenario === 'step') await sleep(settings.stepIdleSeconds * 1000);
        fromRps = toRps = 2 * Math.max(1, Math.round(factor * half));
        loads.push(await loadBoth(replicas, () => steady(factor, settings.healthySeconds * 1000), options.signal).done);
        await sleep(PAGE_PIPELINE_MS);
        break;
      }
      case 'ramp': {
        const stages = rampStages(half, settings.rampSeconds, 2);
        fromRps = 2 * (stages[0].rate ?? 0);
        toRps = 2 * (stages.at(-1)!.rate ?? 0);
        const ramp = loadBoth(replicas, () => stages, options.signal);
        // The overload has shown what it shows once it has failed for a while: end the episode there.
        let ended = false;
        void ramp.done.finally(() => (ended = true));
        await until(
          () =>
            ended ||
            replicas.some((r) => {
              const first = r.sheds().firstAt;
              return first !== null && Date.now() - first > 8000;
            }),
          settings.rampSeconds * 1000 + 5000,
          options.signal,
        );
        ramp.stop();
        loads.push(await ramp.done);
        const back = loadBoth(replicas, () => steady(0.3, settings.recoveryBoundSeconds * 1000), options.signal);
        recovery = { atSeconds: seconds(Date.now()), allResolvedAtSeconds: null };
        await sleep(PAGE_PIPELINE_MS);
        if (await until(allResolved, settings.recoveryBoundSeconds * 1000 - PAGE_PIPELINE_MS, options.signal))
          recovery.allResolvedAtSeconds = seconds(Date.now());
        back.stop();
        loads.push(await back.done);
        break;
      }
      case 'replica-loss': {
        fromRps = toRps = 2 * Math.max(1, Math.round(0.6 * half));
        const bound = settings.lossBaselineSeconds + settings.lossPageBoundSeconds + settings.recoveryBoundSeconds;
        const load = loadBoth(replicas, () => steady(0.6, bound * 1000), options.signal);
        await sleep(settings.lossBaselineSeconds * 1000);
        let warnAt: number | null = null;
        let warn: string | null = null;
        const lossAt = Date.now();
        cleanup.push(
          a.onAlert((event) => {
            // Stamped by the replica: one raised before the loss but delivered after it is not the loss's.
            if (warnAt === null && event.level !== 'ok' && event.at >= lossAt) {
              warnAt = event.at;
              warn = `${event.signal} ${event.level.toUpperCase()}`;
            }
          }),
        );
        a.setServiceTime(FLEET_SERVICE_MS * 2);
        const namesA = (n: FleetNotification) =>
          n.status === 'firing' && n.instance === a.metricsTarget && n.atSeconds >= seconds(lossAt);
        await until(() => notifications().some(namesA), settings.lossPageBoundSeconds * 1000, options.signal);
        // A few more evaluations: does anything name the healthy replica, or say fleet-wide?
        await sleep(options.short ? 3000 : 5000);
        a.setServiceTime(FLEET_SERVICE_MS);
        if (settings.recoveryBoundSeconds > 0) {
          recovery = { atSeconds: seconds(Date.now()), allResolvedAtSeconds: null };
          await sleep(PAGE_PIPELINE_MS);
          if (await until(allResolved, settings.recoveryBoundSeconds * 1000 - PAGE_PIPELINE_MS, options.signal))
            recovery.allResolvedAtSeconds = seconds(Date.now());
        }
        load.stop();
        loads.push(await load.done);
        const page = notifications().find(namesA) ?? null;
        const all = notifications();
        const w = warnAt as number | null;
        loss = {
          atSeconds: seconds(lossAt),
          warnAtSeconds: w === null ? null : seconds(w),
          warn,
          pageAtSeconds: page?.atSeconds ?? null,
          pageTitle: page?.title ?? null,
          pageAfterWarnSeconds: page && w !== null ? page.atSeconds - seconds(w) : null,
          healthyNamed: all.filter((n) => n.instance === b.metricsTarget || n.text.includes(b.metricsTarget)).length,
          fleetWide: all.filter((n) => n.instance === null).length,
          pagesBefore: all.filter((n) => n.status === 'firing' && n.atSeconds < seconds(lossAt)).length,
        };
        break;
      }
    }

    const all = notifications();
    const failure = loads
      .map(firstFailure)
      .filter((f): f is { at: number; detail: string } => f !== null)
      .sort((x, y) => x.at - y.at)[0];
    const firstPage = all.find((n) => n.status === 'firing') ?? null;
    const alerts = countAlerts(all);
    const failureAtSeconds = failure ? seconds(failure.at) : null;
    const run: Omit<FleetRunFigures, 'met' | 'misses'> = {
      scenario,
      repeat,
      capacityRps: fleetCapacity,
      replicaCapacityRps: replicaCapacity,
      fromRps,
      toRps,
      replicas: { a: a.metricsTarget, b: b.metricsTarget },
      durationSeconds: seconds(Date.now()),
      requests: loads.reduce((sum, l) => sum + l.results.reduce((s, r) => s + r.total.responses, 0), 0),
      failed: loads.reduce((sum, l) => sum + l.results.reduce((s, r) => s + r.total.responses - r.total.ok, 0), 0),
      failureAtSeconds,
      failureDetail: failure?.detail ?? null,
      pages: all.filter((n) => n.status === 'firing').length,
      firstPage,
      leadSeconds:
        scenario === 'ramp' && firstPage && failureAtSeconds !== null ? failureAtSeconds - firstPage.atSeconds : null,
      loss,
      recovery,
      alerts,
      flaps: Math.max(0, ...alerts.map((count) => count.firing)),
      inProcess,
      threads: { a: threads[0].stop(), b: threads[1].stop() },
      worstWait: { a: worst(threads[0].stop()), b: worst(threads[1].stop()) },
      notifications: all,
      capacities,
      measurementSheds,
    };
    const misses = judge(run);
    return { ...run, met: misses.length === 0, misses };
  } finally {
    for (const fn of cleanup.reverse()) await fn();
  }
}

function worst(seconds: readonly ThreadSecond[]): ThreadSecond | null {
  return seconds.reduce<ThreadSecond | null>((w, s) => (!w || s.waitMs > w.waitMs ? s : w), null);
}

/** What a run missed of its scenario's goal (empty: met). */
function judge(run: Omit<FleetRunFigures, 'met' | 'misses'>): string[] {
  const misses: string[] = [];
  const episode = (): void => {
    // Without the episode's end (the short mode), only the FIRINGs so far can be judged.
    for (const count of run.alerts)
      if (count.firing !== 1 || (run.recovery !== null && count.resolved !== 1))
        misses.push(`${count.alert}: ${count.firing} FIRING, ${count.resolved} RESOLVED (one each per episode)`);
  };
  switch (run.scenario) {
    case 'healthy-0.3':
    case 'healthy-0.6':
    case 'step':
      if (run.pages > 0) misses.push(`${run.pages} page(s) on a healthy fleet, first: ${run.firstPage?.title}`);
      break;
    case 'ramp':
      if (run.failureAtSeconds === null) misses.push('the ramp to 2× never failed a request');
      else if (!run.firstPage) misses.push('no page before or after the first failure');
      else if (run.leadSeconds! < RAMP_LEAD_GOAL_SECONDS)
        misses.push(
          `first page ${run.leadSeconds!.toFixed(1)} s before the first failure (goal ≥ ${RAMP_LEAD_GOAL_SECONDS} s)`,
        );
      episode();
      break;
    case 'replica-loss': {
      const loss = run.loss!;
      if (loss.warnAtSeconds === null) misses.push('the slowed replica raised nothing in process');
      if (loss.pageAtSeconds === null) misses.push('no page named the slowed replica');
      else if (loss.pageAfterWarnSeconds !== null && loss.pageAfterWarnSeconds > LOSS_PAGE_GOAL_SECONDS)
        misses.push(
          `the page naming the slowed replica came ${loss.pageAfterWarnSeconds.toFixed(1)} s after its in-process WARN (goal ≤ ${LOSS_PAGE_GOAL_SECONDS} s)`,
        );
      if (loss.healthyNamed > 0) misses.push(`${loss.healthyNamed} notification(s) named the healthy replica`);
      if (loss.pagesBefore > 0) misses.push(`${loss.pagesBefore} page(s) at 0.6× before the loss`);
      episode();
      break;
    }
  }
  return misses;
}

export async function runFleet(options: FleetOptions = {}): Promise<FleetResult> {
  const short = options.short ?? false;
  const repeats = options.repeats ?? (short ? 1 : 5);
  const scenarios = options.scenarios ?? (short ? (['replica-loss'] as const) : FLEET_SCENARIOS);
  const log = options.log ?? (() => {});
  const settings = short ? SETTINGS.short : SETTINGS.long;
  const started = performance.now();
  const result: FleetResult = {
    startedAt: new Date().toISOString(),
    short,
    repeats,
    settings: {
      serviceMs: FLEET_SERVICE_MS,
      queueCapacity: FLEET_QUEUE_CAPACITY,
      healthySeconds: settings.healthySeconds,
      stepIdleSeconds: settings.stepIdleSeconds,
      rampSeconds: settings.rampSeconds,
      rampTo: 2,
      lossBaselineSeconds: settings.lossBaselineSeconds,
      recoveryBoundSeconds: settings.recoveryBoundSeconds,
    },
    runs: [],
    wallSeconds: 0,
  };
  for (let repeat = 1; repeat <= repeats && !options.signal?.aborted; repeat++) {
    for (const scenario of scenarios) {
      if (options.signal?.aborted) break;
      const run = await runFleetScenario(scenario, repeat, { short, log, signal: options.signal });
      log(`  ${describeFleetRun(run)}`);
      result.runs.push(run);
    }
  }
  result.wallSeconds = (performance.now() - started) / 1000;
  return result;
}

export function describeFleetRun(run: FleetRunFigures): string {
  const parts = [
    `${run.scenario} #${run.repeat}: capacity ${run.capacityRps.toFixed(0)} req/s (${run.replicaCapacityRps.map((c) => c.toFixed(0)).join(' + ')}), offered ${run.fromRps}→${run.toRps}`,
    run.failureAtSeconds === null
      ? 'nothing failed'
      : `first failure ${run.failureDetail} at ${run.failureAtSeconds.toFixed(1)} s (${run.failed}/${run.requests})`,
    `${run.pages} page(s)${run.firstPage ? `, first at ${run.firstPage.atSeconds.toFixed(1)} s: ${run.firstPage.title}` : ''}`,
  ];
  if (run.leadSeconds !== null) parts.push(`lead ${run.leadSeconds.toFixed(1)} s`);
  if (run.loss) {
    const l = run.loss;
    parts.push(
      `loss at ${l.atSeconds.toFixed(1)} s: in-process ${l.warn ?? 'nothing'}${l.warnAtSeconds === null ? '' : ` at ${l.warnAtSeconds.toFixed(1)} s`}, page naming it ${l.pageAtSeconds === null ? 'none' : `at ${l.pageAtSeconds.toFixed(1)} s (${l.pageAfterWarnSeconds?.toFixed(1)} s after the WARN)`}, healthy named ${l.healthyNamed}, fleet-wide ${l.fleetWide}`,
    );
  }
  if (run.alerts.length)
    parts.push(`per alert: ${run.alerts.map((c) => `${c.alert} ${c.firing}↑${c.resolved}↓`).join('; ')}`);
  const wait = (w: ThreadSecond | null) => (w ? `${w.waitMs} ms in second ${w.second}` : '—');
  parts.push(`worst wait for a CPU: a ${wait(run.worstWait.a)}, b ${wait(run.worstWait.b)}`);
  if (run.recovery)
    parts.push(
      `episode ended at ${run.recovery.atSeconds.toFixed(1)} s, ${run.recovery.allResolvedAtSeconds === null ? 'not all resolved within the bound' : `all resolved at ${run.recovery.allResolvedAtSeconds.toFixed(1)} s`}`,
    );
  return `${parts.join('; ')} — ${run.met ? 'met' : `NOT met (${run.misses.join('; ')})`}`;
}
