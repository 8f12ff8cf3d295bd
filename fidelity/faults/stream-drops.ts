/**
 * Stream drops: SSE clients of /v1/completions at a light, steady rate;
 * first a healthy phase where 0.2 % of them are cut off mid-stream, then a
 * storm where that share climbs linearly to 20 %. `stream_interruptions`
 * must warn on the model before the share users see crosses the SLO.
 *
 * Core's signal keeps the outcomes of the last `stream.windowSize` (1000)
 * ended streams per model and warns when the interrupted share reaches
 * `stream.interruptedRatio` (0.5 %), once `stream.minSamples` (20 in the
 * fidelity thresholds) have ended; it names the model, not the queue.
 * Cuts are spread evenly (error diffusion over the share), not drawn at
 * random: a healthy 0.2 % is one cut in every 500 streams, never two in a
 * row by chance, so the healthy phase is what it claims to be.
 */
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { startAlertServer } from '../server';
import { FIDELITY_THRESHOLDS, ROWS, waitForCalm } from '../suite';
import { faultFigures, recordAlerts, sleep, startClock } from './common';
import type { FaultRunFigures, FaultRunOptions, FaultScenario } from './types';

const MODEL = 'matmul-chain';
/** Share of streams cut in the healthy phase, and at the storm's end. */
const HEALTHY_CUT_SHARE = 0.002;
const STORM_CUT_SHARE = 0.2;
/** The SLO: more than this share of the last SLO_WINDOW streams to end did not complete. */
export const SLO_CUT_SHARE = 0.05;
export const SLO_WINDOW = 100;
/** Tokens per stream; a cut stream is dropped by its client after the first token. */
const MAX_TOKENS = 12;
/**
 * Offered streams per second, as a share of what one client streaming one at a time gets through, within
 * RATE_BOUNDS. Light on purpose: the neighbours of a shared machine can take half of that throughput away
 * within seconds, and at half of it (12 model runs per stream) the token queue's capacity signal already
 * warns (seen at 18 streams/s on 2 loaded cores).
 */
const LOAD_FACTOR = 0.25;
const RATE_BOUNDS = [4, 12] as const;
/** Whole streams one at a time before the calibration window. */
const WARM_UP_STREAMS = 8;
/** Streams open at once before the client refuses to start more (a bound, not expected to be reached). */
const MAX_OPEN = 64;

const SETTINGS = {
  short: { healthyStreams: 40, stormStreams: 100, calibrationMs: 2000 },
  long: { healthyStreams: 1000, stormStreams: 1000, calibrationMs: 6000 },
} as const;

type Outcome = 'completed' | 'dropped' | 'cut';

/** One stream: completed (`[DONE]` arrived), dropped by this client after the first token, or cut otherwise. */
function stream(url: URL, agent: Agent, drop: boolean, timeoutMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Outcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        // The last bytes of the previous chunk, so a marker split across two chunks is still seen.
        let tail = '';
        res.on('data', (chunk: Buffer) => {
          const text = tail + chunk.toString('utf8');
          if (text.includes('data: [DONE]')) return settle('completed');
          if (drop && text.includes('data: ')) {
            settle('dropped');
            req.destroy();
            return;
          }
          tail = text.slice(-16);
        });
        res.on('end', () => settle('cut'));
        res.on('error', () => settle('cut'));
        if (res.statusCode !== 200) res.resume();
      },
    );
    const timer = setTimeout(() => {
      settle('cut');
      req.destroy();
    }, timeoutMs);
    req.on('error', () => settle('cut'));
    req.end(JSON.stringify({ prompt: 'hello', max_tokens: MAX_TOKENS, stream: true }));
  });
}

/** The server's own count of ended streams by outcome (calibration included), e.g. `completed 138, cancelled 10`. */
async function serverOutcomes(metricsUrl: string): Promise<string> {
  try {
    const text = await (await fetch(metricsUrl, { signal: AbortSignal.timeout(5000) })).text();
    // Per outcome, over its series (the write-stall cancels are their own); the outcomes at 0 left out.
    const counts = new Map<string, number>();
    for (const m of text.matchAll(/^infersignal_streams_total\{[^}]*infersignal_outcome="(\w+)"[^}]*\} (\d+)/gm))
      counts.set(m[1], (counts.get(m[1]) ?? 0) + Number(m[2]));
    const seen = [...counts].filter(([, n]) => n > 0);
    return seen.map(([outcome, n]) => `${outcome} ${n}`).join(', ') || 'no stream';
  } catch {
    return 'nothing (metrics unreachable)';
  }
}

