/**
 * Starts fault-server.ts as a child process (tsx, the root tsconfig's
 * source aliases) and hands its alert lines to listeners as they arrive,
 * as ./server does for the example server. The child may die of the fault
 * (a heap out of memory): `exit` then says how, and `output` keeps the
 * last lines it wrote.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runBench, type AlertLike, type AlertRecord, type BenchResult } from '@infersignal/bench';
import type { ThresholdsInput } from '@infersignal/core';
import type { FaultCommand } from './fault-server';
import type { FaultRunFigures, FaultScenarioName } from './faults/types';
import { parseAlertLine, stopper } from './server';
import { ARRIVAL_TOLERANCE_MS, judgeAlerts, type JudgedAlert } from './suite';

const ENTRY = fileURLToPath(new URL('./fault-server.ts', import.meta.url));
const ROOT_TSCONFIG = fileURLToPath(new URL('../tsconfig.json', import.meta.url));

export interface FaultServer {
  url: string;
  metricsUrl: string;
  pid: number;
  onAlert(listener: (event: AlertLike) => void): () => void;
  /** Starts the fault (`POST /fault`). */
  startFault(command: FaultCommand): Promise<void>;
  /** The server's own view (`GET /state`), or null when it does not answer within a second. */
  state(): Promise<Record<string, unknown> | null>;
  /** How the child ended, once it has (code or signal); null while it runs. */
  exit(): string | null;
  /** The last lines the child wrote (stderr included), alert lines excepted. */
  output(): string[];
  stop(): Promise<void>;
}

export function startFaultServer(options: {
  fault: 'device-memory' | 'gc-pressure';
  thresholds: ThresholdsInput;
  env?: Record<string, string>;
  nodeArgs?: string[];
  readyTimeoutMs?: number;
}): Promise<FaultServer> {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', tsx, ENTRY], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: ROOT_TSCONFIG,
      FAULT: options.fault,
      THRESHOLDS: JSON.stringify(options.thresholds),
      ...options.env,
    },
  });
  const listeners = new Set<(event: AlertLike) => void>();
  const tail: string[] = [];
  const keep = (line: string): void => {
    tail.push(line);
    if (tail.length > 40) tail.shift();
  };
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const event = parseAlertLine(line);
      if (event) for (const listener of listeners) listener(event);
      else if (line) keep(line);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => keep(chunk.toString('utf8').trimEnd()));
  let exitText: string | null = null;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exitText = signal ? `killed by ${signal}` : `exit code ${code}`;
      resolve();
    }),
  );
  const stop = stopper(child, exited);
  return new Promise((resolve, reject) => {
    let ready = false;
    const fail = (message: string): void => {
      clearTimeout(timer);
      void stop().then(() => reject(new Error(`${message}\n${tail.join('\n')}`)));
    };
    const timer = setTimeout(() => fail('the fault server did not report ready'), options.readyTimeoutMs ?? 60_000);
    child.once('exit', (code, signal) => {
      if (!ready) fail(`the fault server exited during start-up (${signal ?? `code ${code}`})`);
    });
    child.on('message', (message: { type?: string; url?: string; metricsUrl?: string; pid?: number }) => {
      if (message?.type !== 'ready' || !message.url || !message.metricsUrl) return;
      clearTimeout(timer);
      ready = true;
      const url = message.url;
      resolve({
        url,
        metricsUrl: message.metricsUrl,
        pid: message.pid ?? child.pid ?? 0,
        onAlert(listener) {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
        async startFault(command) {
          const response = await fetch(`${url}/fault`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(command),
          });
          if (!response.ok) throw new Error(`POST /fault answered ${response.status}`);
        },
        async state() {
          try {
            const response = await fetch(`${url}/state`, { signal: AbortSignal.timeout(1000) });
            return (await response.json()) as Record<string, unknown>;
          } catch {
            return null;
          }
        },
        exit: () => exitText,
        output: () => [...tail],
        stop,
      });
    });
  });
}

/**
 * A few requests (first compilations, first allocations), then a wait
 * (bounded) until the server has no signal above ok for 2 s: start-up
 * holds the loop for a moment, and that is no part of the healthy phase.
 */
