/**
 * The OpenTelemetry GenAI model-server conventions on core's
 * gen_ai.server.* metrics: the required attributes, `error.type` on
 * failures, TTFT and TPOT for successful responses only, the conventions'
 * bucket boundaries, and the model label of a request nothing named.
 */
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS, type Outcome } from '../src/index';
import { BUCKETS, UNKNOWN_MODEL } from '../src/names';
import { setup } from './helpers';

const REQUEST = METRICS.requestDuration.name;
const TTFT = METRICS.timeToFirstToken.name;
const TPOT = METRICS.timePerOutputToken.name;

describe.each(['api', 'producer'] as const)('GenAI conventions (%s export)', (exportMode) => {
  it('gen_ai.server.request.duration carries operation, provider and model, and error.type on failures only', async () => {
    const t = setup({ exportMode });
    const queue = t.monitor.queue('gen');
    const end = (outcome: Outcome, ms: number) => {
      const ticket = queue.enqueue('llama-3-8b');
      ticket.start();
      t.advance(ms);
      ticket.end(outcome);
    };
    end('completed', 100);
    end('completed', 300);
    end('cancelled', 50);
    end('error', 20);
    end('timeout', 700);
    const metrics = await t.collect();
    const points = metrics.points<Histogram>(REQUEST);
    expect(points).toHaveLength(4);
    for (const point of points) {
      expect(point.attributes).toMatchObject({
        [ATTR.operationName]: 'chat',
        [ATTR.providerName]: 'self_hosted',
        [ATTR.model]: 'llama-3-8b',
        [ATTR.queue]: 'gen',
      });
    }
    const completed = metrics.points<Histogram>(REQUEST, { [ATTR.outcome]: 'completed' });
    expect(completed).toHaveLength(1);
    expect(completed[0].attributes).not.toHaveProperty(ATTR.errorType);
    expect(completed[0].value.count).toBe(2);
    expect(completed[0].value.sum).toBeCloseTo(0.4, 9);
    expect(metrics.by(REQUEST, ATTR.errorType)).toEqual({
      _OTHER: 1,
      cancelled: 1,
      timeout: 1,
      undefined: 2,
    });
    expect(metrics.histogram(REQUEST, { [ATTR.errorType]: 'timeout' })?.sum).toBeCloseTo(0.7, 9);
    await t.close();
  });

  it('TTFT and time per output token count successful streams only', async () => {
    const t = setup({ exportMode });
    const run = (outcome: 'completed' | 'cancelled' | 'error', firstMs: number, gapMs: number) => {
      const stream = t.monitor.stream('llama-3-8b');
      t.advance(firstMs);
      stream.token();
      t.advance(gapMs);
      stream.token(4);
      stream.end(outcome);
    };
    run('completed', 40, 80); // TTFT 40 ms, 5 tokens over 80 ms → 20 ms per token after the first
    run('completed', 60, 40); // 60 ms, 10 ms
    run('cancelled', 5, 400); // a client gone after a quick first token: not a response
    run('error', 900, 0);
    const metrics = await t.collect();
    const ttft = metrics.points<Histogram>(TTFT);
    expect(ttft).toHaveLength(1);
    expect(ttft[0].attributes).toEqual({
      [ATTR.operationName]: 'chat',
      [ATTR.providerName]: 'self_hosted',
      [ATTR.model]: 'llama-3-8b',
    });
    expect(ttft[0].value.count).toBe(2);
    expect(ttft[0].value.sum).toBeCloseTo(0.1, 9);
    expect(metrics.histogram(TPOT)?.count).toBe(2);
    expect(metrics.histogram(TPOT)?.sum).toBeCloseTo(0.03, 9);
    // The stream counters still see every stream.
    expect(metrics.sum(METRICS.streams.name)).toBe(4);
    expect(metrics.sum(METRICS.streamTokens.name)).toBe(20);
    await t.close();
  });

  it('a stream that never sent a token records no TTFT, whatever its outcome', async () => {
    const t = setup({ exportMode });
    t.monitor.stream('m').end('completed');
    const metrics = await t.collect();
    expect(metrics.count(TTFT)).toBe(0);
    expect(metrics.sum(METRICS.streams.name, { [ATTR.outcome]: 'completed' })).toBe(1);
    await t.close();
  });

  it('the histograms use the conventions’ bucket boundaries', async () => {
    const t = setup({ exportMode });
    const ticket = t.monitor.queue('gen').enqueue('m');
    const stream = ticket.stream();
    t.advance(30);
    stream.token();
    t.advance(30);
    stream.token();
    stream.end('completed');
    ticket.end('completed');
    const metrics = await t.collect();
    const boundaries = (name: string) => metrics.histogram(name)?.buckets.boundaries;
    expect(boundaries(TTFT)).toEqual([
      0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
    ]);
    expect(boundaries(TPOT)).toEqual([0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5]);
    expect(boundaries(REQUEST)).toEqual([
      0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ]);
    expect(boundaries(TTFT)).toEqual([...BUCKETS.timeToFirstToken]);
    // 30 ms lands in (0.02, 0.04]: the 5th bucket.
    expect(metrics.histogram(TTFT)?.buckets.counts[4]).toBe(1);
    await t.close();
  });
});

describe('GenAI attribute values', () => {
  it('the genAi option names the operation and the provider on every gen_ai.server.* metric', async () => {
    const t = setup({ genAi: { operationName: 'text_completion', providerName: 'llama.cpp' } });
    const ticket = t.monitor.queue('gen').enqueue('qwen');
    const stream = ticket.stream();
    t.advance(10);
    stream.token(2);
    stream.end('completed');
    ticket.end('completed');
    const metrics = await t.collect();
    for (const name of [REQUEST, TTFT, TPOT]) {
      expect(
        metrics.points(name).map((p) => [p.attributes[ATTR.operationName], p.attributes[ATTR.providerName]]),
      ).toEqual([['text_completion', 'llama.cpp']]);
    }
    await t.close();
  });

  it('one of the two may be set alone; the other keeps its default', async () => {
    const t = setup({ genAi: { operationName: 'embeddings' } });
    const ticket = t.monitor.queue('q').enqueue('bge');
    ticket.end('completed');
    const metrics = await t.collect();
    expect(metrics.points(REQUEST)[0].attributes).toMatchObject({
      [ATTR.operationName]: 'embeddings',
      [ATTR.providerName]: 'self_hosted',
    });
    await t.close();
  });

  it('an invalid genAi option fails at creation, naming the field', () => {
    const fail = (genAi: unknown) => {
      try {
        setup({ genAi: genAi as never });
      } catch (error) {
        expect(error).toBeInstanceOf(InferSignalConfigError);
        return (error as InferSignalConfigError).field;
      }
      return 'no error';
    };
    expect(fail({ providerName: '' })).toBe('genAi.providerName');
    expect(fail({ operationName: 42 })).toBe('genAi.operationName');
    expect(fail({ operation: 'chat' })).toBe('genAi.operation');
    expect(fail('chat')).toBe('genAi');
  });

  it(`a request or stream nothing named is labelled ${UNKNOWN_MODEL}`, async () => {
    const t = setup();
    const ticket = t.monitor.queue('q').enqueue();
    ticket.end('completed');
    const stream = t.monitor.stream();
    stream.token();
    stream.end('completed');
    const metrics = await t.collect();
    expect(metrics.points(REQUEST)[0].attributes[ATTR.model]).toBe('_unknown');
    expect(metrics.points(TTFT)[0].attributes[ATTR.model]).toBe('_unknown');
    expect(ticket.model).toBe('_unknown');
    await t.close();
  });
});