async function run(options: FaultRunOptions): Promise<FaultRunFigures> {
  const settings = options.short ? SETTINGS.short : SETTINGS.long;
  const server = await startAlertServer({
    thresholds: FIDELITY_THRESHOLDS,
    env: { ROWS: String(ROWS) },
    readyTimeoutMs: 60_000,
  });
  const agent = new Agent({ keepAlive: true, maxSockets: MAX_OPEN });
  try {
    await waitForCalm(server.url);
    const url = new URL(`${server.url}/v1/completions`);
    // One client streaming one at a time: a few streams to warm up, then as many as fit in a window. The mean
    // over the window (not the median of a few) is what sizes the rate: on a shared machine the server gets the
    // CPU in bursts, and a handful of streams can all fall into one.
    for (let i = 0; i < WARM_UP_STREAMS; i++) {
      const outcome = await stream(url, agent, false, 30_000);
      if (outcome !== 'completed') throw new Error(`stream-drops: a warm-up stream was ${outcome}`);
    }
    const windowStarted = performance.now();
    let whole = 0;
    while (performance.now() - windowStarted < settings.calibrationMs) {
      const outcome = await stream(url, agent, false, 30_000);
      if (outcome !== 'completed') throw new Error(`stream-drops: a calibration stream was ${outcome}`);
      whole++;
    }
    const streamMs = (performance.now() - windowStarted) / whole;
    options.log(
      `stream-drops #${options.repeat}: ${whole} whole streams one at a time in ${settings.calibrationMs} ms, ${streamMs.toFixed(0)} ms each`,
    );
    const rate = Math.min(RATE_BOUNDS[1], Math.max(RATE_BOUNDS[0], Math.round((LOAD_FACTOR * 1000) / streamMs)));
    // A stream that takes this long is stuck, not slow.
    const timeoutMs = Math.max(2000, 50 * streamMs);
    await waitForCalm(server.url);

    const clock = startClock();
    const alerts = recordAlerts(server, clock);
    const total = settings.healthyStreams + settings.stormStreams;
    const shareOf = (i: number): number =>
      i < settings.healthyStreams
        ? HEALTHY_CUT_SHARE
        : HEALTHY_CUT_SHARE +
          ((STORM_CUT_SHARE - HEALTHY_CUT_SHARE) * (i - settings.healthyStreams + 1)) / settings.stormStreams;
    const faultFromMs = (settings.healthyStreams / rate) * 1000;
    const ended: Outcome[] = [];
    const counts: Record<Outcome, number> = { completed: 0, dropped: 0, cut: 0 };
    let failureAtMs: number | null = null;
    let failureDetail: string | null = null;
    let open = 0;
    let refused = 0;
    const onEnd = (outcome: Outcome): void => {
      open--;
      ended.push(outcome);
      counts[outcome]++;
      if (failureAtMs !== null || ended.length < SLO_WINDOW) return;
      const window = ended.slice(-SLO_WINDOW);
      const notCompleted = window.filter((o) => o !== 'completed').length;
      if (notCompleted / SLO_WINDOW > SLO_CUT_SHARE) {
        failureAtMs = clock();
        failureDetail = `${notCompleted} of the last ${SLO_WINDOW} streams cut off (SLO ${SLO_CUT_SHARE * 100} %)`;
      }
    };
    const running: Promise<void>[] = [];
    let diffusion = 0;
    for (let i = 0; i < total && !options.signal?.aborted; i++) {
      // Open loop: stream i starts at i / rate, however long the others take.
      const wait = (i / rate) * 1000 - clock();
      if (wait > 0) await sleep(wait, options.signal);
      diffusion += shareOf(i);
      const drop = diffusion >= 1;
      if (drop) diffusion -= 1;
      if (open >= MAX_OPEN) {
        refused++;
        open++;
        onEnd('cut');
        continue;
      }
      open++;
      running.push(stream(url, agent, drop, timeoutMs).then(onEnd));
    }
    await Promise.all(running);
    // The server judges on its evaluation tick: give the last ends a moment to be judged.
    await sleep(1500, options.signal);
    const durationMs = clock();
    alerts.stop();
    const serverCounts = await serverOutcomes(server.metricsUrl);
    return faultFigures(streamDrops, {
      repeat: options.repeat,
      conditions: `${rate} streams/s (${LOAD_FACTOR}× of one stream at a time, ${streamMs.toFixed(0)} ms each, ${MAX_TOKENS} tokens); ${settings.healthyStreams} healthy streams at ${HEALTHY_CUT_SHARE * 100} % cut, then ${settings.stormStreams} with the cut share rising to ${STORM_CUT_SHARE * 100} %: ${counts.completed} completed, ${counts.dropped} dropped by the client, ${counts.cut} cut otherwise${refused ? ` (${refused} not started: ${MAX_OPEN} open)` : ''}; the server counted ${serverCounts}`,
      failingSubjects: [`model "${MODEL}"`],
      durationMs,
      failureAtMs,
      failureDetail,
      records: alerts.records,
      faultFromMs,
    });
  } finally {
    agent.destroy();
    await server.stop();
  }
}

export const streamDrops: FaultScenario = {
  name: 'stream-drops',
  expectedSignals: ['stream_interruptions'],
  failureDefinition: `more than ${SLO_CUT_SHARE * 100} % of the last ${SLO_WINDOW} streams to end were cut off before \`data: [DONE]\` (dropped mid-stream, refused, reset or stuck), judged from the ${SLO_WINDOW}th stream on: a 95 % stream-completion SLO, where one answer in twenty breaks off (core's CRITICAL level for the same share)`,
  goal: 'stream_interruptions WARN on the model before the cut share crosses the SLO, no false alert, every run',
  run,
};
