import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { createPipeline } from '@infersignal/transformers';
import { PipelineLoadError } from '../src/errors';
import { TRANSFORMERS_ATTR } from '../src/attributes';
import {
  PIPELINE_OPTIONS,
  continuation,
  embedding,
  harness,
  ids,
  maxAbsDiff,
  offline,
  sentiment,
  transformers,
  type Harness,
} from './helpers';

let h: Harness;
beforeAll(offline);
afterEach(() => h?.close());

const options = { runtime: transformers, pipelineOptions: PIPELINE_OPTIONS };

function requestSpans(harness: Harness) {
  return harness.spans.getFinishedSpans().filter((s) => s.attributes[ATTR.queue] !== undefined);
}

describe('feature-extraction', () => {
  it('returns the model’s embeddings and puts batch size, input tokens, device and dtype on the spans', async () => {
    h = harness();
    const embed = await createPipeline(h.monitor, 'embed', 'feature-extraction', 'tiny-bert-embed', options);
    expect(embed.loadInfo).toMatchObject({
      kind: 'load',
      generation: 1,
      device: 'cpu',
      dtype: 'fp32',
      sessions: ['model'],
    });

    const texts = ['the cat sat on the mat', 'a dog'];
    const out = await embed.run(texts, { pooling: 'mean', normalize: true });
    expect(out.dims).toEqual([2, 8]);
    const rows = out.tolist() as number[][];
    for (const [i, t] of texts.entries()) expect(maxAbsDiff(rows[i], embedding(t))).toBeLessThan(1e-6);

    // One call of one row: no padding, every token counts.
    await embed.run('good movie', { pooling: 'mean' });

    const load = h.spans.getFinishedSpans().find((s) => s.attributes[ATTR.loadKind] === 'load');
    expect(load?.attributes).toMatchObject({
      [TRANSFORMERS_ATTR.runtime]: 'transformers.js',
      [TRANSFORMERS_ATTR.task]: 'feature-extraction',
      [TRANSFORMERS_ATTR.device]: 'cpu',
      [TRANSFORMERS_ATTR.dtype]: 'fp32',
    });
    const calls = requestSpans(h).map((s) => [
      s.attributes[TRANSFORMERS_ATTR.batchSize],
      s.attributes[TRANSFORMERS_ATTR.inputTokens],
    ]);
    // [CLS] … [SEP]: 8 and 4 tokens (the second row padded to 8 in the tensor, not counted), then 4.
    expect(calls).toEqual([
      [2, ids(texts[0]).length + ids(texts[1]).length],
      [1, ids('good movie').length],
    ]);
    const requests = await h.points(METRICS.requests.name);
    expect(requests.map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([['completed', 2]]);
    const wait = await h.histogram(METRICS.queueWait.name, { [ATTR.queue]: 'transformers:embed' });
    expect(wait?.count).toBe(2);
    const inference = await h.histogram(METRICS.inferenceDuration.name, { [ATTR.queue]: 'transformers:embed' });
    expect(inference?.count).toBe(2);
    expect(inference!.sum).toBeGreaterThan(0);
    await embed.release();
  });

  it('queues calls one at a time and counts a library error as the call’s outcome', async () => {
    h = harness();
    const embed = await createPipeline(h.monitor, 'embed', 'feature-extraction', 'tiny-bert-embed', options);
    const texts = Array.from({ length: 12 }, (_, i) => (i % 2 ? 'the cat sat' : 'a dog ran on the mat'));
    const [results, failed] = await Promise.all([
      Promise.all(texts.map((t) => embed.run(t, { pooling: 'mean', normalize: true }))),
      embed.run('the cat', { pooling: 'max' as never }).catch((e: unknown) => e),
    ]);
    for (const [i, r] of results.entries())
      expect(maxAbsDiff(r.data as Float32Array, embedding(texts[i]))).toBeLessThan(1e-6);
    expect(String(failed)).toMatch(/Pooling method 'max' not supported/);
    const requests = await h.points(METRICS.requests.name);
    expect(Object.fromEntries(requests.map((p) => [p.attributes[ATTR.outcome], p.value]))).toEqual({
      completed: 12,
      error: 1,
    });
    const wait = await h.histogram(METRICS.queueWait.name, { [ATTR.queue]: 'transformers:embed' });
    expect(wait?.count).toBe(13);
    // Concurrency 1: every call but the first waited behind another.
    expect(wait!.max).toBeGreaterThan(0);
    expect(embed.pending).toBe(0);
    await embed.release();
  });

  it('fails a missing model with PipelineLoadError (nothing downloaded) and records the failed load', async () => {
    h = harness();
    const err = await createPipeline(h.monitor, 'ghost', 'feature-extraction', 'no-such-model', options).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PipelineLoadError);
    expect(err).toMatchObject({ kind: 'load', reason: 'missing' });
    expect(String(err)).toMatch(/not found locally/);
    const failed = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.loadKind]: 'load',
      [ATTR.outcome]: 'error',
    });
    expect(failed?.count).toBe(1);
  });
});