async function settle(server: FaultServer): Promise<void> {
  for (let i = 0; i < 10; i++) await fetch(`${server.url}/v1/infer`, { method: 'POST', body: '{}' }).catch(() => {});
  const deadline = performance.now() + 15_000;
  let calmSince = performance.now();
  while (performance.now() < deadline) {
    const state = await server.state();
    const active = (state?.snapshot as { active?: unknown[] } | undefined)?.active;
    if (!active || active.length > 0) calmSince = performance.now();
    else if (performance.now() - calmSince >= 2000) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export interface FaultBenchRun {
  result: BenchResult;
  /**
   * When the fault was started (ms), on the bench's clock: that clock starts
   * once its HTTP agent is made, a millisecond or so after this one.
   */
  faultAtMs: number;
}

/**
 * A light, steady open-loop load on `POST /v1/infer`: `healthySeconds` as
 * the server comes, then the fault, until `faultSeconds` have passed or
 * the server has failed a request and `afterFailureMs` more have passed
 * (alerts raised just after the failure are late, and recorded as such).
 */
export async function runFaultBench(
  server: FaultServer,
  options: {
    rate: number;
    healthySeconds: number;
    faultSeconds: number;
    fault: FaultCommand;
    timeoutMs: number;
    /** Whether the server has failed a request (polled every 250 ms): the run then ends `afterFailureMs` later. */
    failed: (server: FaultServer) => Promise<boolean>;
    afterFailureMs?: number;
    signal?: AbortSignal;
  },
): Promise<FaultBenchRun> {
  await settle(server);
  const stopper = new AbortController();
  const onAbort = (): void => stopper.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const started = performance.now();
  let faultAtMs = Number.NaN;
  const faultTimer = setTimeout(() => {
    faultAtMs = performance.now() - started;
    server.startFault(options.fault).catch(() => {});
  }, options.healthySeconds * 1000);
  // The bench tells of its first failure only when it ends: the server's side of it is watched here.
  let failedAt: number | null = null;
  let polling = false;
  const watch = setInterval(() => {
    if (failedAt !== null) {
      if (performance.now() - failedAt >= (options.afterFailureMs ?? 1500)) stopper.abort();
      return;
    }
    if (polling) return;
    polling = true;
    void options
      .failed(server)
      .then((failed) => {
        if (failed) failedAt ??= performance.now();
      })
      .finally(() => {
        polling = false;
      });
  }, 250);
  try {
    const result = await runBench({
      target: `${server.url}/v1/infer`,
      body: {},
      stages: [
        { name: 'healthy', rate: options.rate, durationMs: options.healthySeconds * 1000 },
        { name: 'fault', rate: options.rate, durationMs: options.faultSeconds * 1000 },
      ],
      timeoutMs: options.timeoutMs,
      subscribeAlerts: (listener) => server.onAlert(listener),
      metricsUrl: server.metricsUrl,
      scrapeIntervalMs: 500,
      progress: false,
      signal: stopper.signal,
    });
    return { result, faultAtMs };
  } finally {
    clearTimeout(faultTimer);
    clearInterval(watch);
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * A fault run's figures from its bench result. Alerts are judged with
 * `judgeAlerts` against the first failure and `failingSubjects`; one about
 * a failing subject raised before the fault started is false (the healthy
 * phase must stay quiet about it), and a process-wide one is, as in the load
 * scenarios, neither true nor false unless the process is what fails.
 * The goal: a true precursor of one of `expectedSignals`, and no false alert.
 */
export function faultFigures(
  run: FaultBenchRun,
  details: {
    scenario: FaultScenarioName;
    repeat: number;
    conditions: string;
    failingSubjects: (string | null)[];
    expectedSignals: readonly string[];
    /**
     * The scenario's own failure, when it is not simply the bench's first
     * failed request (ms on the bench's clock; null: nothing failed).
     */
    failure?: { atMs: number | null; detail: string | null };
  },
): FaultRunFigures {
  const { result, faultAtMs } = run;
  const failureAtMs = details.failure ? details.failure.atMs : (result.firstFailure?.atMs ?? null);
  // The two phases are judged apart, each with its own first rise per (signal, subject, level): a rise in the
  // healthy phase (false, or process-wide) must not hide the same alert raised again by the fault.
  const judge = (records: AlertRecord[]): JudgedAlert[] =>
    judgeAlerts(records, failureAtMs, ARRIVAL_TOLERANCE_MS, () => null, details.failingSubjects);
  const healthy = judge(result.alerts.filter((r) => r.atMs < faultAtMs)).map((alert) =>
    // An alert about a failing subject while nothing is wrong yet is false, not an early precursor.
    alert.verdict === 'process' ? alert : { ...alert, verdict: 'false' as const },
  );
  const alerts = [...healthy, ...judge(result.alerts.filter((r) => r.atMs >= faultAtMs))];
  const firstTruePrecursor = alerts.find((a) => a.verdict === 'true') ?? null;
  const falseAlerts = alerts.filter((a) => a.verdict === 'false');
  const leadSeconds =
    firstTruePrecursor && failureAtMs !== null ? failureAtMs / 1000 - firstTruePrecursor.atSeconds : null;
  return {
    scenario: details.scenario,
    repeat: details.repeat,
    conditions: details.conditions,
    failingSubjects: details.failingSubjects,
    durationSeconds: result.durationMs / 1000,
    failureAtSeconds: failureAtMs === null ? null : failureAtMs / 1000,
    failureDetail: details.failure
      ? details.failure.detail
      : result.firstFailure
        ? `${result.firstFailure.errorClass} ${result.firstFailure.detail}`
        : null,
    alerts,
    firstTruePrecursor,
    leadSeconds,
    falseAlerts,
    met:
      alerts.some((a) => a.verdict === 'true' && details.expectedSignals.includes(a.signal)) &&
      falseAlerts.length === 0,
  };
}

/** The message of the alert the first true precursor was (what the server said about it), or null. */
export function precursorMessage(run: FaultBenchRun, figures: FaultRunFigures): string | null {
  const first = figures.firstTruePrecursor;
  if (!first) return null;
  const record = run.result.alerts.find(
    (r) =>
      r.signal === first.signal &&
      r.level === first.level &&
      r.message &&
      Math.abs(r.atMs / 1000 - first.atSeconds) < 1,
  );
  return record?.message ?? null;
}
