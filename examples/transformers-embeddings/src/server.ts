/**
 * OpenAI-compatible embeddings on Fastify 5 over a transformers.js
 * feature-extraction pipeline, instrumented from the inside with InferSignal:
 *
 *   POST /v1/embeddings   `{ input: string | string[], model?, encoding_format?: 'float' | 'base64' }`
 *                         → `{ object: 'list', data: [{ object: 'embedding', index, embedding }], model, usage }`
 *   GET  /v1/models       the model served
 *   GET  /healthz/ready   503 while any signal is CRITICAL, else 200 + snapshot
 *   POST /admin/reload    hot reload (optionally from another folder); a failed load keeps the old model serving
 *
 * and a Prometheus endpoint on 127.0.0.1 (default :9464/metrics) from `@infersignal/node`.
 *
 * Models come from local folders only (`env.allowRemoteModels = false`):
 * by default the tiny BERT that scripts/make-transformers-models.py commits,
 * or MODEL_DIR/MODEL_ID for a real one (e.g. all-MiniLM-L6-v2 copied there).
 *
 * One core queue, `embeddings`, runs the pipeline one call at a time; a call
 * past `maxWaiting` waiting calls, or while the queue is CRITICAL, is
 * answered 503 with Retry-After (counted `rejected`); a client that closes
 * while its call waits is counted `cancelled` and never runs.
 */
import { fileURLToPath } from 'node:url';
import { env } from '@huggingface/transformers';
import * as transformers from '@huggingface/transformers';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  ModelLoadError,
  QueueFullError,
  type AlertListener,
  type Monitor,
  type ThresholdsInput,
} from '@infersignal/core';
import { readinessHandler } from '@infersignal/fastify';
import { start } from '@infersignal/node';
import { createPipeline, type MonitoredPipeline } from '@infersignal/transformers';

/** The committed tiny models' folder (scripts/make-transformers-models.py). */
export const DEFAULT_MODEL_DIR = fileURLToPath(
  new URL('../../../packages/transformers/test/fixtures/', import.meta.url),
);

export interface ServerOptions {
  host?: string;
  /** Port of the API. Default 3000; 0 picks a free one. */
  port?: number;
  /** Port of the Prometheus endpoint (always on 127.0.0.1). Default 9464; 0 picks a free one. */
  metricsPort?: number;
  /** Folder transformers.js reads models from (`env.localModelPath`). Default: the committed tiny models. */
  modelDir?: string;
  /** Model folder under `modelDir`. Default `tiny-bert-embed`. */
  modelId?: string;
  /** Name in the API and on the metrics. Default the model id. */
  modelName?: string;
  /** Calls waiting for the model before a new one is refused (default 32). */
  maxWaiting?: number;
  /** Answer 503 + Retry-After at CRITICAL backpressure (default true). */
  shed?: boolean;
  /** Largest `input` array (default 64). */
  maxInputs?: number;
  thresholds?: ThresholdsInput;
  onAlert?: AlertListener;
  /** Register the OTel SDK as the process's globals (default true; false when embedding twice in one process). */
  registerGlobals?: boolean;
}

export interface RunningServer {
  url: string;
  metricsUrl: string | null;
  monitor: Monitor;
  pipeline: MonitoredPipeline<'feature-extraction'>;
  app: FastifyInstance;
  close(): Promise<void>;
}

interface EmbeddingsBody {
  input: string | string[];
  model?: string;
  encoding_format?: 'float' | 'base64';
  user?: string;
}

