/**
 * Parent side of the server child (server-child.ts): fork one server per
 * (framework, variant), measure windows of load against it, read back the
 * server's own CPU time per window.
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ROOT } from './report';
import { CHILD_ENV } from './env';

export const FRAMEWORKS = ['fastify', 'express'] as const;
export type Framework = (typeof FRAMEWORKS)[number];
export const VARIANTS = [
  'bare',
  'bare-again',
  'hook',
  'hook-empty',
  'otel-calls',
  'infersignal-api',
  'infersignal-producer',
  'infersignal-outliers',
  'infersignal-outliers-context',
  'otel-span',
  'infersignal-traces',
  'otel-http',
] as const;
export type Variant = (typeof VARIANTS)[number];

export const VARIANT_LABEL: Record<Variant, string> = {
  bare: 'bare',
  'bare-again': 'bare again (a second bare process: the A/A check)',
  hook: 'hand-written hook (1 histogram + 1 counter, OTel SDK)',
  'hook-empty':
    'the same hook recording nothing (its clock read and the hook itself: the floor of any per-request hook)',
  'otel-calls': "InferSignal API export's 3 histogram records, by hand (OTel SDK)",
  'infersignal-api': 'InferSignal, metrics, API export',
  'infersignal-producer': 'InferSignal, metrics, producer export',
  'otel-span': 'one OTel SDK span per request, by hand (no metrics)',
  'infersignal-outliers': "InferSignal, metrics + outlier traces (`traces: true`, the default 'outliers')",
  'infersignal-outliers-context':
    'InferSignal, metrics + outlier traces + an AsyncLocalStorage context manager (`contextManager: true`)',
  'infersignal-traces': "InferSignal, metrics + a span per request (`traces: 'all'`)",
  'otel-http': '@opentelemetry/instrumentation-http (metrics + traces)',
};

/**
 * The server suite's goals: `a`'s CPU per request over `b`'s (or over
 * bare) at most `limit`, per framework, judged on its rounds.
 */
export type ServerGoal = readonly [framework: Framework, a: Variant, b: Variant | 'bare', limit: number, what: string];
export const SERVER_GOALS: readonly ServerGoal[] = FRAMEWORKS.flatMap((f): ServerGoal[] => [
  [f, 'infersignal-api', 'otel-calls', 1.1, 'API export'],
  ...(f === 'fastify'
    ? ([
        [f, 'infersignal-producer', 'bare', 1.1, 'producer export'],
        [f, 'infersignal-outliers', 'bare', 1.15, 'outlier traces'],
        [f, 'infersignal-outliers', 'infersignal-producer', 1.05, 'outlier traces'],
      ] as const)
    : ([
        [f, 'infersignal-producer', 'hook', 1, 'producer export'],
        [f, 'infersignal-outliers', 'hook', 1, 'outlier traces'],
      ] as const)),
]);

export type ChildMessage =
  | { type: 'ready'; port: number; metricsUrl: string | null }
  | ({ type: 'window' } & ServerWindow)
  | { type: 'error'; message: string };

/** A directory: each server child writes a CPU profile of every measured window there (server-child.ts). */
export const CPU_PROFILE_ENV = 'BENCH_CPU_PROFILE';

/** Tells a server child to load `@infersignal/*` from another checkout (see startServer). */
export const PACKAGES_FROM_ENV = 'INFERSIGNAL_BENCH_PACKAGES_FROM';

/** The server child every tool forks (lib/server-child.ts). */
const SERVER_CHILD = fileURLToPath(new URL('./server-child.ts', import.meta.url));

interface ServerWindow {
  /** Server CPU (user + system) over the window, µs. */
  cpuUs: number;
  /** Of it, in the kernel (system time: socket reads and writes, loopback TCP, wake-ups of the load generator), µs. */
  systemUs: number;
  /** CPU of the main (event-loop) thread alone, µs; the rest is GC helpers, JIT compilers, libuv's pool. */
  mainUs: number;
  /** Time the main thread was runnable but off the CPU (another process had it), µs. */
  waitUs: number;
  /** Time V8 reported in GC pauses over the window (PerformanceObserver 'gc'), µs. */
  gcUs: number;
  /** GC pauses over the window. */
  gcs: number;
  /** Of them, the old generation's: mark-compact pauses and incremental marking steps. */
  majorGcs: number;
  /** The young generation's new space as the window began, bytes (V8 sizes it per process, as it goes). */
  newSpaceBytes: number;
  /** The window's wall time, µs. */
  wallUs: number;
  /** Requests the handler served in the window. */
  requests: number;
  /** Spans exported in the window (traces variants). */
  spans: number;
}

export interface ServerHandle {
  readonly framework: Framework;
  readonly variant: Variant;
  /** The checkout whose built `@infersignal/*` packages this server loads (undefined: this one). */
  readonly packagesFrom: string | undefined;
  readonly url: string;
  readonly metricsUrl: string | null;
  /**
   * Runs `load` while the server measures its own CPU; Prometheus is scraped
   * as it starts and every second meanwhile unless `scrape: false`.
   */
  window<T>(
    load: () => Promise<T>,
    options?: { scrape?: boolean },
  ): Promise<{ result: T; server: ServerWindow; scrapes: number }>;
  /** Asks the child to exit (killed after 2 s); resolves once it has. */
  close(): Promise<void>;
}

