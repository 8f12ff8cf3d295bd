/**
 * `pnpm demo`: the product's headline, measured on this machine.
 *
 * 1. starts the Fastify + ONNX example server as a child process (loopback,
 *    free ports, Prometheus endpoint);
 * 2. measures its capacity: a closed loop over several short windows, with
 *    the SSE load beside it, whose lower quartile is the figure;
 * 3. ramps an open-loop load through 0.5× → 0.9× → 1.1× → 2× of it with
 *    `@infersignal/bench`, scraping the server's /metrics, with a light SSE
 *    stream load beside it and a slow hot reload of the model early on;
 * 4. prints throughput and latency per stage, each signal's level per
 *    second, every alert with its subject judged against the first failed
 *    request, and the headline: the first true precursor and its lead time,
 *    or a missed precursor (see precursors.ts); writes the JSON result
 *    under .tmp/demo/.
 *
 * Environment: DEMO_SECONDS (length of the ramp, default 45; the probe and
 * pauses scale with it), DEMO_RELOAD=0 (no reload), DEMO_STREAMS=0 (no SSE
 * load), DEMO_OUT (JSON path), DEMO_VERBOSE=1 (the server's output too).
 * Exit codes: 0 done, 1 the server failed to start or the demo failed, 130 interrupted.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { ThresholdsInput } from '@infersignal/core';
import { runBench, writeReport, type BenchResult } from '@infersignal/bench';
import { INFER_BODY, probeCapacity } from './probe';
import { FAILING_QUEUES, formatDemoReport, headline, type ReloadEvent } from './report';
import { ServerStartError, spawnServer, type ServerProcess } from './server-process';
import { pollSnapshots, waitForCalm } from './snapshots';

/**
 * Offered load per stage, as a multiple of the measured capacity: half,
 * near capacity (where utilization warns and nothing fails yet), just past
 * it (the queue grows slowly: its wait crosses WARN seconds before the
 * shedding threshold), then twice it (shedding). On the shared 2-core dev
 * machine a capacity probe is only good to ±20 % from one run to the next;
 * a 1.1× stage rather than a steeper one keeps the story readable whichever
 * way the probe errs.
 */
const FACTORS = [0.5, 0.9, 1.1, 2] as const;
/** Share of the ramp each stage gets: the middle stages are long enough for the rate estimates to follow. */
const SHARES = [0.15, 0.3, 0.35, 0.2] as const;
/** Rows per /v1/infer request: ~5 ms of model time, so the model (not HTTP) is the bottleneck and the load generator needs few requests to saturate it. */
const ROWS = 1024;
const STREAM_RATE = 3;
/** Measuring windows of the capacity probe per round (see probe.ts for the figure taken from them). */
const PROBE_WINDOWS = 5;

/**
 * Thresholds the server runs with in the demo. Core's defaults are sized
 * for production windows (rates over 10 s, half-life 5 s, 30 s of waits);
 * a 45-second demo shortens them so each signal follows a stage of ~10 s.
 * `queue.forSeconds: 2` makes a queue-wait level hold 2 s before it counts
 * (and before the server sheds on it): a burst shorter than that — on a
 * shared machine, often the scheduler pausing a process for a second — is
 * absorbed by the queue instead of answered with 503s.
 * `eventLoop.backpressure: false`: onnxruntime-node runs the model on the
 * main thread, so a busy event loop here is the model working; admission is
 * the queue's job. The event_loop signal is still measured and shown.
 */
const DEMO_THRESHOLDS: ThresholdsInput = {
  capacity: { rateHalfLifeSeconds: 2, rateWindowSeconds: 5, serviceWindowSeconds: 10, trendWindowSeconds: 10 },
  queue: { waitWindowSeconds: 10, forSeconds: 2 },
  eventLoop: { backpressure: false },
  stream: { minSamples: 20 },
};

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * Closed-loop users of the capacity probe: enough to keep the one model
 * slot busy, few enough that the others wait about 0.1 s for it (half the
 * queue-wait WARN), so the probe itself raises no queue alert and is never
 * shed, however slow the machine makes a run. 2 to 8.
 */