export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const modelId = options.modelId ?? 'tiny-bert-embed';
  const modelName = options.modelName ?? modelId;
  const maxInputs = options.maxInputs ?? 64;
  // Local folders only: nothing is ever downloaded.
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = options.modelDir ?? DEFAULT_MODEL_DIR;

  const telemetry = start({
    serviceName: 'transformers-embeddings-example',
    prometheus: { host: '127.0.0.1', port: options.metricsPort ?? 9464 },
    thresholds: options.thresholds,
    onAlert: options.onAlert,
    registerGlobals: options.registerGlobals,
  });
  const monitor = telemetry.monitor;
  let pipeline: MonitoredPipeline<'feature-extraction'> | undefined;
  let app: FastifyInstance | undefined;
  try {
    pipeline = await createPipeline(monitor, modelName, 'feature-extraction', modelId, {
      runtime: transformers,
      pipelineOptions: { local_files_only: true },
      queue: { name: 'embeddings', maxWaiting: options.maxWaiting ?? 32 },
      shed: options.shed ?? true,
    });
    const model = pipeline;
    app = Fastify({ logger: false });

    const schema = {
      body: {
        type: 'object',
        required: ['input'],
        properties: {
          input: {
            anyOf: [
              { type: 'string', minLength: 1, maxLength: 20_000 },
              {
                type: 'array',
                minItems: 1,
                maxItems: maxInputs,
                items: { type: 'string', minLength: 1, maxLength: 20_000 },
              },
            ],
          },
          model: { type: 'string', maxLength: 200 },
          encoding_format: { enum: ['float', 'base64'] },
          user: { type: 'string', maxLength: 200 },
        },
      },
    } as const;

    app.post<{ Body: EmbeddingsBody }>('/v1/embeddings', { schema }, async (request, reply) => {
      const body = request.body;
      if (body.model !== undefined && body.model !== modelName)
        return reply
          .code(404)
          .send({ error: { type: 'invalid_request_error', message: `model "${body.model}" is not served here` } });
      const texts = typeof body.input === 'string' ? [body.input] : body.input;
      // A client that goes away while its call waits frees its place in the queue.
      const controller = new AbortController();
      // The response's close, not the request's: the request stream closes once its body has been read.
      const onClose = () => {
        if (!reply.raw.writableEnded) controller.abort();
      };
      reply.raw.on('close', onClose);
      let promptTokens = 0;
      try {
        const out = await model.run(
          texts,
          { pooling: 'mean', normalize: true },
          { signal: controller.signal, onUsage: (usage) => (promptTokens = usage.inputTokens) },
        );
        const width = out.dims[1];
        const data = out.data as Float32Array;
        return {
          object: 'list',
          data: texts.map((_, index) => {
            const row = data.subarray(index * width, (index + 1) * width);
            return {
              object: 'embedding',
              index,
              embedding:
                body.encoding_format === 'base64'
                  ? Buffer.from(row.buffer, row.byteOffset, row.byteLength).toString('base64')
                  : Array.from(row),
            };
          }),
          model: modelName,
          usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
        };
      } catch (error) {
        if (error instanceof QueueFullError)
          return reply
            .code(503)
            .header('retry-after', String(Math.max(1, Math.ceil(error.retryAfterSeconds))))
            .send({ error: { type: 'overloaded', message: 'The embeddings queue is full; retry later.' } });
        if (controller.signal.aborted) return reply.code(499).send({ error: { type: 'client_closed_request' } });
        throw error;
      } finally {
        reply.raw.off('close', onClose);
      }
    });

    app.get('/v1/models', async () => ({
      object: 'list',
      data: [{ id: modelName, object: 'model', owned_by: 'infersignal-example' }],
    }));
    app.get('/healthz/ready', readinessHandler(monitor));
    app.post<{ Body: { modelId?: string } | null }>(
      '/admin/reload',
      {
        schema: {
          body: { type: ['object', 'null'], properties: { modelId: { type: 'string', minLength: 1, maxLength: 200 } } },
        },
      },
      async (request, reply) => {
        try {
          const info = await model.reload(request.body?.modelId);
          return { model: modelName, generation: info.generation, modelId: info.modelId, seconds: info.seconds };
        } catch (error) {
          if (error instanceof ModelLoadError)
            return reply.code(500).send({ error: 'reload failed', reason: error.reason, message: error.message });
          throw error;
        }
      },
    );

    await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 3000 });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const metrics = await telemetry.prometheus?.ready;
    const server = app;
    let closing: Promise<void> | undefined;
    return {
      url: `http://${options.host ?? '127.0.0.1'}:${port}`,
      metricsUrl: metrics?.url ?? null,
      monitor,
      pipeline: model,
      app: server,
      close() {
        closing ??= (async () => {
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
    await pipeline?.release().catch(() => undefined);
    await telemetry.shutdown();
    throw error;
  }
}
