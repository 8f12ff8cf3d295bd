/**
 * The llama-completions example end to end: a real Fastify server on 127.0.0.1:0, a generated model run
 * by node-llama-cpp, real HTTP clients; what the issue promises a user sees on /metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../examples/llama-completions/src/server';
import { gate, until } from './support/async';

describe('examples/llama-completions', () => {
  let server: RunningServer;
  beforeAll(async () => {
    // Event-loop backpressure off: start-up and model loads stall the loop for a few hundred ms on a busy
    // machine, and a queue shedding on that would make these answers depend on the machine's speed.
    server = await startServer({
      port: 0,
      sequences: 2,
      maxWaiting: 2,
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
  const metrics = async () => (await fetch(server.metricsUrl)).text();
  const sample = (text: string, name: string, labels: string) =>
    Number(new RegExp(`^${name}\\{[^}]*${labels}[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);

  it('streams an OpenAI-style completion as server-sent events, one chunk per token', async () => {
    const response = await post('/v1/completions', { prompt: 'Once upon a time', max_tokens: 12, stream: true });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const events = (await response.text()).split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)));
    expect(chunks).toHaveLength(13);
    expect(chunks.every((c) => c.object === 'text_completion' && c.model === 'tiny-llama')).toBe(true);
    expect(chunks.at(-1).choices[0]).toMatchObject({ text: '', finish_reason: 'length' });
    expect(
      chunks
        .slice(0, -1)
        .map((c) => c.choices[0].text)
        .join(''),
    ).toMatch(/^[\x20-\x7e]{12}$/);
  });

  it('answers JSON with usage when not streaming', async () => {
    const response = await post('/v1/completions', { prompt: 'hello world', max_tokens: 5 });
    const body = (await response.json()) as { usage: unknown; choices: Array<{ text: string }> };
    expect(body.usage).toEqual({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
    expect(body.choices[0]).toMatchObject({ finish_reason: 'length' });
    expect(body.choices[0].text).toHaveLength(5);
    expect((await post('/v1/completions', { prompt: '' })).status).toBe(400);
  });

  it('past its sequences and waiting room it answers 503 with Retry-After, and counts them rejected', async () => {
    const held = [gate(), gate()];
    const holders = held.map((g) => server.model.withSequence(() => g.wait));
    const waiting = [
      post('/v1/completions', { prompt: 'a', max_tokens: 2 }),
      post('/v1/completions', { prompt: 'b', max_tokens: 2 }),
    ];
    await until(() => server.model.queue.waiting === 2, 5000, 'two waiting');
    const refused = await post('/v1/completions', { prompt: 'c', max_tokens: 2 });
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    for (const g of held) g.open();
    expect((await Promise.all(waiting)).map((r) => r.status)).toEqual([200, 200]);
    await Promise.all(holders);
    expect(sample(await metrics(), 'infersignal_requests_total', 'infersignal_outcome="rejected"')).toBe(1);
    // Shedding is an episode: the drained queue admits at once (nothing ahead to wait for), and the episode
    // (level CRITICAL, readiness failing) ends once none was shed for queue.shedHoldSeconds (3 s).
    expect(server.model.queue.level()).toBe('critical');
    expect(server.model.queue.admit().admit).toBe(true);
    await until(() => server.model.queue.level() !== 'critical', 10_000, 'the episode to end after its hold');
    expect(server.model.queue.admit().admit).toBe(true);
  });

  it('a client that leaves mid-stream stops its generation: cancelled, sequence free', async () => {
    const controller = new AbortController();
    const response = await post(
      '/v1/completions',
      { prompt: 'long', max_tokens: 400, stream: true },
      controller.signal,
    );
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await until(() => server.model.queue.inFlight === 0, 5000, 'the generation to stop');
    const text = await metrics();
    // The client's cancel, not the write-stall cancels (their own series, at 0).
    const cancels = text
      .split('\n')
      .filter(
        (line) => line.startsWith('infersignal_streams_total{') && line.includes('infersignal_outcome="cancelled"'),
      )
      .map((line) => [line.includes('error_type="write_stall"'), Number(line.slice(line.lastIndexOf(' ') + 1))]);
    expect(cancels.sort()).toEqual([
      [false, 1],
      [true, 0],
    ]);
    expect(sample(text, 'infersignal_requests_total', 'infersignal_outcome="cancelled"')).toBe(1);
    expect(server.model.kvCache().sequences.every((s) => !s.busy)).toBe(true);
  });

  it('exposes the llama signals on /metrics and reloads while serving', async () => {
    const broken = await post('/admin/reload', { defect: 'missing-tensor' });
    expect(broken.status).toBe(422);
    expect(await broken.json()).toMatchObject({ reloaded: false, reason: 'missing_tensor', serving: 1 });
    const fixed = await post('/admin/reload', { seed: 9 });
    expect(await fixed.json()).toMatchObject({ reloaded: true, generation: 2 });
    expect((await post('/v1/completions', { prompt: 'after', max_tokens: 3 })).status).toBe(200);
    server.model.kvCacheMemory?.sample();
    const text = await metrics();
    const model = 'gen_ai_request_model="tiny-llama"';
    expect(sample(text, 'gen_ai_server_time_to_first_token_seconds_count', model)).toBeGreaterThanOrEqual(5);
    expect(sample(text, 'infersignal_kv_cache_capacity', model)).toBe(512);
    expect(sample(text, 'infersignal_kv_cache_tokens', model)).toBe(server.model.kvCache().tokens);
    expect(sample(text, 'infersignal_device_memory_reserved_bytes', 'llama-kv:tiny-llama')).toBe(512 * 512);
    expect(sample(text, 'infersignal_model_load_duration_seconds_count', 'infersignal_outcome="error"')).toBe(1);
  });
});
