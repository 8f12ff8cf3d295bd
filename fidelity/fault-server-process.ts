/**
 * Starts fault-server.ts as a child process, as ./server does the example
 * server, and drives it: the fault (`POST /fault`), its own view
 * (`GET /state`), a light load until it fails. The child may die of the
 * fault (a heap out of memory): `exit` then says how, and `output` keeps
 * the last lines it wrote.
 */
import { fileURLToPath } from 'node:url';
import { runBench, type BenchResult } from '@infersignal/bench';
import type { ThresholdsInput } from '@infersignal/core';
import type { FaultCommand } from './fault-server';
import type { FaultRun } from './faults/common';
import type { FaultRunFigures } from './faults/types';
import { startServerChild, type ServerChild } from './server';

const ENTRY = fileURLToPath(new URL('./fault-server.ts', import.meta.url));

export interface FaultServer extends ServerChild {
  /** Starts the fault (`POST /fault`). */
  startFault(command: FaultCommand): Promise<void>;
  /** The server's own view (`GET /state`), or null when it does not answer within a second. */
  state(): Promise<Record<string, unknown> | null>;
}

export async function startFaultServer(options: {
  fault: 'device-memory' | 'gc-pressure';
  thresholds: ThresholdsInput;
  env?: Record<string, string>;
  nodeArgs?: string[];
  readyTimeoutMs?: number;
}): Promise<FaultServer> {
  const child = await startServerChild({
    entry: ENTRY,
    what: 'the fault server',
    env: { FAULT: options.fault, THRESHOLDS: JSON.stringify(options.thresholds), ...options.env },
    nodeArgs: options.nodeArgs,
    readyTimeoutMs: options.readyTimeoutMs ?? 60_000,
  });
  const url = child.url;
  return {
    ...child,
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
  };
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
 * A bench-driven fault run as `faultFigures` (./faults/common) judges it:
 * the bench's alerts on its own clock, the healthy phase ending when the
 * fault started, and the failure the scenario names (by default the bench's
 * first failed request).
 */
export function benchFaultRun(
  run: FaultBenchRun,
  details: {
    repeat: number;
    conditions: string;
    failingSubjects: (string | null)[];
    /** The scenario's own failure, when it is not simply the bench's first failed request (ms on the bench's clock). */
    failure?: { atMs: number | null; detail: string | null };
  },
): FaultRun {
  const { result } = run;
  const first = result.firstFailure;
  return {
    repeat: details.repeat,
    conditions: details.conditions,
    failingSubjects: details.failingSubjects,
    durationMs: result.durationMs,
    failureAtMs: details.failure ? details.failure.atMs : (first?.atMs ?? null),
    failureDetail: details.failure ? details.failure.detail : first ? `${first.errorClass} ${first.detail}` : null,
    records: result.alerts,
    faultFromMs: run.faultAtMs,
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
