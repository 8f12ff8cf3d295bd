/**
 * A Fastify 5 server answering the OpenAI Completions and Chat Completions APIs from a GGUF model run by
 * node-llama-cpp, instrumented from the inside with InferSignal: a model server of the Gateway API
 * Inference Extension's protocol (docs/kubernetes.md):
 *
 *   POST /v1/completions       { prompt, max_tokens, stream, stream_options }: JSON with usage, or with
 *                              `stream: true` server-sent events (one per text chunk, then `data: [DONE]`)
 *   POST /v1/chat/completions  { messages, max_tokens | max_completion_tokens, stream, stream_options }:
 *                              the same as chat.completion / chat.completion.chunk objects
 *   GET  /v1/models            the model served
 *   GET  /metrics              Prometheus text (Collector naming), from @infersignal/node; the protocol's
 *                              gauges: infersignal_queue_waiting, _in_flight, infersignal_kv_cache_utilization_ratio
 *   GET  /healthz/ready        503 while any signal is CRITICAL, else 200; the body is the monitor's snapshot
 *   POST /admin/reload         { seed?, defect? }: generates a model (or a broken one) and hot-reloads it
 *
 * Without MODEL_PATH the model is generated at start (scripts/make-gguf.ts, printable, ~470 KB): nothing
 * is downloaded. Generations wait in `@infersignal/llama`'s queue for one of the context's sequences;
 * when the queue is CRITICAL a request is refused with 503 + Retry-After. A client that disconnects
 * aborts its generation (counted `cancelled`); one that outlives `requestTimeoutMs` is `deadline_exceeded`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { getLlama, type Llama } from 'node-llama-cpp';
import {
  ModelLoadError,
  QueueFullError,
  type AlertListener,
  type Monitor,
  type ThresholdsInput,
} from '@infersignal/core';
import { createLlamaModel, type MonitoredLlamaModel } from '@infersignal/llama';
import { start } from '@infersignal/node';
import { writeGguf, type GgufDefect } from '../../../scripts/make-gguf';

export interface ServerOptions {
  /** Interface of the API. Default `127.0.0.1`. */
  host?: string;
  /** Port. Default 3000; 0 picks a free one. */
  port?: number;
  /** A GGUF file to serve; default: one generated at start. */
  modelPath?: string;
  /** Model label. Default `tiny-llama`. */
  modelName?: string;
  /** Context sequences: generations at once (default 2). */
  sequences?: number;
  /** Tokens per sequence (default 256). */
  contextSize?: number;
  /** llama.cpp threads (default 1; more than the physical cores slows it down a lot). */
  threads?: number;
  /** Generations waiting for a sequence before 503 (default 8 per sequence). */
  maxWaiting?: number;
  /** Longest a request may take, queue wait included (default 30 000 ms). */
  requestTimeoutMs?: number;
  /** Largest `max_tokens` accepted (default 512). */
  maxTokensLimit?: number;
  thresholds?: ThresholdsInput;
  onAlert?: AlertListener;
  /** Register the OTel SDK as the process's globals (default true). */
  registerGlobals?: boolean;
}

export interface RunningServer {
  url: string;
  metricsUrl: string;
  monitor: Monitor;
  model: MonitoredLlamaModel;
  app: FastifyInstance;
  close(): Promise<void>;
}

interface GenerationFields {
  max_tokens?: unknown;
  stream?: unknown;
  stream_options?: unknown;
  temperature?: unknown;
}

interface CompletionBody extends GenerationFields {
  prompt?: unknown;
}

interface ChatBody extends GenerationFields {
  messages?: unknown;
  max_completion_tokens?: unknown;
}

type Api = 'text' | 'chat';

interface GenerationRequest {
  prompt: string;
  maxTokens: number;
  temperature: number;
  stream: boolean;
  includeUsage: boolean;
}

