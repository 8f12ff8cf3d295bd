/**
 * Slow reload: the model store slows down while the server
 * keeps serving a light load and is hot-reloaded, until a reload misses its
 * deadline. `model_load` must warn on the model before that.
 *
 * The model is read through a store with a latency (`STORAGE_MS` of the
 * example server, on the first load and every reload), so a load is
 * I/O-bound as a real model's is: this model's own session build takes
 * 5–150 ms on a loaded 2-core machine, and a 3× factor on that alone would
 * judge CPU scheduling, not storage. The healthy reloads measure the
 * baseline B (the median reload, as the client sees it); each slow step
 * then adds (f − 1) × B to the store's latency, so a reload takes about
 * f × B, and never less than (f − 1) × B + the store's usual latency.
 *
 * Core's `model_load` judges each load when it ends, against the model's
 * healthy baseline (the median of its first 5 loads, which slower loads do
 * not drag up), and warns above 3× (`spikeFactor`) for loads of at least
 * 1 s (`minSpikeSeconds`). The store degrades gradually, as a throttled
 * bucket or a degraded volume does: 1.5×, 2.5× (slow, still under the
 * alert), 3.5× (between the alert and the deadline: the announcement), 5×
 * (past the deadline: the failure). Each reload's answer carries the level
 * the server judged it at, so the run shows which step raised it.
 */
import { performance } from 'node:perf_hooks';
import { runBench, type BenchResult } from '@infersignal/bench';
import { startAlertServer } from '../server';
import { FIDELITY_THRESHOLDS, INFER_BODY, ROWS, measureCapacity, waitForCalm } from '../suite';
import { faultFigures, median, recordAlerts, sleep, startClock } from './common';
import type { FaultRunFigures, FaultRunOptions, FaultScenario } from './types';

const MODEL = 'matmul-chain';
/**
 * Latency of the healthy model store (ms): several times this model's session build, so storage dominates a
 * load, and the 3.5× step (over 1.4 s) is past core's 1 s floor for a spike.
 */
const STORAGE_MS = 400;
/**
 * A reload that has not answered within this many baseline reload times has failed: a rollout deadline with
 * room above the alert's 3× for a reload's jitter.
 */
export const RELOAD_DEADLINE_FACTOR = 4.5;
/**
 * How many times slower than the healthy baseline each slow reload is: a gradual slowdown. The first two stay
 * under the alert's 3×; 3.5× lies between the alert and the deadline; the last crosses the deadline whatever
 * the session build takes (its added latency alone, 4 B + the store's usual latency, exceeds 4.5 B while that
 * latency exceeds the usual session build).
 */
export const SLOW_STEPS: readonly number[] = [1.5, 2.5, 3.5, 5];
/** Light /v1/infer load during the whole run, as a share of the capacity measured on that server just before. */
const INFER_LOAD = 0.3;
/** The example server's largest `slowMs`. */
const MAX_SLOW_MS = 10_000;

const SETTINGS = {
  short: { healthyReloads: 5, gapFactor: 0.25, capacityWindows: 3, capacityWindowMs: 500 },
  long: { healthyReloads: 20, gapFactor: 4, capacityWindows: 5, capacityWindowMs: 1500 },
} as const;

interface ReloadAnswer {
  ok: boolean;
  ms: number;
  /** The model_load level the server judged the reload at (null when it did not answer). */
  level: string | null;
  /** The reload missed its deadline and was abandoned. */
  timedOut: boolean;
  status: number | null;
}

async function reload(url: string, slowMs: number | null, deadlineMs: number): Promise<ReloadAnswer> {
  const started = performance.now();
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), deadlineMs);
  try {
    const response = await fetch(`${url}/admin/reload`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(slowMs === null ? {} : { slowMs }),
      signal: abort.signal,
    });
    const body = (await response.json().catch(() => null)) as { level?: string } | null;
    const ms = performance.now() - started;
    return { ok: response.ok, ms, level: body?.level ?? null, timedOut: false, status: response.status };
  } catch (error) {
    if (!abort.signal.aborted) throw error;
    return { ok: false, ms: performance.now() - started, level: null, timedOut: true, status: null };
  } finally {
    clearTimeout(timer);
  }
}

/** Waits (bounded) until the server is no longer loading the model: an abandoned reload still runs there. */
async function waitLoaded(url: string, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    try {
      const response = await fetch(`${url}/healthz/ready`, { signal: AbortSignal.timeout(1000) });
      const body = (await response.json()) as { models?: Record<string, { loading?: number }> };
      if ((body.models?.[MODEL]?.loading ?? 0) === 0) return;
    } catch {
      // The next poll tells.
    }
    await sleep(100);
  }
}

