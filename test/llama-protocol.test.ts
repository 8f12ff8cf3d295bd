/**
 * The llama-completions example as a model server of the Gateway API Inference Extension: the OpenAI
 * Completions and Chat Completions APIs (streaming and not, abort, max_tokens, usage), and the protocol's
 * three gauges on /metrics, read through the engine config `infersignal-rules kubernetes` generates,
 * parsed as the endpoint picker parses them, current at every scrape, and `promtool check metrics` clean.
 * A real Fastify server on 127.0.0.1:0, a generated model run by node-llama-cpp, real HTTP clients.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_THRESHOLDS } from '../packages/core/src/config';
import { buildKubernetesManifests } from '@infersignal/rules';
import { engineConfig } from '../packages/rules/src/kubernetes';
import { startServer, type RunningServer } from '../examples/llama-completions/src/server';
import { findBinary } from '../packages/rules/test/helpers/binaries';
import { gate, until } from './support/async';
import { parseExposition, parseSpec, read, saturation, type EngineConfig } from './support/picker';

const promtool = findBinary('promtool');

/** The engine config exactly as the generated picker ConfigMap carries it. */
function generatedEngine(): EngineConfig {
  const file = buildKubernetesManifests({ queueName: 'llama:tiny-llama', model: 'tiny-llama' })['inference-pool.yaml']!;
  const configMap = file
    .split(/^---$/m)
    .map((doc) => parse(doc) as { kind: string; data?: Record<string, string> })
    .find((doc) => doc.kind === 'ConfigMap')!;
  const picker = parse(configMap.data!['epp-config.yaml']!) as {
    plugins: Array<{ type: string; parameters?: { engineConfigs?: EngineConfig[] } }>;
  };
  return picker.plugins.find((p) => p.type === 'core-metrics-extractor')!.parameters!.engineConfigs![0]!;
}