function probeUsers(runSeconds: number): number {
  if (!(runSeconds > 0)) return 4;
  return Math.max(2, Math.min(8, Math.floor(0.1 / runSeconds) + 1));
}

function numberEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max)
    throw new RangeError(`${name} must be a number in [${min}, ${max}], got ${JSON.stringify(raw)}`);
  return value;
}

const say = (line: string): void => void process.stdout.write(`${line}\n`);

/** The background SSE load: STREAM_RATE streams per second of 16 tokens, for the given stages. */
function streamLoad(
  url: string,
  stages: { name: string; durationMs: number }[],
  signal: AbortSignal,
): Promise<BenchResult> {
  return runBench({
    target: `${url}/v1/completions`,
    body: 'Tell me about early warnings',
    model: 'matmul-chain',
    maxTokens: 16,
    stream: true,
    stages: stages.map((stage) => ({ ...stage, rate: STREAM_RATE })),
    timeoutMs: 3000,
    progress: false,
    signal,
  });
}

async function reload(url: string, slowMs: number, atMs: number): Promise<ReloadEvent> {
  try {
    const response = await fetch(`${url}/admin/reload`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slowMs }),
      signal: AbortSignal.timeout(15_000),
    });
    const body = (await response.json()) as { seconds?: number; level?: string; message?: string };
    if (!response.ok)
      return { atMs, slowMs, seconds: null, level: 'ok', error: body.message ?? `HTTP ${response.status}` };
    return { atMs, slowMs, seconds: body.seconds ?? null, level: body.level ?? 'ok' };
  } catch (error) {
    return { atMs, slowMs, seconds: null, level: 'ok', error: (error as Error).message };
  }
}

/** The first load's duration (the model_load baseline), from the server's snapshot. */
async function loadBaselineSeconds(url: string): Promise<number> {
  const response = await fetch(`${url}/healthz/ready`, { signal: AbortSignal.timeout(2000) });
  const body = (await response.json()) as { models?: Record<string, { baselineSeconds?: number | null }> };
  return body.models?.['matmul-chain']?.baselineSeconds ?? 0.1;
}