export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const modelName = options.modelName ?? 'tiny-llama';
  const sequences = options.sequences ?? 2;
  const maxTokensLimit = options.maxTokensLimit ?? 512;
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  const dir = mkdtempSync(join(tmpdir(), 'infersignal-llama-example-'));
  const generate = (seed: number, defect?: GgufDefect) =>
    writeGguf(join(dir, `${defect ?? 'model'}-${seed}.gguf`), { printable: true, seed, defect });

  const telemetry = start({
    serviceName: 'llama-completions',
    prometheus: { mount: true },
    thresholds: options.thresholds,
    onAlert: options.onAlert,
    registerGlobals: options.registerGlobals,
  });
  const monitor = telemetry.monitor;
  let llama: Llama | undefined;
  let model: MonitoredLlamaModel | undefined;
  let app: FastifyInstance | undefined;
  try {
    llama = await getLlama({ gpu: false, build: 'never', maxThreads: options.threads ?? 1 });
    model = await createLlamaModel(monitor, modelName, options.modelPath ?? generate(1), {
      llama,
      sequences,
      contextOptions: { contextSize: options.contextSize ?? 256, threads: options.threads ?? 1 },
      maxWaiting: options.maxWaiting ?? 8 * sequences,
      shed: true,
    });
    const served = model;
    app = Fastify({ logger: false });

    /**
     * One generation for either API: the client's disconnect and the server's deadline, whichever comes
     * first, stop it; streaming sends the head with the first chunk, so a refused request still gets a status.
     */
    const serve = async (reply: FastifyReply, api: Api, req: GenerationRequest) => {
      const client = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) client.abort();
      });
      const signal = AbortSignal.any([client.signal, AbortSignal.timeout(requestTimeoutMs)]);
      const id = `${api === 'chat' ? 'chatcmpl' : 'cmpl'}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
      const created = Math.floor(Date.now() / 1000);
      const head = { id, object: '', created, model: modelName };
      // OpenAI's prompt_tokens is the prompt's length; llama.cpp evaluated fewer when it reused a prefix.
      const usage = (outputTokens: number) => {
        const promptTokens = served.model.tokenize(req.prompt).length;
        return {
          prompt_tokens: promptTokens,
          completion_tokens: outputTokens,
          total_tokens: promptTokens + outputTokens,
        };
      };

      if (!req.stream) {
        try {
          const result = await served.complete(req.prompt, {
            maxTokens: req.maxTokens,
            temperature: req.temperature,
            signal,
          });
          const finish = finishReason(result.metadata.stopReason);
          const choice =
            api === 'chat'
              ? {
                  index: 0,
                  message: { role: 'assistant', content: result.response },
                  logprobs: null,
                  finish_reason: finish,
                }
              : { text: result.response, index: 0, logprobs: null, finish_reason: finish };
          return reply.send({
            ...head,
            object: api === 'chat' ? 'chat.completion' : 'text_completion',
            choices: [choice],
            usage: usage(result.usage.outputTokens),
          });
        } catch (e) {
          return failure(reply, e, signal);
        }
      }

      const object = api === 'chat' ? 'chat.completion.chunk' : 'text_completion';
      const chunk = (text: string | null, finish: string | null, role = false) =>
        JSON.stringify({
          ...head,
          object,
          choices: [
            api === 'chat'
              ? {
                  index: 0,
                  delta: finish !== null ? {} : role ? { role: 'assistant', content: '' } : { content: text },
                  logprobs: null,
                  finish_reason: finish,
                }
              : { text: text ?? '', index: 0, logprobs: null, finish_reason: finish },
          ],
        });
      let open = false;
      const write = (data: string) => {
        if (!open) {
          open = true;
          reply.hijack();
          reply.raw.writeHead(200, {
            'content-type': 'text/event-stream',
            'cache-control': 'no-cache',
            connection: 'keep-alive',
          });
          if (api === 'chat') reply.raw.write(`data: ${chunk(null, null, true)}\n\n`);
        }
        reply.raw.write(`data: ${data}\n\n`);
      };
      try {
        const result = await served.complete(req.prompt, {
          maxTokens: req.maxTokens,
          temperature: req.temperature,
          signal,
          onTextChunk: (text) => write(chunk(text, null)),
        });
        write(chunk(api === 'chat' ? null : '', finishReason(result.metadata.stopReason)));
        // stream_options.include_usage: one more chunk, no choices, the usage (OpenAI's shape).
        if (req.includeUsage)
          write(JSON.stringify({ ...head, object, choices: [], usage: usage(result.usage.outputTokens) }));
        write('[DONE]');
        reply.raw.end();
      } catch (e) {
        if (!open) return failure(reply, e, signal);
        // After the head the status is sent: say what happened in the stream, then cut it.
        if (!client.signal.aborted) reply.raw.end(`data: ${JSON.stringify(error(messageOf(e)))}\n\n`);
      }
    };

    app.post<{ Body: CompletionBody }>('/v1/completions', async (request, reply) => {
      const body = request.body ?? {};
      // A one-element array is the same prompt (clients batch; one choice per request here).
      const prompt = Array.isArray(body.prompt) && body.prompt.length === 1 ? body.prompt[0] : body.prompt;
      if (typeof prompt !== 'string' || prompt === '')
        return reply.code(400).send(error('`prompt` must be a non-empty string'));
      const common = commonFields(body, maxTokensLimit);
      if (typeof common === 'string') return reply.code(400).send(error(common));
      return serve(reply, 'text', { prompt, ...common });
    });

    app.post<{ Body: ChatBody }>('/v1/chat/completions', async (request, reply) => {
      const body = request.body ?? {};
      const prompt = chatPrompt(body.messages);
      if (prompt === null)
        return reply
          .code(400)
          .send(
            error('`messages` must be a non-empty array of { role: system|developer|user|assistant, content: string }'),
          );
      const common = commonFields(
        { ...body, max_tokens: body.max_completion_tokens ?? body.max_tokens },
        maxTokensLimit,
        'max_completion_tokens',
      );
      if (typeof common === 'string') return reply.code(400).send(error(common));
      return serve(reply, 'chat', { prompt, ...common });
    });

    app.get('/v1/models', async () => ({
      object: 'list',
      data: [{ id: modelName, object: 'model', owned_by: 'infersignal-example' }],
    }));

    app.get('/metrics', (request, reply) => {
      reply.hijack();
      telemetry.metricsHandler!(request.raw, reply.raw);
    });

    app.get('/healthz/ready', async (_request, reply) => {
      const snapshot = monitor.snapshot();
      return reply.code(snapshot.level === 'critical' ? 503 : 200).send(snapshot);
    });

    app.post<{ Body: { seed?: unknown; defect?: unknown } }>('/admin/reload', async (request, reply) => {
      const seed = typeof request.body?.seed === 'number' ? request.body.seed : Date.now() % 1000;
      const defect = request.body?.defect as GgufDefect | undefined;
      try {
        const info = await served.reload(generate(seed, defect));
        return reply.send({
          reloaded: true,
          generation: info.generation,
          seconds: info.modelSeconds + info.contextSeconds,
        });
      } catch (e) {
        if (!(e instanceof ModelLoadError)) throw e;
        return reply
          .code(422)
          .send({ reloaded: false, reason: e.reason, detail: e.detail, serving: served.loadInfo.generation });
      }
    });

    const url = await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 3000 });
    const server = app;
    const ownLlama = llama;
    return {
      url,
      metricsUrl: `${url}/metrics`,
      monitor,
      model: served,
      app: server,
      async close() {
        server.server.closeAllConnections();
        await server.close();
        await served.release();
        // Bounded: node-llama-cpp 3.21.1 may never settle it after a reload llama.cpp rejected (packages/llama/README.md).
        await Promise.race([ownLlama.dispose(), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
        await telemetry.shutdown();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await app?.close().catch(() => undefined);
    await model?.release().catch(() => undefined);
    await llama?.dispose().catch(() => undefined);
    await telemetry.shutdown();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/** The fields both APIs share, or the one-line reason they are refused. */
function commonFields(
  body: GenerationFields,
  limit: number,
  maxTokensField = 'max_tokens',
): Omit<GenerationRequest, 'prompt'> | string {
  const maxTokens = body.max_tokens ?? 16;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > limit)
    return `\`${maxTokensField}\` must be an integer from 1 to ${limit}`;
  const options = body.stream_options as { include_usage?: unknown } | undefined;
  return {
    maxTokens,
    temperature: typeof body.temperature === 'number' ? body.temperature : 0,
    stream: body.stream === true,
    includeUsage: body.stream === true && options?.include_usage === true,
  };
}

