/**
 * The llama-completions server driven past its context sequences, in one process, on 127.0.0.1:
 *
 *   pnpm demo llama          (or pnpm demo:llama; STAGE_SECONDS=n sets each stage's length)
 *
 * 1. probe: one client at a time measures how long a generation of `max_tokens` takes here (S);
 * 2. ramp: closed-loop clients at 1, 2, 4, 8 and 12 per sequence, STAGE_SECONDS each (default 6), every
 *    client streaming completions (SSE) back to back;
 * 3. report: every alert with its subject and time, the first failed request (503 shed, 504, 5xx), and
 *    which signal warned first and how long before that failure — or that a failure came unannounced.
 *
 * With n clients on s sequences a generation waits about (n/s − 1) × S, so the stages walk the queue
 * wait from nothing past the WARN (200 ms) and CRITICAL (500 ms) thresholds whatever this machine's
 * speed: S is measured, not assumed, and `max_tokens` is chosen so that S is about 100 ms.
 */
import type { AlertEvent } from '@infersignal/core';
import { startServer, type RunningServer } from './server';

export interface LlamaDemoOptions {
  sequences?: number;
  stageSeconds?: number;
  /** Clients per sequence in each stage. */
  perSequence?: readonly number[];
  log?: (line: string) => void;
}

export interface LlamaDemoAlert {
  signal: string;
  level: string;
  subject: string;
  /** Seconds since the ramp started. */
  at: number;
  message: string;
}

export interface LlamaDemoResult {
  /** Measured seconds per generation with the sequences idle, and the max_tokens that gave it. */
  serviceSeconds: number;
  maxTokens: number;
  stages: Array<{ clients: number; startedAt: number; completed: number; failed: number }>;
  alerts: LlamaDemoAlert[];
  /** Seconds since the ramp started; null when every request succeeded. */
  firstFailure: { at: number; status: number } | null;
  /** The first WARN or CRITICAL alert, if any came before the first failure (or without one). */
  firstWarning: LlamaDemoAlert | null;
  /** firstFailure.at − firstWarning.at; null without both. */
  leadSeconds: number | null;
}

const TARGET_SERVICE_SECONDS = 0.1;
const PROBE_TOKENS = 32;

function subjectOf(labels: Record<string, string>): string {
  const entries = Object.entries(labels);
  return entries.length === 0 ? 'process' : entries.map(([key, value]) => `${key} "${value}"`).join(', ');
}

/** One streamed completion read to its end; the status, or 0 when the connection failed. */
async function complete(url: string, maxTokens: number, prompt: string): Promise<number> {
  try {
    const response = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, max_tokens: maxTokens, stream: true }),
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

