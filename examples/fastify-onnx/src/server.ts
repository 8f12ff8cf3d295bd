/**
 * A Fastify 5 inference server over an ONNX Runtime session, instrumented
 * from the inside with InferSignal:
 *
 *   POST /v1/infer        JSON in/out: one batched run of the model, queued (1 at a time)
 *   POST /v1/completions  OpenAI-compatible; `stream: true` answers server-sent events,
 *                         one token per model run, then `data: [DONE]`
 *   GET  /v1/models       the model served
 *   GET  /healthz/ready   503 while any signal is CRITICAL, else 200 + snapshot
 *   GET  /healthz/live    200
 *   POST /admin/reload    hot reload of the model (optionally through a slow loader)
 *
 * and a Prometheus endpoint on 127.0.0.1 (default :9464/metrics) from
 * `@infersignal/node`. `startServer()` is what the demo (`pnpm demo`)
 * starts; `src/main.ts` is the command line around it.
 *
 * Three core queues, each measuring one thing:
 * - `infer`: requests to /v1/infer (arrival → model → response), concurrency 1,
 *   sized to hold `queueSeconds` of model work; shed with 503 at CRITICAL;
 * - `completions`: streams, `streamConcurrency` generating at once;
 * - `onnx:<model>`: every run of the model (requests and tokens), from `@infersignal/onnx`.
 */
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type * as ort from 'onnxruntime-node';
import {
  ModelLoadError,
  QueueFullError,
  RequestEndedError,
  type AlertListener,
  type Monitor,
  type QueueTracker,
  type ThresholdsInput,
} from '@infersignal/core';
import { inferSignal, readinessHandler, type InferSignalRequest } from '@infersignal/fastify';
import { start, type InferSignal } from '@infersignal/node';
import { createSession, type MonitoredSession } from '@infersignal/onnx';
import { DEFAULT_MODEL_PATH, DIM, MAX_ROWS, generateTokens, inputTensor, summarize } from './model';

export interface ServerOptions {
  /** Interface of the API. Default `127.0.0.1`. */
  host?: string;
  /** Port of the API. Default 3000; 0 picks a free one. */
  port?: number;
  /** Port of the Prometheus endpoint (always on 127.0.0.1). Default 9464; 0 picks a free one. */
  metricsPort?: number;
  /** ONNX model with one float input [rows, 512]. Default: the committed `matmul-chain.onnx`. */
  modelPath?: string;
  /** Model label. Default `matmul-chain`. */
  modelName?: string;
  /** Rows per /v1/infer run when the request does not say (default 512, ~2.5 ms on one thread). */
  rows?: number;
  /** Rows per token run of a stream (default 64, ~0.3 ms). */
  tokenRows?: number;
  /** The `infer` queue holds about this many seconds of model work before it sheds (default 1.5). */
  queueSeconds?: number;
  /** Streams generating at once (default 4); up to 4× as many wait. */
  streamConcurrency?: number;
  /** Answer 503 + Retry-After at CRITICAL backpressure (default true). */
  shed?: boolean;
  /**
   * Latency of the model store (ms, default 0): every load, the first and each reload, waits this long
   * before reading the file, as a model fetched from network storage does. A reload's `slowMs` replaces it.
   */
  storageMs?: number;
  /** onnxruntime threads per run (default 1: the server stays on one core). */
  threads?: number;
  /** Core thresholds (the demo shortens the rate windows). Default here: `eventLoop.backpressure: false` (see startServer). */
  thresholds?: ThresholdsInput;
  /** `@infersignal/node`'s export mode (default: its own, `producer`). */
  exportMode?: 'api' | 'producer';
  /** Called on every alert (level change). */
  onAlert?: AlertListener;
  /** Register the OTel SDK as the process's globals (default true; false when embedding twice in one process). */
  registerGlobals?: boolean;
}

export interface RunningServer {
  /** Base URL of the API, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** Prometheus scrape URL, or null when its port could not be bound (the API still runs). */
  metricsUrl: string | null;
  monitor: Monitor;
  session: MonitoredSession;
  app: FastifyInstance;
  /** Capacity of the `infer` queue, derived from the measured run time. */
  inferCapacity: number;
  /** Median warm-up run time of one /v1/infer batch (s). */
  runSeconds: number;
  /** Stops taking requests, waits for accepted runs, releases the model, flushes telemetry. Idempotent. */
  close(): Promise<void>;
}

interface InferBody {
  input?: number[];
  rows?: number;
}

interface CompletionBody {
  model?: string;
  prompt?: string | string[];
  max_tokens?: number;
  stream?: boolean;
}

const inferSchema = {
  body: {
    type: 'object',
    properties: {
      input: { type: 'array', maxItems: DIM, items: { type: 'number' } },
      rows: { type: 'integer', minimum: 1, maximum: MAX_ROWS },
    },
  },
} as const;

const completionSchema = {
  body: {
    type: 'object',
    properties: {
      model: { type: 'string', maxLength: 200 },
      prompt: {
        anyOf: [
          { type: 'string', maxLength: 20_000 },
          { type: 'array', maxItems: 1, items: { type: 'string', maxLength: 20_000 } },
        ],
      },
      max_tokens: { type: 'integer', minimum: 1, maximum: 256 },
      stream: { type: 'boolean' },
    },
  },
} as const;