async function run(options: FaultRunOptions): Promise<FaultRunFigures> {
  const settings = options.short ? SETTINGS.short : SETTINGS.long;
  const server = await startAlertServer({
    thresholds: FIDELITY_THRESHOLDS,
    env: { ROWS: String(ROWS), STORAGE_MS: String(STORAGE_MS) },
    readyTimeoutMs: 60_000,
  });
  const stopLoad = new AbortController();
  const onAbort = (): void => stopLoad.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await waitForCalm(server.url);
    // On a shared machine a fixed rate can be an overload: size the load by what this server does now.
    const capacity = await measureCapacity(server.url, {
      windows: settings.capacityWindows,
      windowMs: settings.capacityWindowMs,
      signal: options.signal,
    });
    const inferRate = Math.max(1, Math.round(INFER_LOAD * capacity.rps));
    await waitForCalm(server.url);
    const clock = startClock();
    const alerts = recordAlerts(server, clock);
    const load: Promise<BenchResult> = runBench({
      target: `${server.url}/v1/infer`,
      body: INFER_BODY,
      stages: [{ name: 'light', rate: inferRate, durationMs: 3_600_000 }],
      timeoutMs: 2000,
      progress: false,
      signal: stopLoad.signal,
    });

    // Healthy reloads: the store at its usual latency. No deadline yet (there is no baseline to set it from);
    // the bound only keeps a stuck server from hanging the run.
    const healthy: number[] = [];
    for (let i = 0; i < settings.healthyReloads && !options.signal?.aborted; i++) {
      const answer = await reload(server.url, null, 60_000);
      if (!answer.ok) throw new Error(`slow-reload: a healthy reload failed (HTTP ${answer.status ?? 'timeout'})`);
      healthy.push(answer.ms);
      await sleep(settings.gapFactor * median(healthy), options.signal);
    }
    const baselineMs = median(healthy);
    const deadlineMs = RELOAD_DEADLINE_FACTOR * baselineMs;
    const faultFromMs = clock();
    options.log(
      `slow-reload #${options.repeat}: healthy reloads ${healthy.map((ms) => (ms / 1000).toFixed(2)).join(', ')} s; baseline ${(baselineMs / 1000).toFixed(2)} s, deadline ${(deadlineMs / 1000).toFixed(2)} s`,
    );

    let failureAtMs: number | null = null;
    let failureDetail: string | null = null;
    const slow: string[] = [];
    for (const factor of SLOW_STEPS) {
      if (options.signal?.aborted) break;
      const slowMs = Math.min(MAX_SLOW_MS, Math.round(STORAGE_MS + (factor - 1) * baselineMs));
      const startedAt = clock();
      const answer = await reload(server.url, slowMs, deadlineMs);
      slow.push(`${factor}× ${answer.timedOut ? 'timed out' : `${(answer.ms / 1000).toFixed(2)} s ${answer.level}`}`);
      if (!answer.ok) {
        failureAtMs = answer.timedOut ? startedAt + deadlineMs : clock();
        failureDetail = answer.timedOut
          ? `reload at ${factor}× storage latency missed its ${(deadlineMs / 1000).toFixed(2)} s deadline`
          : `reload at ${factor}× storage latency failed (HTTP ${answer.status})`;
        break;
      }
      await sleep(settings.gapFactor * baselineMs, options.signal);
    }
    // The abandoned reload still runs on the server; its end is when model_load judges it (a late alert).
    await waitLoaded(server.url, MAX_SLOW_MS + 4 * baselineMs);
    const durationMs = clock();
    stopLoad.abort();
    const served = await load;
    alerts.stop();
    const inferFailed = served.total.responses - served.total.ok;
    return faultFigures(slowReload, {
      repeat: options.repeat,
      conditions: `store latency ${STORAGE_MS} ms; ${healthy.length} healthy reloads, baseline ${(baselineMs / 1000).toFixed(2)} s, deadline ${RELOAD_DEADLINE_FACTOR}× = ${(deadlineMs / 1000).toFixed(2)} s; slow: ${slow.join(', ')}; /v1/infer at ${inferRate} req/s (${INFER_LOAD}× of ${capacity.rps.toFixed(0)}) throughout: ${inferFailed} of ${served.total.responses} failed`,
      failingSubjects: [`model "${MODEL}"`],
      durationMs,
      failureAtMs,
      failureDetail,
      records: alerts.records,
      faultFromMs,
      // Requests are served by the old session during a reload: none may fail.
      extraMet: inferFailed === 0,
    });
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    stopLoad.abort();
    await server.stop();
  }
}

export const slowReload: FaultScenario = {
  name: 'slow-reload',
  expectedSignals: ['model_load'],
  failureDefinition: `a hot reload that has not answered within ${RELOAD_DEADLINE_FACTOR}× the baseline reload time (the median of the healthy reloads of the same run, as the client sees them) is abandoned and counts as failed, as a rollout whose readiness deadline passes does; /v1/infer requests are served by the old model meanwhile and must not fail`,
  goal: 'model_load WARN on the model before the first failed reload, no false alert and no failed /v1/infer request, every run',
  run,
};