describe('text-classification', () => {
  it('returns the model’s labels and scores, with tokens per call', async () => {
    h = harness();
    const classify = await createPipeline(
      h.monitor,
      'sentiment',
      'text-classification',
      'tiny-bert-sentiment',
      options,
    );
    const texts = ['a good movie', 'very bad and awful', 'great fun not boring'];
    const usage: unknown[] = [];
    const out = (await classify.run(texts, undefined, { onUsage: (u) => usage.push({ ...u }) })) as {
      label: string;
      score: number;
    }[];
    expect(usage).toEqual([{ batch: 3, inputTokens: texts.reduce((n, t) => n + ids(t).length, 0), outputTokens: 0 }]);
    texts.forEach((t, i) => {
      expect(out[i].label).toBe(sentiment(t).label);
      expect(out[i].score).toBeCloseTo(sentiment(t).score, 6);
    });
    const [span] = requestSpans(h);
    expect(span.attributes[TRANSFORMERS_ATTR.batchSize]).toBe(3);
    expect(span.attributes[TRANSFORMERS_ATTR.inputTokens]).toBe(texts.reduce((n, t) => n + ids(t).length, 0));
    expect(classify.loadInfo).toMatchObject({ device: 'cpu', dtype: 'fp32', task: 'text-classification' });
    await classify.release();
  });
});

