/**
 * What the fault scenarios share: one clock per run, the server's alert
 * events on it, and judging them against a healthy phase and the failure.
 */
import { performance } from 'node:perf_hooks';
import type { BenchResult } from '@infersignal/bench';

import type { AlertServer } from '../server';
import { ARRIVAL_TOLERANCE_MS, judgeAlerts } from '../suite';
import type { JudgedAlert } from './types';
import type { FaultRunFigures, FaultScenario } from './types';

type AlertRecord = BenchResult['alerts'][number];

/** Milliseconds since the run started. */
export type RunClock = () => number;

export function startClock(): RunClock {
  const t0 = performance.now();
  return () => performance.now() - t0;
}

/** Every alert event of `server` on the run's clock, until `stop()`. */
export function recordAlerts(server: AlertServer, clock: RunClock): { records: AlertRecord[]; stop(): void } {
  const records: AlertRecord[] = [];
  const stop = server.onAlert((event) =>
    records.push({
      signal: event.signal,
      level: event.level,
      labels: event.labels ?? {},
      atMs: clock(),
      source: 'callback',
      message: event.message,
    }),
  );
  return { records, stop };
}

/**
 * Alerts judged as `judgeAlerts` does, except that the healthy phase (before
 * `faultFromMs`, while nothing was degraded yet) has no precursor: an alert
 * about a subject there is false, whatever fails later. Each phase keeps its
 * own first rises, so a false WARN in the healthy phase does not hide the
 * true one of the fault.
 */
export function judgeFaultAlerts(
  records: readonly AlertRecord[],
  failureAtMs: number | null,
  faultFromMs: number,
  failingSubjects: readonly (string | null)[],
): JudgedAlert[] {
  const judge = (phase: readonly AlertRecord[]) =>
    judgeAlerts(phase, failureAtMs, ARRIVAL_TOLERANCE_MS, () => null, failingSubjects);
  const healthy = judge(records.filter((r) => r.atMs < faultFromMs)).map((alert) =>
    alert.verdict === 'true' || alert.verdict === 'late' ? { ...alert, verdict: 'false' as const } : alert,
  );
  return [...healthy, ...judge(records.filter((r) => r.atMs >= faultFromMs))];
}

/** One fault run as its scenario saw it, on the run's clock (ms). */
export interface FaultRun {
  repeat: number;
  conditions: string;
  failingSubjects: (string | null)[];
  durationMs: number;
  /** The scenario's failure; null: nothing failed. */
  failureAtMs: number | null;
  failureDetail: string | null;
  records: readonly AlertRecord[];
  /** When the fault started: alerts before it belong to the healthy phase. */
  faultFromMs: number;
  /** Whatever else the scenario demands (e.g. no failed request beside the fault). */
  extraMet?: boolean;
}

/**
 * The figures of one fault run. The goal: a true precursor of one of the
 * scenario's expected signals before the failure, no false alert, and
 * `extraMet`.
 */
export function faultFigures(scenario: FaultScenario, run: FaultRun): FaultRunFigures {
  const alerts = judgeFaultAlerts(run.records, run.failureAtMs, run.faultFromMs, run.failingSubjects);
  const firstTruePrecursor = alerts.find((a) => a.verdict === 'true') ?? null;
  const falseAlerts = alerts.filter((a) => a.verdict === 'false');
  const expected = alerts.some((a) => a.verdict === 'true' && scenario.expectedSignals.includes(a.signal));
  return {
    scenario: scenario.name,
    repeat: run.repeat,
    conditions: run.conditions,
    failingSubjects: run.failingSubjects,
    durationSeconds: run.durationMs / 1000,
    failureAtSeconds: run.failureAtMs === null ? null : run.failureAtMs / 1000,
    failureDetail: run.failureDetail,
    alerts,
    firstTruePrecursor,
    leadSeconds:
      firstTruePrecursor && run.failureAtMs !== null ? run.failureAtMs / 1000 - firstTruePrecursor.atSeconds : null,
    falseAlerts,
    met: run.failureAtMs !== null && expected && falseAlerts.length === 0 && (run.extraMet ?? true),
  };
}

export const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = (sorted.length - 1) / 2;
  return (sorted[Math.floor(mid)] + sorted[Math.ceil(mid)]) / 2;
};

export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