const CHAT_ROLES = new Set(['system', 'developer', 'user', 'assistant']);

/**
 * The conversation as one prompt: a plain `role: content` transcript ending in `assistant:`. The generated
 * model has no chat template; a real model's own template (node-llama-cpp's LlamaChat) would go here.
 */
function chatPrompt(messages: unknown): string | null {
  if (!Array.isArray(messages) || messages.length === 0) return null;
  let prompt = '';
  for (const message of messages as Array<{ role?: unknown; content?: unknown }>) {
    if (typeof message !== 'object' || message === null || !CHAT_ROLES.has(message.role as string)) return null;
    // Content is a string, or text parts ({ type: 'text', text }).
    const content = Array.isArray(message.content)
      ? (message.content as Array<{ type?: unknown; text?: unknown }>).every(
          (part) => part?.type === 'text' && typeof part.text === 'string',
        )
        ? (message.content as Array<{ text: string }>).map((part) => part.text).join('')
        : null
      : message.content;
    if (typeof content !== 'string') return null;
    prompt += `${message.role}: ${content}\n`;
  }
  return `${prompt}assistant:`;
}

function finishReason(stopReason: string): string {
  return stopReason === 'maxTokens' ? 'length' : 'stop';
}

function error(message: string) {
  return { error: { message, type: 'invalid_request_error' } };
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A request that never started streaming: 503 + Retry-After when shed, 504 past its deadline, 499 when the client left. */
function failure(reply: FastifyReply, e: unknown, signal: AbortSignal) {
  if (e instanceof QueueFullError)
    return reply
      .code(503)
      .header('retry-after', String(e.retryAfterSeconds))
      .send({ error: { message: 'overloaded: try again later', type: 'server_overloaded' } });
  if (signal.aborted) {
    const timeout = (signal.reason as { name?: string } | undefined)?.name === 'TimeoutError';
    return reply
      .code(timeout ? 504 : 499)
      .send({ error: { message: timeout ? 'deadline exceeded' : 'client closed request', type: 'aborted' } });
  }
  throw e;
}
