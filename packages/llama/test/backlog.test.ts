import { describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { monitorFor, servedModel, until } from './helpers';

const PENDING = METRICS.queueTokensPending.name;
const DRAIN = METRICS.queueTokensDrainTime.name;

describe('token backlog of the sequence queue', () => {
  const { open } = servedModel({ kvCache: false });

  it('while one request streams and two wait: prompt tokens waiting, output tokens owed and the drain time, exact at a scrape', async () => {
    const t = monitorFor();
    const model = await open(t, { sequences: 1 });
    const at = { [ATTR.queue]: 'llama:tiny' };
    const gauges = async () => {
      const metrics = await t.collect();
      return {
        input: metrics.points<number>(PENDING, { ...at, [ATTR.tokenType]: 'input' }).map((p) => p.value),
        output: metrics.points<number>(PENDING, { ...at, [ATTR.tokenType]: 'output' }).map((p) => p.value),
        drain: metrics.points<number>(DRAIN, at).map((p) => p.value),
      };
    };
    try {
      // Present at 0 before any request.
      expect(await gauges()).toEqual({ input: [0], output: [0], drain: [0] });

      const prompts = ['the quick brown fox', 'jumps over the lazy dog and then some', 'hello'];
      const promptTokens = prompts.map((p) => model.model.tokenize(p).length);
      expect(promptTokens.every((n) => n > 0)).toBe(true);
      // One sequence: the first request runs, the other two wait behind it.
      let produced = 0;
      let callbacks = 0;
      let scrape: Promise<Awaited<ReturnType<typeof gauges>>> | undefined;
      let producedAtScrape = 0;
      let callbacksAtScrape = 0;
      const first = model.complete(prompts[0]!, {
        maxTokens: 24,
        onToken(tokens) {
          produced += tokens.length;
          callbacks++;
          if (callbacks === 5) {
            // Read before the next token: the next callback comes from the next native decode.
            producedAtScrape = produced;
            callbacksAtScrape = callbacks;
            scrape = gauges();
          }
          t.advance(10);
        },
      });
      const others = [model.complete(prompts[1]!, { maxTokens: 16 }), model.complete(prompts[2]!, { maxTokens: 8 })];
      await until(() => model.queue.inFlight === 1, 5000, 'the first request started');
      expect(model.queue.waiting).toBe(2);
      await until(() => scrape !== undefined, 20_000, 'the first request streamed five callbacks');
      const seen = await scrape!;
      expect(seen.input).toEqual([promptTokens[1]! + promptTokens[2]!]);
      expect(seen.output).toEqual([24 - producedAtScrape]);
      // Output rate: the tokens produced over the time the request ran (10 ms of manual clock per callback,
      // the first token at its start).
      const rate = producedAtScrape / ((callbacksAtScrape - 1) * 0.01);
      expect(seen.drain).toHaveLength(1);
      expect(seen.drain[0]).toBeCloseTo((24 - producedAtScrape + 16 + 8) / rate, 9);

      const results = await Promise.all([first, ...others]);
      expect(results.map((r) => r.usage.outputTokens)).toEqual([24, 16, 8]);
      expect(await gauges()).toEqual({ input: [0], output: [0], drain: [0] });
      expect(t.monitor.snapshot().queues['llama:tiny']!.tokens).toMatchObject({
        waitingPrompt: 0,
        waitingOutput: 0,
        owedOutput: 0,
      });
    } finally {
      await model.release();
      await t.close();
    }
  });
});
