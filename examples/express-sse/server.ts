/**
 * An Express 5 inference server instrumented with @infersignal/express.
 *
 *   pnpm --filter @infersignal/example-express-sse start
 *
 * Routes:
 *   POST /v1/infer        JSON in, JSON out; inference runs through a core queue (2 at a time)
 *   GET  /v1/stream       server-sent events, one event per generated token
 *   GET  /healthz/ready   readiness probe: 503 while any signal is CRITICAL
 *
 * Inference is simulated (a sleep per token), so the example runs anywhere.
 * Every few seconds it prints the monitor snapshot: send load and watch the
 * queue wait, occupancy and stream interruptions move.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { QueueFullError, RequestEndedError, createMonitor, type Snapshot } from '@infersignal/core';
import { inferSignal, inferSignalErrors, readinessRouter } from '@infersignal/express';

const HOST = process.env.HOST ?? '127.0.0.1';
const PORT = Number(process.env.PORT ?? 3000);
const SNAPSHOT_INTERVAL_MS = Number(process.env.SNAPSHOT_INTERVAL_MS ?? 5000);
/** `SNAPSHOT=json` prints the whole snapshot instead of the one-line summary. */
const SNAPSHOT_FORMAT = process.env.SNAPSHOT ?? 'summary';

/** Models this server knows; anything else a client sends is labelled with the default (labels stay bounded). */
const MODELS = new Set(['tiny-llm', 'small-llm']);
const DEFAULT_MODEL = 'tiny-llm';
const MS_PER_TOKEN: Record<string, number> = { 'tiny-llm': 20, 'small-llm': 45 };

const monitor = createMonitor({
  serviceName: 'express-sse-example',
  onAlert: (event) => console.log(`[alert] ${event.signal} ${event.previousLevel} -> ${event.level}: ${event.message}`),
});

// The "GPU": two requests run at a time, up to 8 waiting + running before shedding starts.
const queue = monitor.queue('infer', { capacity: 8, concurrency: 2 });

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function pickModel(value: unknown): string {
  return typeof value === 'string' && MODELS.has(value) ? value : DEFAULT_MODEL;
}

/** Simulated generation: yields `count` words, one per token time. */
async function* generate(model: string, prompt: string, count: number, signal: AbortSignal): AsyncGenerator<string> {
  const words = `${prompt} is a fine prompt and here is a simulated answer about it`.split(' ');
  for (let i = 0; i < count && !signal.aborted; i++) {
    await sleep(MS_PER_TOKEN[model] * (0.5 + Math.random()));
    yield words[i % words.length];
  }
}

function overloaded(res: Response, retryAfterSeconds: number): void {
  res
    .status(503)
    .set('retry-after', String(Math.max(1, Math.ceil(retryAfterSeconds))))
    .json({ error: 'overloaded' });
}

const app = express();
app.use(express.json({ limit: '64kb' }));
app.use(readinessRouter(monitor));
// After the body parser, so the model label can come from the body; shed at CRITICAL.
app.use(
  '/v1',
  inferSignal(monitor, { queue, shed: true, model: (req) => pickModel(req.body?.model ?? req.query.model) }),
);

app.post('/v1/infer', async (req: Request, res: Response) => {
  const signal = req.inferSignal!;
  const prompt = String(req.body?.prompt ?? 'hello');
  const tokens = Math.min(Number(req.body?.max_tokens ?? 8) || 8, 64);
  try {
    // run(): waits for one of the 2 slots (queue wait), then times the inference.
    const output = await signal.run(async () => {
      const words: string[] = [];
      for await (const word of generate(signal.model, prompt, tokens, signal.signal)) words.push(word);
      return words.join(' ');
    });
    res.json({ model: signal.model, output });
  } catch (error) {
    if (error instanceof QueueFullError) return overloaded(res, error.retryAfterSeconds);
    if (error instanceof RequestEndedError || signal.signal.aborted) return; // the client left while waiting
    throw error; // Express 5 passes it to the error handlers
  }
});

app.get('/v1/stream', async (req: Request, res: Response) => {
  const signal = req.inferSignal!;
  const prompt = String(req.query.prompt ?? 'hello');
  const tokens = Math.min(Number(req.query.max_tokens ?? 24) || 24, 256);
  // The head is written with the first event, so time to first token includes the queue wait. A client that
  // stops reading is cut off once its socket buffer has not drained for 10 s; heartbeats every 5 s after the first event.
  const sse = signal.sse({ stallTimeoutMs: 10_000, heartbeatMs: 5_000 });
  try {
    await signal.run(async () => {
      let index = 0;
      for await (const word of generate(signal.model, prompt, tokens, signal.signal)) {
        if (sse.closed) break; // client gone: the request is already counted `cancelled`
        // A full socket buffer: wait for the client to read (false: it went away or stalled past the timeout).
        if (!sse.send({ index: index++, token: word }, { event: 'token' }) && !(await sse.drained())) break;
      }
    });
    sse.send('[DONE]', { event: 'done', tokens: 0 });
    sse.end();
  } catch (error) {
    if (error instanceof QueueFullError) return overloaded(res, error.retryAfterSeconds);
    if (error instanceof RequestEndedError || signal.signal.aborted) return;
    throw error;
  }
});

// Marks requests that fail after their head was sent as `error` (not `cancelled`), then hands on.
app.use(inferSignalErrors());
app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
  console.error('[error]', error);
  if (!res.headersSent) res.status(500).json({ error: 'internal' });
});

function summary(snapshot: Snapshot): string {
  const q = snapshot.queues.infer;
  const parts = [`level=${snapshot.level}`];
  if (q) {
    parts.push(
      `queue infer: waiting=${q.waiting} inFlight=${q.inFlight} occupancy=${q.occupancy.toFixed(2)} p95Wait=${q.waitQuantileSeconds.toFixed(3)}s completed=${q.completed} (${q.level})`,
    );
  }
  for (const [model, s] of Object.entries(snapshot.streams)) {
    parts.push(`streams ${model}: ${(s.interruptedRatio * 100).toFixed(1)}% interrupted of ${s.samples} (${s.level})`);
  }
  if (snapshot.active.length > 0)
    parts.push(`active: ${snapshot.active.map((a) => `${a.signal}=${a.level}`).join(', ')}`);
  return `[snapshot] ${parts.join(' | ')}`;
}

const server: Server = app.listen(PORT, HOST, () => {
  const { address, port } = server.address() as AddressInfo;
  const base = `http://${address}:${port}`;
  console.log(`InferSignal express-sse example listening on ${base}`);
  console.log(
    `  curl -s -X POST ${base}/v1/infer -H 'content-type: application/json' -d '{"prompt":"hi","model":"small-llm"}'`,
  );
  console.log(`  curl -N '${base}/v1/stream?prompt=hi'`);
  console.log(`  curl -s ${base}/healthz/ready`);
});

const printer = setInterval(() => {
  const snapshot = monitor.snapshot();
  console.log(SNAPSHOT_FORMAT === 'json' ? JSON.stringify(snapshot) : summary(snapshot));
}, SNAPSHOT_INTERVAL_MS);

function shutdown(signalName: string): void {
  console.log(`${signalName}: shutting down`);
  clearInterval(printer);
  server.close();
  server.closeAllConnections();
  void monitor.close().then(() => process.exit(0));
}
process.once('SIGINT', () => shutdown('SIGINT'));
process.once('SIGTERM', () => shutdown('SIGTERM'));