describe('examples/llama-completions speaks the model-server protocol', () => {
  let server: RunningServer;
  const engine = generatedEngine();
  beforeAll(async () => {
    server = await startServer({
      port: 0,
      sequences: 2,
      maxWaiting: 4,
      registerGlobals: false,
      thresholds: { eventLoop: { backpressure: false } },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const post = (path: string, body: unknown, signal?: AbortSignal) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });
  const scrape = async () => (await fetch(server.metricsUrl)).text();
  /** The queue's token backlog in a scrape: prompt tokens waiting, output tokens owed. */
  const backlog = (text: string) => {
    const value = (type: string) =>
      Number(
        new RegExp(
          `^infersignal_queue_tokens_pending\\{(?=[^}]*infersignal_queue_name="llama:tiny-llama")(?=[^}]*gen_ai_token_type="${type}")[^}]*\\} (\\S+)$`,
          'm',
        ).exec(text)?.[1],
      );
    return { input: value('input'), output: value('output') };
  };
  const events = async (response: Response) =>
    (await response.text())
      .split('\n\n')
      .filter(Boolean)
      .map((e) => e.slice('data: '.length));

  it('exports the three gauges from the start, KV utilization 0 before any sequence', async () => {
    expect(engine).toEqual(engineConfig({ queueName: 'llama:tiny-llama', model: 'tiny-llama' }));
    expect(engine.kvUsageSpec).toBe('infersignal_kv_cache_utilization_ratio{gen_ai_request_model="tiny-llama"}');
    const text = await scrape();
    expect(read(text, engine)).toEqual({ queued: 0, running: 0, kv: 0 });
    // Gauges, as the protocol types them.
    const families = parseExposition(text);
    for (const spec of [engine.queuedRequestsSpec, engine.runningRequestsSpec, engine.kvUsageSpec])
      expect(families.get(parseSpec(spec).name)?.type, spec).toBe('gauge');
  });

  it('answers Chat Completions as JSON with usage, bounded by max_tokens or max_completion_tokens', async () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Hello' }] },
    ];
    const response = await post('/v1/chat/completions', { messages, max_tokens: 6 });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      object: string;
      choices: Array<{ message: { role: string; content: string }; finish_reason: string }>;
      usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
    };
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0]!.message.role).toBe('assistant');
    expect(body.choices[0]!.message.content).toMatch(/^[\x20-\x7e]{6}$/);
    expect(body.choices[0]!.finish_reason).toBe('length');
    // The transcript the model saw: "system: Be brief.\nuser: Hello\nassistant:" (one token per byte plus BOS).
    const promptTokens = server.model.model.tokenize('system: Be brief.\nuser: Hello\nassistant:').length;
    expect(body.usage).toEqual({ prompt_tokens: promptTokens, completion_tokens: 6, total_tokens: promptTokens + 6 });

    const capped = await post('/v1/chat/completions', { messages, max_completion_tokens: 3, max_tokens: 9 });
    expect(((await capped.json()) as typeof body).usage.completion_tokens).toBe(3);
    expect((await post('/v1/chat/completions', { messages: [{ role: 'robot', content: 'x' }] })).status).toBe(400);
    expect((await post('/v1/chat/completions', { messages, max_completion_tokens: 0 })).status).toBe(400);
  });

  it('streams Chat Completions: a role chunk, one chunk per token, finish, usage on request, [DONE]', async () => {
    const response = await post('/v1/chat/completions', {
      messages: [{ role: 'user', content: 'Once upon a time' }],
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const data = await events(response);
    expect(data.at(-1)).toBe('[DONE]');
    const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const tokens = chunks.slice(1, 6).map((c) => c.choices[0].delta.content);
    expect(tokens.join('')).toMatch(/^[\x20-\x7e]{5}$/);
    expect(chunks[6].choices[0]).toMatchObject({ delta: {}, finish_reason: 'length' });
    expect(chunks[7].choices).toEqual([]);
    expect(chunks[7].usage.completion_tokens).toBe(5);
    expect(chunks).toHaveLength(8);
  });

  it('streams Completions with usage when asked, and without when not', async () => {
    const withUsage = await events(
      await post('/v1/completions', {
        prompt: ['hello'],
        max_tokens: 4,
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const last = JSON.parse(withUsage.at(-2)!);
    expect(last.usage).toMatchObject({ completion_tokens: 4 });
    const plain = await events(await post('/v1/completions', { prompt: 'hello', max_tokens: 4, stream: true }));
    expect(plain).toHaveLength(4 + 1 + 1);
    expect(plain.some((d) => d.includes('"usage"'))).toBe(false);
  });

  it('a chat client that leaves mid-stream stops its generation: cancelled, sequence free', async () => {
    const before = (await scrape()).match(/^infersignal_requests_total\{[^}]*"cancelled"[^}]*\} (\S+)$/m)?.[1];
    const controller = new AbortController();
    const response = await post(
      '/v1/chat/completions',
      { messages: [{ role: 'user', content: 'long' }], max_tokens: 400, stream: true },
      controller.signal,
    );
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await until(() => server.model.queue.inFlight === 0, 5000, 'the generation to stop');
    const after = (await scrape()).match(/^infersignal_requests_total\{[^}]*"cancelled"[^}]*\} (\S+)$/m)?.[1];
    expect(Number(after)).toBe(Number(before ?? 0) + 1);
    expect(server.model.kvCache().sequences.every((s) => !s.busy)).toBe(true);
  });

  it('reads the queue as it is at every scrape: waiting and running move with the sequences, no lag', async () => {
    const held = [gate(), gate()];
    const holders = held.map((g) => server.model.withSequence(() => g.wait));
    await until(() => server.model.queue.inFlight === 2, 5000, 'both sequences held');
    expect(read(await scrape(), engine)).toMatchObject({ queued: 0, running: 2 });
    const waiting = [1, 2, 3].map((i) => post('/v1/completions', { prompt: `w${i}`, max_tokens: 2 }));
    await until(() => server.model.queue.waiting === 3, 5000, 'three waiting');
    const loadedText = await scrape();
    const loaded = read(loadedText, engine);
    expect(loaded).toMatchObject({ queued: 3, running: 2 });
    // The LLM queue's token backlog in the same scrape: the three prompts waiting (the model's tokenizer);
    // the holders run without a token cost, so nothing is owed yet.
    const prompts = [1, 2, 3].reduce((sum, i) => sum + server.model.model.tokenize(`w${i}`).length, 0);
    expect(backlog(loadedText)).toEqual({ input: prompts, output: 0 });
    // The picker's view of this replica: 3 of 5 waiting.
    expect(saturation(loaded, DEFAULT_THRESHOLDS.saturation)).toBeCloseTo(3 / 5, 10);
    held[0]!.open();
    held[1]!.open();
    expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([200, 200, 200]);
    await Promise.all(holders);
    const drained = await scrape();
    expect(read(drained, engine)).toEqual({ queued: 0, running: 0, kv: 0 });
    expect(backlog(drained)).toEqual({ input: 0, output: 0 });
  });

  it('KV utilization counts the tokens of running generations only: > 0 while they run, 0 after', async () => {
    const controller = new AbortController();
    const streams = [0, 1].map(() =>
      post('/v1/completions', { prompt: 'a story', max_tokens: 200, stream: true }, controller.signal),
    );
    const readers = (await Promise.all(streams)).map((r) => r.body!.getReader());
    for (const reader of readers) for (let i = 0; i < 8; i++) await reader.read();
    const text = await scrape();
    const running = read(text, engine);
    expect(running.running).toBe(2);
    expect(running.kv).toBeGreaterThan(0);
    expect(running.kv).toBeLessThanOrEqual(1);
    // Output tokens owed: 2 × max_tokens less what the streams have produced so far (some, not all).
    const owed = backlog(text).output;
    expect(owed).toBeGreaterThan(0);
    expect(owed).toBeLessThan(2 * 200);
    if (promtool) {
      const check = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect(`${check.stdout}${check.stderr}`).toBe('');
      expect(check.status).toBe(0);
    }
    controller.abort();
    await until(() => server.model.queue.inFlight === 0, 5000, 'the generations to stop');
    const idle = await scrape();
    expect(read(idle, engine).kv).toBe(0);
    // The idle sequences still hold their prompts for prefix reuse: the token gauge shows them, utilization does not.
    expect(Number(/^infersignal_kv_cache_tokens\{[^}]*\} (\S+)$/m.exec(idle)?.[1])).toBeGreaterThan(0);
  });
});

describe('the picker-style parser refuses what the legacy text parser refuses', () => {
  it('a family split in two, a second TYPE, a bad sample line', () => {
    expect(() => parseExposition('# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{x="1"} 2\n')).toThrow(/appears twice/);
    expect(() => parseExposition('# TYPE a gauge\n# TYPE a gauge\na 1\n')).toThrow(/second TYPE/);
    expect(() => parseExposition('a{x="1" 1\n')).toThrow(/bad/);
    const ok = parseExposition(
      '# HELP h_seconds x\n# TYPE h_seconds histogram\nh_seconds_bucket{le="+Inf"} 2\nh_seconds_sum 1\nh_seconds_count 2\n# UNIT ignored\n',
    );
    expect(ok.get('h_seconds')?.samples).toHaveLength(3);
  });
});
