import { request, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { createPipeline } from '@infersignal/transformers';
import { PipelineLoadError, PipelineReleasedError } from '../src/errors';
import { PIPELINE_OPTIONS, embedding, harness, maxAbsDiff, offline, transformers, type Harness } from './helpers';

let h: Harness;
let server: Server | undefined;
beforeAll(offline);
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await h?.close();
});

const options = { runtime: transformers, pipelineOptions: PIPELINE_OPTIONS };

describe('reload', () => {
  it('records load and reload durations; a reload over 3× baseline raises exactly one spike alert', async () => {
    // transformers.js calls progress_callback with `ready` at the end of pipeline(), inside the timed load:
    // moving the monitor's clock there makes each load take exactly the chosen time, whatever this machine does.
    const now = { ms: 1_000_000 };
    const next = { ms: 400 };
    h = harness({ clock: () => now.ms });
    const progress_callback = (p: { status: string }) => {
      if (p.status === 'ready') now.ms += next.ms;
    };
    const embed = await createPipeline(h.monitor, 'embed', 'feature-extraction', 'tiny-bert-embed', {
      runtime: transformers,
      pipelineOptions: { ...PIPELINE_OPTIONS, progress_callback },
    });
    await embed.reload();
    next.ms = 3000;
    const slow = await embed.reload();
    next.ms = 400;
    await embed.reload();
    expect(slow.generation).toBe(3);
    expect(embed.loadInfo).toMatchObject({ generation: 4, kind: 'reload', modelId: 'tiny-bert-embed' });

    const load = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.loadKind]: 'load',
      [ATTR.outcome]: 'success',
    });
    const reload = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.loadKind]: 'reload',
      [ATTR.outcome]: 'success',
    });
    expect(load?.count).toBe(1);
    expect(load!.sum).toBeCloseTo(0.4, 9);
    expect(reload?.count).toBe(3);
    expect(reload!.sum).toBeCloseTo(0.4 + 3 + 0.4, 9);
    const spikes = h.alerts.filter((a) => a.signal === 'model_load' && a.level !== 'ok');
    expect(spikes).toHaveLength(1);
    expect(spikes[0].labels).toEqual({ model: 'embed' });
    expect((spikes[0].details as { ratio: number }).ratio).toBeCloseTo(7.5, 9);
    const out = await embed.run('the cat', { pooling: 'mean', normalize: true });
    expect(maxAbsDiff(out.data as Float32Array, embedding('the cat'))).toBeLessThan(1e-6);
    await embed.release();
  });

  it('a corrupt model keeps the old pipeline serving, with no failed call', async () => {
    h = harness();
    const embed = await createPipeline(h.monitor, 'embed', 'feature-extraction', 'tiny-bert-embed', options);
    const before = embed.pipeline;
    const calls = Array.from({ length: 8 }, () => embed.run('a dog ran', { pooling: 'mean', normalize: true }));
    const err = await embed.reload('tiny-bert-embed-corrupt').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PipelineLoadError);
    expect(err).toMatchObject({ kind: 'reload', reason: 'corrupt' });
    expect(String(err)).toMatch(/Protobuf parsing failed/);
    expect(embed.pipeline).toBe(before);
    expect(embed.loadInfo).toMatchObject({ generation: 1, modelId: 'tiny-bert-embed' });
    for (const out of await Promise.all(calls))
      expect(maxAbsDiff(out.data as Float32Array, embedding('a dog ran'))).toBeLessThan(1e-6);
    const failed = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.loadKind]: 'reload',
      [ATTR.outcome]: 'error',
    });
    expect(failed?.count).toBe(1);
    const requests = await h.points(METRICS.requests.name);
    expect(requests.map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([['completed', 8]]);
    await embed.release();
  });

  it('reload under load loses no call, and the old pipeline is disposed after its calls', async () => {
    h = harness();
    const embed = await createPipeline(h.monitor, 'embed', 'feature-extraction', 'tiny-bert-embed', {
      ...options,
      queue: { maxWaiting: 100 },
    });
    const old = embed.pipeline;
    const texts = Array.from({ length: 40 }, (_, i) => ['the cat sat', 'a good movie', 'dog ran on the mat'][i % 3]);
    const calls = texts.map((t) => embed.run(t, { pooling: 'mean', normalize: true }));
    await calls[2];
    const info = await embed.reload();
    expect(info).toMatchObject({ kind: 'reload', generation: 2, device: 'cpu', dtype: 'fp32' });
    expect(embed.pipeline).not.toBe(old);
    const results = await Promise.all(calls);
    for (const [i, out] of results.entries())
      expect(maxAbsDiff(out.data as Float32Array, embedding(texts[i]))).toBeLessThan(1e-6);
    const requests = await h.points(METRICS.requests.name);
    expect(requests.map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([['completed', 40]]);
    // The retired pipeline's session was released once idle; the runtime's release is asynchronous (bounded poll).
    // Its onnxruntime session is asked directly: through the pipeline, transformers.js would log each failure.
    type Sessions = { sessions: { model: { run(feeds: unknown): Promise<unknown> } } };
    const session = (old.model as unknown as Sessions).sessions.model;
    const ids = new transformers.Tensor('int64', BigInt64Array.from([2n, 5n, 3n]), [1, 3]);
    const mask = new transformers.Tensor('int64', BigInt64Array.from([1n, 1n, 1n]), [1, 3]);
    const feeds = { input_ids: ids.ort_tensor, attention_mask: mask.ort_tensor };
    // The same feeds run on the serving pipeline's session: only disposal makes the old one fail.
    expect(await (embed.pipeline.model as unknown as Sessions).sessions.model.run(feeds)).toHaveProperty(
      'last_hidden_state',
    );
    const deadline = Date.now() + 5000;
    let error: unknown;
    while (
      !(error = await session.run(feeds).then(
        () => undefined,
        (e: unknown) => e,
      )) &&
      Date.now() < deadline
    )
      await new Promise((r) => setTimeout(r, 5));
    expect(String(error)).toMatch(/disposed/);
    await embed.release();
  });

  it('release is idempotent, waits for accepted calls, then refuses new ones', async () => {
    h = harness();
    const embed = await createPipeline(h.monitor, 'embed', 'feature-extraction', 'tiny-bert-embed', options);
    const calls = Array.from({ length: 5 }, () => embed.run('the cat', { pooling: 'mean' }));
    const first = embed.release();
    expect(embed.release()).toBe(first);
    await first;
    const settled = await Promise.allSettled(calls);
    expect(settled.map((s) => s.status)).toEqual(Array(5).fill('fulfilled'));
    await expect(embed.run('the cat')).rejects.toBeInstanceOf(PipelineReleasedError);
    await expect(embed.reload()).rejects.toBeInstanceOf(PipelineReleasedError);
  });
});