const reloadSchema = {
  body: {
    type: ['object', 'null'],
    properties: { slowMs: { type: 'integer', minimum: 0, maximum: 10_000 } },
  },
} as const;

function checkInteger(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new RangeError(`fastify-onnx: ${name} must be an integer in [${min}, ${max}], got ${String(value)}`);
  return value;
}

/** 503 for a request the queue refused after admission (full FIFO); counted `rejected`, not `error`. */
function queueFull(reply: FastifyReply, signal: InferSignalRequest, error: QueueFullError): FastifyReply {
  signal.ticket.end('rejected');
  return reply
    .code(503)
    .header('retry-after', String(Math.max(1, Math.ceil(error.retryAfterSeconds))))
    .send({ error: 'overloaded', message: 'The inference queue is full; retry later.' });
}

/** Median of `n` timed runs of `feeds` straight on the session (before the server listens, so nothing queues). */
async function warmUp(session: MonitoredSession, rows: number, n: number): Promise<number> {
  const feeds = { [session.inputNames[0]]: inputTensor([], rows) };
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await session.session.run(feeds);
    times.push((performance.now() - t0) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1';
  const port = checkInteger('port', options.port ?? 3000, 0, 65_535);
  const metricsPort = checkInteger('metricsPort', options.metricsPort ?? 9464, 0, 65_535);
  const modelPath = options.modelPath ?? DEFAULT_MODEL_PATH;
  const modelName = options.modelName ?? 'matmul-chain';
  const rows = checkInteger('rows', options.rows ?? 512, 1, MAX_ROWS);
  const tokenRows = checkInteger('tokenRows', options.tokenRows ?? 64, 1, MAX_ROWS);
  const streamConcurrency = checkInteger('streamConcurrency', options.streamConcurrency ?? 4, 1, 256);
  const threads = checkInteger('threads', options.threads ?? 1, 1, 64);
  const queueSeconds = options.queueSeconds ?? 1.5;
  if (!(queueSeconds > 0 && queueSeconds <= 60))
    throw new RangeError(`fastify-onnx: queueSeconds must be in (0, 60], got ${queueSeconds}`);
  const shed = options.shed ?? true;
  const storageMs = checkInteger('storageMs', options.storageMs ?? 0, 0, 10_000);
  /** The model file through the store: `delayMs` of latency, then the bytes. */
  const readModel = async (delayMs: number): Promise<Uint8Array> => {
    if (delayMs > 0) await sleep(delayMs);
    return new Uint8Array(await readFile(modelPath));
  };

  // The OTel SDK, the Prometheus endpoint on loopback and the monitor, in one call.
  const telemetry: InferSignal = start({
    serviceName: 'fastify-onnx-example',
    prometheus: { host: '127.0.0.1', port: metricsPort },
    // onnxruntime-node runs the model on the main thread: a busy event loop here is the model working, and
    // admission is the `infer` queue's job. The event_loop signal is still measured and alerts; it only does not shed.
    thresholds: { eventLoop: { backpressure: false }, ...options.thresholds },
    onAlert: options.onAlert,
    exportMode: options.exportMode,
    registerGlobals: options.registerGlobals,
  });
  const monitor = telemetry.monitor;
  let session: MonitoredSession | undefined;
  let app: FastifyInstance | undefined;
  try {
    // Timed load (kind `load`): the model_load baseline starts here.
    session = await createSession(monitor, modelName, storageMs > 0 ? () => readModel(storageMs) : modelPath, {
      sessionOptions: { intraOpNumThreads: threads, interOpNumThreads: 1, executionProviders: ['cpu'] },
      // Requests and stream tokens meet here; the per-route queues bound how many of each.
      queue: { maxWaiting: 4096 },
    });
    const runSeconds = await warmUp(session, rows, 15);
    const inferCapacity = Math.max(8, Math.min(4096, Math.round(queueSeconds / runSeconds)));
    const inferQueue: QueueTracker = monitor.queue('infer', { concurrency: 1, capacity: inferCapacity });
    const completionsQueue: QueueTracker = monitor.queue('completions', {
      concurrency: streamConcurrency,
      capacity: streamConcurrency * 5,
    });
    const model = session;
    const inputName = model.inputNames[0];
    const outputName = model.outputNames[0];

    app = Fastify({ logger: false, keepAliveTimeout: 30_000 });

    // /v1/infer: one batched run per request, through the `infer` queue (1 at a time).
    await app.register(async (scope) => {
      await scope.register(inferSignal, { monitor, queue: inferQueue, shed, model: () => modelName });
      scope.post<{ Body: InferBody }>('/v1/infer', { schema: inferSchema }, async (request, reply) => {
        const signal = request.inferSignal!;
        const body = request.body ?? {};
        const batch = body.rows ?? rows;
        try {
          // The tensor is built once the request holds the model: waiting requests cost no tensor memory.
          const result = await signal.run(() => model.run({ [inputName]: inputTensor(body.input ?? [], batch) }));
          return {
            model: modelName,
            generation: model.loadInfo.generation,
            rows: batch,
            output: summarize(result[outputName] as ort.Tensor),
          };
        } catch (error) {
          if (error instanceof QueueFullError) return queueFull(reply, signal, error);
          if (error instanceof RequestEndedError || signal.signal.aborted)
            return reply.code(499).send({ error: 'client closed request' });
          throw error;
        }
      });
    });

    // /v1/completions: OpenAI-compatible, streamed or not, one token per model run.
    let completionSeq = 0;
    await app.register(async (scope) => {
      await scope.register(inferSignal, { monitor, queue: completionsQueue, shed, model: () => modelName });
      scope.post<{ Body: CompletionBody }>('/v1/completions', { schema: completionSchema }, async (request, reply) => {
        const signal = request.inferSignal!;
        const body = request.body ?? {};
        const prompt = Array.isArray(body.prompt) ? (body.prompt[0] ?? '') : (body.prompt ?? '');
        const maxTokens = body.max_tokens ?? 16;
        const id = `cmpl-${++completionSeq}`;
        const created = Math.floor(Date.now() / 1000);
        const chunk = (text: string, finish: string | null) => ({
          id,
          object: 'text_completion',
          created,
          model: modelName,
          choices: [{ index: 0, text, logprobs: null, finish_reason: finish }],
        });
        try {
          if (!body.stream) {
            const words: string[] = [];
            await signal.run(async () => {
              for await (const word of generateTokens(model, prompt, maxTokens, tokenRows, signal.signal))
                words.push(word);
            });
            return {
              ...chunk(words.map((w) => ` ${w}`).join(''), 'length'),
              usage: {
                prompt_tokens: prompt.split(/\s+/).filter(Boolean).length,
                completion_tokens: words.length,
                total_tokens: words.length,
              },
            };
          }
          // The SSE writer is opened once the stream holds a slot: a request refused by a full queue is
          // counted `rejected`, not as an interrupted stream, and time to first token includes the wait.
          await signal.run(async () => {
            const sse = signal.sse();
            let tokens = 0;
            for await (const word of generateTokens(model, prompt, maxTokens, tokenRows, signal.signal)) {
              if (sse.closed) return; // client gone: already counted `cancelled`
              sse.send(chunk(` ${word}`, null));
              tokens++;
            }
            sse.send(chunk('', tokens >= maxTokens ? 'length' : 'stop'), { tokens: 0 });
            sse.send('[DONE]', { tokens: 0 });
            sse.end();
          });
          return reply;
        } catch (error) {
          if (error instanceof QueueFullError) return queueFull(reply, signal, error);
          if (error instanceof RequestEndedError || signal.signal.aborted) {
            if (!reply.sent) return reply.code(499).send({ error: 'client closed request' });
            return reply;
          }
          if (reply.sent) {
            // After hijack Fastify no longer handles errors: count it and cut the stream.
            signal.fail();
            reply.raw.destroy(error as Error);
            return reply;
          }
          throw error;
        }
      });
    });

    app.get('/v1/models', async () => ({
      object: 'list',
      data: [{ id: modelName, object: 'model', owned_by: 'infersignal-example' }],
    }));
    app.get('/healthz/ready', readinessHandler(monitor));
    app.get('/healthz/live', async () => ({ ok: true }));

    // Hot reload: the old session serves until the new one is ready. `slowMs` simulates slow
    // storage (a loader that waits before handing over the file, instead of `storageMs`), which the load timing sees.
    app.post<{ Body: { slowMs?: number } | null }>(
      '/admin/reload',
      { schema: reloadSchema },
      async (request, reply) => {
        const slowMs = request.body?.slowMs ?? storageMs;
        try {
          const info = await model.reload(() => readModel(slowMs));
          const m = monitor.snapshot().models[modelName];
          return {
            model: modelName,
            generation: info.generation,
            seconds: info.seconds,
            baselineSeconds: m?.baselineSeconds ?? null,
            level: m?.level ?? 'ok',
          };
        } catch (error) {
          if (error instanceof ModelLoadError)
            return reply.code(500).send({ error: 'reload failed', reason: error.reason, message: error.message });
          throw error;
        }
      },
    );

    await app.listen({ host, port });
    const address = app.server.address();
    const boundPort = typeof address === 'object' && address ? address.port : port;
    const metrics = await telemetry.prometheus?.ready;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`;

    let closing: Promise<void> | undefined;
    const server = app;
    return {
      url,
      metricsUrl: metrics?.url ?? null,
      monitor,
      session: model,
      app: server,
      inferCapacity,
      runSeconds,
      close() {
        closing ??= (async () => {
          // Keep-alive clients (a load generator) would hold close() open; drop them.
          server.server.closeAllConnections();
          await server.close();
          await model.release();
          await telemetry.shutdown();
        })();
        return closing;
      },
    };
  } catch (error) {
    await app?.close().catch(() => undefined);
    await session?.release().catch(() => undefined);
    await telemetry.shutdown();
    throw error;
  }
}
