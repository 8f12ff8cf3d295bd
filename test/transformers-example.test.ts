/**
 * The transformers-embeddings example end to end: a real Fastify server on 127.0.0.1:0, the real
 * transformers.js library on the committed tiny BERT (remote models disabled), real HTTP clients, and
 * what a user sees on /metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../examples/transformers-embeddings/src/server';
import { embedding, ids, maxAbsDiff } from '../packages/transformers/test/helpers';
import { gate, until } from './support/async';

describe('examples/transformers-embeddings', () => {
  let server: RunningServer;
  beforeAll(async () => {
    // Event-loop backpressure off: start-up stalls the loop on a busy machine, and shedding on that would make
    // these answers depend on the machine's speed. No shedding hold: the 503 test sheds, and the tests after it
    // start from a queue that serves again as soon as its level has cleared.
    server = await startServer({
      port: 0,
      metricsPort: 0,
      maxWaiting: 2,
      registerGlobals: false,
      thresholds: { eventLoop: { backpressure: false }, queue: { shedHoldSeconds: 0 } },
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
  const metrics = async () => (await fetch(server.metricsUrl!)).text();
  const sample = (text: string, name: string, labels: string) =>
    Number(new RegExp(`^${name}\\{[^}]*${labels}[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);

  it('answers OpenAI-style embeddings with the model’s vectors and usage', async () => {
    const input = ['the cat sat on the mat', 'a dog ran'];
    const response = await post('/v1/embeddings', { input, model: 'tiny-bert-embed' });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      object: string;
      model: string;
      data: Array<{ object: string; index: number; embedding: number[] }>;
      usage: { prompt_tokens: number; total_tokens: number };
    };
    expect(body).toMatchObject({ object: 'list', model: 'tiny-bert-embed' });
    expect(body.data.map((d) => [d.object, d.index])).toEqual([
      ['embedding', 0],
      ['embedding', 1],
    ]);
    for (const d of body.data) expect(maxAbsDiff(d.embedding, embedding(input[d.index]))).toBeLessThan(1e-6);
    const tokens = ids(input[0]).length + ids(input[1]).length;
    expect(body.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });

    const b64 = (await (await post('/v1/embeddings', { input: 'good movie', encoding_format: 'base64' })).json()) as {
      data: Array<{ embedding: string }>;
    };
    const bytes = Buffer.from(b64.data[0].embedding, 'base64');
    const vector = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
    expect(maxAbsDiff(vector, embedding('good movie'))).toBeLessThan(1e-6);

    expect((await post('/v1/embeddings', {})).status).toBe(400);
    expect((await post('/v1/embeddings', { input: 'x', model: 'other' })).status).toBe(404);
  });

  it('past its waiting room it answers 503 with Retry-After; a client closed while waiting is cancelled', async () => {
    const before = await metrics();
    const held = gate();
    // Occupies the model's only slot, as a long call would.
    const holder = server.pipeline.queue.run(() => held.wait);
    const controller = new AbortController();
    const leaving = post('/v1/embeddings', { input: 'a' }, controller.signal).catch((e: Error) => e.name);
    const staying = post('/v1/embeddings', { input: 'b' });
    await until(() => server.pipeline.queue.waiting === 2, 5000, 'two waiting');
    const refused = await post('/v1/embeddings', { input: 'c' });
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // One of the waiting clients gives up: its call leaves the queue and never runs.
    controller.abort();
    expect(await leaving).toBe('AbortError');
    await until(() => server.pipeline.queue.waiting === 1, 5000, 'one waiting');
    held.open();
    await holder;
    expect((await staying).status).toBe(200);
    const after = await metrics();
    const count = (text: string, outcome: string) => {
      const value = sample(text, 'infersignal_requests_total', `infersignal_outcome="${outcome}"`);
      return Number.isNaN(value) ? 0 : value;
    };
    expect(count(after, 'rejected') - count(before, 'rejected')).toBe(1);
    // The server sees the close on its own time: bounded poll.
    const deadline = Date.now() + 5000;
    while (count(await metrics(), 'cancelled') - count(before, 'cancelled') < 1 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(count(await metrics(), 'cancelled') - count(before, 'cancelled')).toBe(1);
  });

  it('reloads while serving; a corrupt model keeps the old one and the failure shows on /metrics', async () => {
    const bad = await post('/admin/reload', { modelId: 'tiny-bert-embed-corrupt' });
    expect(bad.status).toBe(500);
    expect(await bad.json()).toMatchObject({ reason: 'corrupt' });
    const reload = post('/admin/reload', {});
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await post('/v1/embeddings', { input: 'the cat' })).status);
    expect(await (await reload).json()).toMatchObject({ generation: 2, modelId: 'tiny-bert-embed' });
    expect(statuses).toEqual(Array(6).fill(200));
    const text = await metrics();
    expect(sample(text, 'infersignal_model_load_duration_seconds_count', 'infersignal_outcome="error"')).toBe(1);
    expect(
      sample(text, 'infersignal_queue_wait_duration_seconds_count', 'infersignal_queue_name="embeddings"'),
    ).toBeGreaterThan(0);
  });
});