async function main(): Promise<number> {
  const rampSeconds = numberEnv('DEMO_SECONDS', 45, 8, 300);
  const withReload = process.env.DEMO_RELOAD !== '0';
  const withStreams = process.env.DEMO_STREAMS !== '0';
  const verbose = process.env.DEMO_VERBOSE === '1';
  const scale = rampSeconds / 45;
  const abort = new AbortController();
  let server: ServerProcess | undefined;
  let interrupted = false;

  const onSigint = (): void => {
    if (interrupted) {
      // Second Ctrl-C: do not wait for anything.
      void server?.stop(0);
      process.exit(130);
    }
    interrupted = true;
    say('\ninterrupted: stopping the load and the server …');
    abort.abort();
  };
  process.on('SIGINT', onSigint);
  process.once('SIGTERM', onSigint);

  try {
    say(`starting the fastify-onnx example server (child process, 127.0.0.1) …`);
    try {
      server = await spawnServer({ thresholds: DEMO_THRESHOLDS, env: { ROWS: String(ROWS), ALERTS: '1' } });
    } catch (error) {
      if (error instanceof ServerStartError) {
        process.stderr.write(`demo: ${error.message}\n`);
        for (const line of error.output.slice(-40)) process.stderr.write(`  [server] ${line}\n`);
        return 1;
      }
      throw error;
    }
    const info = server.info;
    say(
      `  ${info.url}  (pid ${info.pid}, metrics ${info.metricsUrl}, model run ${(info.runSeconds * 1000).toFixed(2)} ms, infer queue capacity ${info.inferCapacity})`,
    );
    if (interrupted) return 130;

    // Start-up (loading the runtime, the model, the warm-up runs) blocks the server's event loop, which its
    // event_loop signal reports for a second; with shedding on, a probe sent into that would be shed.
    await waitForCalm(info.url, 8000);
    if (interrupted) return 130;

    const warmMs = Math.round(1000 * Math.max(0.5, scale));
    const windowMs = Math.round(800 * Math.max(0.6, scale));
    const users = probeUsers(info.runSeconds);
    say(
      `measuring capacity: closed loop, ${users} users, ${PROBE_WINDOWS} windows of ${(windowMs / 1000).toFixed(1)} s after ${(warmMs / 1000).toFixed(1)} s of warm-up …`,
    );
    // The SSE load runs beside the probe as it will beside the ramp: the probe measures what is left for /v1/infer.
    // In 1 s runs that each end with their streams: aborting one mid-stream would count cut-off streams.
    let probing = true;
    const probeStreamLoad = withStreams
      ? (async () => {
          while (probing && !abort.signal.aborted)
            await streamLoad(info.url, [{ name: 'probe', durationMs: 1000 }], abort.signal);
        })()
      : null;
    const probe = await probeCapacity(info.url, {
      warmMs,
      windowMs,
      windows: PROBE_WINDOWS,
      users,
      settle: () => waitForCalm(info.url, 5000, 0.6),
      signal: abort.signal,
    }).finally(() => {
      probing = false;
    });
    await probeStreamLoad;
    if (interrupted) return 130;
    const rates = FACTORS.map((f) => Math.max(1, Math.round(f * probe.rps)));
    say(
      `  windows ${probe.windows.map((w) => w.toFixed(0)).join(', ')} req/s (spread ${(probe.spread * 100).toFixed(0)} %, ${probe.rounds} round${probe.rounds > 1 ? 's' : ''}${probe.refused.length ? `; ${probe.refused.length} window(s) with failed requests left out` : ''})`,
    );
    say(
      `  ≈ ${probe.rps.toFixed(0)} req/s (lower quartile; median ${probe.medianRps.toFixed(0)}) → stages ${rates.map((r, i) => `${FACTORS[i]}× ${r}/s`).join(', ')}`,
    );
    // The probe drove utilization to 1 by design; start the ramp from a calm server. A warning resolves only
    // once its value stayed low for keepFiringSeconds (10 s), so allow for that whatever the demo's length.
    const calm = await waitForCalm(info.url, Math.round(Math.max(20_000, 10_000 * scale)), 0.6);
    if (!calm) say('  (some signal is still above ok after the probe; its alert may show at 0 s)');
    if (interrupted) return 130;

    const stageMs = SHARES.map((share) => Math.round(share * rampSeconds * 1000));
    const stages = rates.map((rate, i) => ({ name: `${FACTORS[i]}x ${rate}/s`, rate, durationMs: stageMs[i] }));
    const baseline = withReload ? await loadBaselineSeconds(info.url) : 0;
    say(
      `ramp: ${rampSeconds} s against POST /v1/infer${withStreams ? `, ${STREAM_RATE} SSE streams/s beside it` : ''} …`,
    );

    const origin = performance.now();
    const originEpoch = Date.now();
    // Twice a second: the lanes are per second and a level that lasts less than a poll is still seen.
    const poller = pollSnapshots(info.url, origin, 500);
    const reloads: Promise<ReloadEvent>[] = [];
    const reloadTimers: NodeJS.Timeout[] = [];
    if (withReload) {
      // Early in the first stage: a reload through a slow loader (> 3× the load baseline, and past core's
      // 1 s floor under which no load is a spike) raises model_load WARN; a normal reload, after it ends,
      // brings it back to ok.
      const slowMs = Math.max(1500, Math.ceil(baseline * 1000 * 5));
      reloadTimers.push(
        setTimeout(() => reloads.push(reload(info.url, slowMs, performance.now() - origin)), stageMs[0] * 0.25),
      );
      reloadTimers.push(
        setTimeout(
          () => reloads.push(Promise.all(reloads).then(() => reload(info.url, 0, performance.now() - origin))),
          stageMs[0] * 0.7,
        ),
      );
    }
    const streamRun: Promise<BenchResult> | null = withStreams
      ? streamLoad(
          info.url,
          stageMs.map((durationMs, i) => ({ name: `${FACTORS[i]}x`, durationMs })),
          abort.signal,
        )
      : null;
    const ramp = await runBench({
      target: `${info.url}/v1/infer`,
      body: INFER_BODY,
      stages,
      timeoutMs: 2000,
      metricsUrl: info.metricsUrl,
      scrapeIntervalMs: 500,
      signal: abort.signal,
    });
    const streams = streamRun ? await streamRun : null;
    for (const t of reloadTimers) clearTimeout(t);
    await poller.stop();
    const reloadEvents = await Promise.all(reloads);
    if (interrupted) return 130;

    const facts = {
      server: { ...info, rows: ROWS },
      probe: {
        rps: probe.rps,
        medianRps: probe.medianRps,
        windows: probe.windows,
        spread: probe.spread,
        rounds: probe.rounds,
        refused: probe.refused,
        p50Ms: probe.p50Ms,
        users: probe.users,
        windowMs: probe.windowMs,
      },
      factors: FACTORS,
      ramp,
      streams,
      streamRate: STREAM_RATE,
      snapshots: poller.samples,
      rampOffsetMs: Date.parse(ramp.startedAt) - originEpoch,
      reloads: reloadEvents,
    };
    say(formatDemoReport(facts));
    if (verbose) {
      say('\nserver output (last lines):');
      for (const line of server.output().slice(-60)) say(`  ${line}`);
    }

    const out =
      process.env.DEMO_OUT ||
      join(REPO_ROOT, '.tmp', 'demo', `demo-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    mkdirSync(dirname(out), { recursive: true });
    const { text, verdict } = headline(facts);
    writeFileSync(
      out,
      `${JSON.stringify(
        {
          ...facts,
          thresholds: DEMO_THRESHOLDS,
          headline: text,
          precursor: verdict.precursor,
          alertRuns: verdict.runs,
          failingQueues: FAILING_QUEUES,
          probe: { ...facts.probe, result: probe.result },
        },
        null,
        2,
      )}\n`,
    );
    // The ramp alone, in the bench's own format: `infersignal report <file> --out run.html` draws it.
    const rampOut = out.replace(/(\.json)?$/, '.ramp.json');
    writeReport(rampOut, [ramp]);
    say(`\nJSON result: ${out}`);
    say(`bench result of the ramp: ${rampOut}`);
    return 0;
  } catch (error) {
    // A run cut short by Ctrl-C fails in whatever step it was in; that is not the demo failing.
    if (interrupted) return 130;
    if (server) {
      process.stderr.write('server output (last lines):\n');
      for (const line of server.output().slice(-30)) process.stderr.write(`  [server] ${line}\n`);
    }
    throw error;
  } finally {
    process.off('SIGINT', onSigint);
    await server?.stop();
  }
}

/** `pnpm demo llama`: the llama-completions server driven past its context sequences instead. */
async function llama(): Promise<number> {
  const { headline, runLlamaDemo } = await import('@infersignal/example-llama-completions/src/demo.ts');
  const result = await runLlamaDemo({ log: say });
  say('\nalerts:');
  for (const alert of result.alerts)
    say(`  ${alert.at.toFixed(1).padStart(6)} s  ${alert.signal} ${alert.level.padEnd(8)} ${alert.message}`);
  say(`\n${headline(result)}`);
  return result.firstFailure && !result.firstWarning ? 1 : 0;
}

(process.argv.slice(2).includes('llama') ? llama() : main()).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