describe('closed client', () => {
  it('a client that closes a streamed generation stops it and counts a cancelled stream', async () => {
    h = harness();
    const gen = await createPipeline(h.monitor, 'gpt', 'text-generation', 'tiny-gpt2', options);
    const ended: { outcome?: string; tokens: number } = { tokens: 0 };
    let settled!: () => void;
    const done = new Promise<void>((resolve) => (settled = resolve));
    server = createServer((_req, res) => {
      const controller = new AbortController();
      res.on('close', () => controller.abort());
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const streamer = {
        put: (value: bigint[][]) => {
          ended.tokens++;
          res.write(`data: ${value[0].join(',')}\n\n`);
        },
        end: () => {},
      } as unknown as InstanceType<typeof transformers.TextStreamer>;
      // A bigram cycle never reaches [EOS]: the generation runs until the client goes (bounded by max_new_tokens).
      gen
        .run('the', { max_new_tokens: 20_000, streamer }, { signal: controller.signal })
        .then(
          () => (ended.outcome = 'completed'),
          (e: Error) => (ended.outcome = e.name),
        )
        .finally(() => {
          res.end();
          settled();
        });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
        let events = 0;
        res.on('data', (chunk: Buffer) => {
          events += chunk.toString().split('\n\n').length - 1;
          if (events >= 3) {
            req.destroy();
            resolve();
          }
        });
      });
      req.on('error', (e) => (e.message === 'socket hang up' ? resolve() : reject(e)));
      req.end();
    });
    await done;
    expect(ended.outcome).toBe('AbortError');
    expect(ended.tokens).toBeLessThan(20_000);
    const streams = await h.points(METRICS.streams.name);
    // Every outcome of the model exists at 0 from its first request; one of them counted this stream.
    expect(streams).toHaveLength(6);
    expect(streams.filter((p) => p.value !== 0).map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([
      ['cancelled', 1],
    ]);
    const requests = await h.points(METRICS.requests.name);
    expect(requests.map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([['cancelled', 1]]);
    const tokens = await h.points(METRICS.streamTokens.name);
    // Every generated step was counted (the prompt's put is not a token).
    expect(tokens.map((p) => p.value)).toEqual([ended.tokens - 1]);
    await gen.release();
  });
});