/** The child's next message of `type`; rejects on its error message or its exit. */
function nextMessage(child: ChildProcess, type: ChildMessage['type']): Promise<ChildMessage> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: ChildMessage) => {
      if (message.type === 'error') {
        cleanup();
        reject(new Error(`server child: ${message.message}`));
      } else if (message.type === type) {
        cleanup();
        resolve(message);
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`server child exited (${code}) before '${type}'`));
    };
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

/**
 * Scrapes the endpoint as the window starts and every second after, as
 * Prometheus would: with half-second windows that is one scrape per window,
 * 30× more often than a 15 s scrape interval.
 */
function scraper(url: string | null): { stop(): Promise<number> } {
  if (!url) return { stop: async () => 0 };
  let scrapes = 0;
  let inflight: Promise<void> = Promise.resolve();
  const scrape = () => {
    inflight = fetch(url).then(
      async (res) => {
        await res.text();
        if (res.ok) scrapes++;
      },
      () => {},
    );
  };
  scrape();
  const timer = setInterval(scrape, 1000);
  return {
    stop: async () => {
      clearInterval(timer);
      await inflight;
      return scrapes;
    },
  };
}

/** What `pinCpus()` did, once called: the docs line, and the CPUs servers start on (null: not pinned). */
let pinning: { line: string; serverCpus: string | null } | undefined;

/**
 * Gives the load generator (this process, every thread) CPU 0 and the
 * servers the rest, where Linux and `taskset` allow, so the client's bursts
 * never run on a server's CPU, and a server, like in production, has one
 * core for its event loop and GC threads. It narrowed the window-to-window
 * noise only a little (bare's IQR ±13 % unpinned, ±10 % pinned, on a busy
 * host): the host is most of it. Returns a line for the docs, saying which
 * it was.
 */
export function pinCpus(): string {
  pinning ??= pin();
  return pinning.line;
}

function pin(): { line: string; serverCpus: string | null } {
  const cpus = availableParallelism();
  if (process.platform !== 'linux' || cpus < 2)
    return { line: 'not pinned (needs Linux and 2 CPUs or more)', serverCpus: null };
  try {
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  } catch {
    return { line: 'not pinned (`taskset` failed or is missing)', serverCpus: null };
  }
  const serverCpus = cpus === 2 ? '1' : `1-${cpus - 1}`;
  return { line: `load generator pinned to CPU 0, servers to CPU ${serverCpus} (\`taskset\`)`, serverCpus };
}

/**
 * The young generation every server runs with: fixed at 16 MiB semi-spaces.
 * V8 shrinks it at a collection that finds the process allocating slowly
 * (under 1 KB/ms), and here each server waits ~7 s between half-second
 * windows while the others take their turn: a server whose first
 * collection after the wait fell early started its windows with a 2–4 MiB
 * new space and twice to six times the scavenges of one that did not
 * (Node 24), luck for the life of the process that moved its
 * ratio by up to 0.2×. A server under steady load is not shrunk.
 */
const YOUNG_GENERATION_FLAGS = ['--min-semi-space-size=16', '--max-semi-space-size=16'];

/**
 * Node/V8 flags for every server process: YOUNG_GENERATION_FLAGS, or
 * BENCH_SERVER_FLAGS (space separated; empty for V8's defaults) to try a
 * runtime setting on all variants alike.
 */
const SERVER_V8_FLAGS: readonly string[] =
  process.env.BENCH_SERVER_FLAGS === undefined
    ? YOUNG_GENERATION_FLAGS
    : process.env.BENCH_SERVER_FLAGS.split(/\s+/).filter(Boolean);

/**
 * `packagesFrom`: another checkout (built, dependencies installed) whose
 * `@infersignal/*` packages the server loads instead of this tree's, for an
 * A/B of two builds in one run; the server code, the framework and the
 * OpenTelemetry SDK stay this tree's.
 */
export async function startServer(
  framework: Framework,
  variant: Variant,
  packagesFrom?: string,
): Promise<ServerHandle> {
  const node = [...SERVER_V8_FLAGS, '--import', 'tsx'];
  // fork() runs `execPath ...execArgv module`: taskset execs node in place, so the IPC channel is node's.
  const serverCpus = pinning?.serverCpus ?? null;
  const launch =
    serverCpus === null
      ? { execArgv: node }
      : { execPath: 'taskset', execArgv: ['-c', serverCpus, process.execPath, ...node] };
  const child = fork(SERVER_CHILD, [framework, variant], {
    cwd: ROOT,
    env: packagesFrom === undefined ? CHILD_ENV : { ...CHILD_ENV, [PACKAGES_FROM_ENV]: packagesFrom },
    ...launch,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = (await nextMessage(child, 'ready')) as Extract<ChildMessage, { type: 'ready' }>;
  return {
    framework,
    variant,
    packagesFrom,
    url: `http://127.0.0.1:${ready.port}/v1/infer`,
    metricsUrl: ready.metricsUrl,
    async window(load, options) {
      const begun = nextMessage(child, 'window');
      child.send({ type: 'begin' });
      const scrape = scraper(options?.scrape === false ? null : ready.metricsUrl);
      const result = await load();
      const scrapes = await scrape.stop();
      child.send({ type: 'end' });
      const server = (await begun) as Extract<ChildMessage, { type: 'window' }>;
      const { type: _, ...measured } = server;
      return { result, server: measured, scrapes };
    },
    close() {
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      if (child.connected) child.send({ type: 'exit' });
      const kill = setTimeout(() => child.kill(), 2000);
      kill.unref();
      return exited.finally(() => clearTimeout(kill));
    },
  };
}