export async function runLlamaDemo(options: LlamaDemoOptions = {}): Promise<LlamaDemoResult> {
  const log = options.log ?? ((line: string) => console.log(line));
  const sequences = options.sequences ?? 2;
  const stageSeconds = options.stageSeconds ?? 6;
  const perSequence = options.perSequence ?? [1, 2, 4, 8, 12];
  const events: AlertEvent[] = [];
  const server: RunningServer = await startServer({
    port: 0,
    sequences,
    // Room for every client of the last stage: failures come from shedding at CRITICAL, not a full queue.
    maxWaiting: Math.max(...perSequence) * sequences,
    thresholds: { queue: { waitWindowSeconds: 5, forSeconds: 1 }, eventLoop: { backpressure: false } },
    onAlert: (event) => events.push(event),
    registerGlobals: false,
  });
  try {
    // Probe: the median of five lone generations, then max_tokens scaled to about 100 ms each.
    await complete(server.url, PROBE_TOKENS, 'warm up');
    const probes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await complete(server.url, PROBE_TOKENS, `probe ${i}`);
      probes.push((performance.now() - t0) / 1000);
    }
    probes.sort((a, b) => a - b);
    const perToken = probes[2]! / PROBE_TOKENS;
    const maxTokens = Math.max(8, Math.min(200, Math.round(TARGET_SERVICE_SECONDS / perToken)));
    const serviceSeconds = perToken * maxTokens;
    log(
      `probe: ${(perToken * 1000).toFixed(2)} ms per token alone; max_tokens ${maxTokens} ≈ ${(serviceSeconds * 1000).toFixed(0)} ms per generation, ${sequences} sequences`,
    );

    const rampStart = performance.now();
    const wallStart = Date.now();
    const since = () => (performance.now() - rampStart) / 1000;
    let firstFailure: LlamaDemoResult['firstFailure'] = null;
    const stages: LlamaDemoResult['stages'] = [];
    for (const factor of perSequence) {
      const clients = factor * sequences;
      const stage = { clients, startedAt: since(), completed: 0, failed: 0 };
      stages.push(stage);
      const until = performance.now() + stageSeconds * 1000;
      await Promise.all(
        Array.from({ length: clients }, async (_, c) => {
          while (performance.now() < until) {
            const status = await complete(server.url, maxTokens, `client ${c}`);
            if (status === 200) stage.completed++;
            else {
              stage.failed++;
              firstFailure ??= { at: since(), status };
              // A refused client waits its Retry-After's worth before trying again, as a polite one would.
              await new Promise((resolve) => setTimeout(resolve, 200));
            }
          }
        }),
      );
      log(
        `stage ${clients} clients (${factor}/sequence): ${stage.completed} completed, ${stage.failed} failed, ${(stage.completed / stageSeconds).toFixed(1)}/s`,
      );
    }

    const alerts = events.map((event) => ({
      signal: event.signal,
      level: event.level,
      subject: subjectOf(event.labels),
      at: (event.at - wallStart) / 1000,
      message: event.message,
    }));
    const failureAt = (firstFailure as LlamaDemoResult['firstFailure'])?.at ?? Number.POSITIVE_INFINITY;
    // A warning of the failure: raised during the ramp (start-up and probe alerts are listed, not taken) and
    // still standing when the first request failed; a warning that came and went before it announced nothing.
    const standing = (alert: LlamaDemoAlert) =>
      !alerts.some(
        (later) =>
          later.signal === alert.signal &&
          later.subject === alert.subject &&
          later.level === 'ok' &&
          later.at > alert.at &&
          later.at <= failureAt,
      );
    const firstWarning =
      alerts.find(
        (alert) =>
          alert.level !== 'ok' &&
          alert.at >= 0 &&
          alert.at <= failureAt &&
          (failureAt === Number.POSITIVE_INFINITY || standing(alert)),
      ) ?? null;
    const failure = firstFailure as LlamaDemoResult['firstFailure'];
    const leadSeconds = firstWarning && failure ? failure.at - firstWarning.at : null;
    return { serviceSeconds, maxTokens, stages, alerts, firstFailure: failure, firstWarning, leadSeconds };
  } finally {
    await server.close();
  }
}

export function headline(result: LlamaDemoResult): string {
  const { firstWarning, firstFailure, leadSeconds } = result;
  if (firstWarning && firstFailure)
    return `>>> first warning: ${firstWarning.signal} ${firstWarning.level.toUpperCase()} on ${firstWarning.subject}, raised ${leadSeconds!.toFixed(1)} s before the first failed request (${firstFailure.status} at ${firstFailure.at.toFixed(1)} s)`;
  if (firstFailure)
    return `>>> MISSED: the first request failed (${firstFailure.status} at ${firstFailure.at.toFixed(1)} s) before any warning`;
  if (firstWarning)
    return `>>> first warning: ${firstWarning.signal} ${firstWarning.level.toUpperCase()} on ${firstWarning.subject} at ${firstWarning.at.toFixed(1)} s; no request failed`;
  return '>>> no warning and no failed request';
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runLlamaDemo({ stageSeconds: Number(process.env.STAGE_SECONDS) || undefined });
  console.log('\nalerts:');
  for (const alert of result.alerts)
    console.log(`  ${alert.at.toFixed(1).padStart(6)} s  ${alert.signal} ${alert.level.padEnd(8)} ${alert.message}`);
  console.log(`\n${headline(result)}`);
}