describe('text-generation', () => {
  it('measures time to first token and time per output token through the streamer, and still feeds the app’s streamer', async () => {
    // The app's streamer moves the monitor's clock 10 ms at each call (the prompt, then each step): the
    // recorded times are exactly those steps, however fast the tiny model runs here.
    const now = { ms: 1_000_000 };
    h = harness({ clock: () => now.ms });
    const gen = await createPipeline(h.monitor, 'gpt', 'text-generation', 'tiny-gpt2', options);
    const chunks: string[] = [];
    const streamer = new transformers.TextStreamer(gen.pipeline.tokenizer, {
      skip_prompt: true,
      callback_function: (text: string) => chunks.push(text.trim()),
    });
    const put = streamer.put.bind(streamer);
    streamer.put = (value: bigint[][]) => {
      now.ms += 10;
      put(value);
    };
    const out = (await gen.run('the', { max_new_tokens: 6, streamer })) as { generated_text: string }[];
    const words = continuation('the', 6);
    expect(out[0].generated_text).toBe(['the', ...words].join(' '));
    expect(chunks.join(' ')).toBe(words.join(' '));

    const attrs = { [ATTR.model]: 'gpt' };
    const ttft = await h.histogram(METRICS.timeToFirstToken.name, attrs);
    const tpot = await h.histogram(METRICS.timePerOutputToken.name, attrs);
    // First token counted at the first step, before the app's streamer moved the clock: one 10 ms call (the prompt).
    expect(ttft?.count).toBe(1);
    expect(ttft!.sum).toBeCloseTo(0.01, 9);
    // The last of 6 tokens is counted at end(), after the app's streamer took the 6th: (70 − 10) ms over 5 intervals.
    expect(tpot?.count).toBe(1);
    expect(tpot!.sum).toBeCloseTo(0.012, 9);
    const tokens = await h.points(METRICS.streamTokens.name);
    expect(tokens.map((p) => p.value)).toEqual([6]);
    const [span] = requestSpans(h);
    expect(span.attributes).toMatchObject({
      [TRANSFORMERS_ATTR.batchSize]: 1,
      [TRANSFORMERS_ATTR.inputTokens]: 1,
      [TRANSFORMERS_ATTR.outputTokens]: 6,
    });
    const streams = await h.points(METRICS.streams.name);
    // Every outcome of the model exists at 0 from its first request; one of them counted this stream.
    expect(streams).toHaveLength(6);
    expect(streams.filter((p) => p.value !== 0).map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([
      ['completed', 1],
    ]);
    await gen.release();
  });

  it('stops a generation whose signal aborts between tokens and counts the stream as interrupted', async () => {
    h = harness();
    const gen = await createPipeline(h.monitor, 'gpt', 'text-generation', 'tiny-gpt2', options);
    const controller = new AbortController();
    let steps = 0;
    const streamer = {
      put: () => {
        if (++steps === 4) controller.abort();
      },
      end: () => {},
    } as unknown as InstanceType<typeof transformers.TextStreamer>;
    const err = await gen
      .run('the', { max_new_tokens: 50, streamer }, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect((err as Error).name).toBe('AbortError');
    // The prompt and three steps before the abort; the step in progress then is the last.
    expect(steps).toBe(4);
    const streams = await h.points(METRICS.streams.name);
    // Every outcome of the model exists at 0 from its first request; one of them counted this stream.
    expect(streams).toHaveLength(6);
    expect(streams.filter((p) => p.value !== 0).map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([
      ['cancelled', 1],
    ]);
    const tokens = await h.points(METRICS.streamTokens.name);
    expect(tokens.map((p) => p.value)).toEqual([3]);
    const requests = await h.points(METRICS.requests.name);
    expect(requests.map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([['cancelled', 1]]);
    // A batch of two generates on (the special [EOS] is not decoded); a deadline reads as deadline_exceeded.
    const batch = (await gen.run(['a', 'the cat'], { max_new_tokens: 4 })) as { generated_text: string }[][];
    expect(batch.map((r) => r[0].generated_text)).toEqual([
      ['a', ...continuation('a', 4).filter((w) => w !== '[EOS]')].join(' '),
      ['the', 'cat', ...continuation('cat', 4)].join(' '),
    ]);
    const timed = await gen
      .run('the', { max_new_tokens: 50 }, { signal: AbortSignal.abort(new DOMException('late', 'TimeoutError')) })
      .catch((e: unknown) => e);
    expect((timed as Error).name).toBe('TimeoutError');
    const after = await h.points(METRICS.streams.name);
    expect(
      Object.fromEntries(after.filter((p) => p.value !== 0).map((p) => [p.attributes[ATTR.outcome], p.value])),
    ).toEqual({
      cancelled: 1,
      completed: 1,
    });
    const outcomes = await h.points(METRICS.requests.name);
    expect(Object.fromEntries(outcomes.map((p) => [p.attributes[ATTR.outcome], p.value]))).toEqual({
      cancelled: 1,
      completed: 1,
      deadline_exceeded: 1,
    });
    await gen.release();
  });
});

describe('options', () => {
  it('refuses bad options before any load, with one line naming the field', async () => {
    h = harness();
    const make = (name: string, extra: Record<string, unknown>) =>
      createPipeline(h.monitor, name, 'feature-extraction', 'tiny-bert-embed', { ...options, ...extra } as never);
    await expect(make('', {})).rejects.toThrow(/"transformers\.name".*non-empty string/);
    await expect(make('m', { runtime: {} })).rejects.toThrow(/"options\.runtime".*pipeline missing/);
    await expect(make('m', { bogus: 1 })).rejects.toThrow(/bogus/);
    await expect(make('m', { shed: 'yes' })).rejects.toThrow(/"options\.shed".*true or false/);
    await expect(make('m', { queue: { concurrency: 0 } })).rejects.toThrow(/options\.queue\.concurrency/);
    const loads = await h.points(METRICS.modelLoadDuration.name);
    expect(loads).toEqual([]);
  });
});
