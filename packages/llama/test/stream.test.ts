import type { Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlamaModel, type MonitoredLlamaModel } from '@infersignal/llama';
import { CONTEXT, MODEL, REQUESTS, STREAMS, STREAM_TOKENS, TPOT, cpuLlama, models, monitorFor } from './helpers';

/** Every stream outcome of a known model, at 0 until a stream ends with it. */
const NO_STREAMS = { completed: 0, cancelled: 0, error: 0, unavailable: 0, deadline_exceeded: 0 };

const OUTCOME = 'infersignal.outcome';

describe('token streams', () => {
  const dir = models();
  let llama: Llama;
  let printable: string;
  let raw: string;
  beforeAll(async () => {
    ({ llama } = await cpuLlama());
    printable = dir.write({ printable: true });
    raw = dir.write({ seed: 1 });
  });
  afterAll(async () => {
    await llama.dispose();
    dir.cleanup();
  });

  const open = (t: ReturnType<typeof monitorFor>, path: string): Promise<MonitoredLlamaModel> =>
    createLlamaModel(t.monitor, 'tiny', path, { llama, contextOptions: CONTEXT, kvCache: false });

  it('counts tokens, not callbacks: byte tokens that form one character arrive together', async () => {
    const t = monitorFor();
    const model = await open(t, raw);
    try {
      let callbacks = 0;
      let handedOut = 0;
      const result = await model.complete('hello world', {
        maxTokens: 64,
        onToken(tokens) {
          callbacks++;
          handedOut += tokens.length;
          t.advance(5);
        },
      });
      // The random model writes bytes that rarely form UTF-8: fewer callbacks than tokens, and some
      // tokens never handed out at all (a partial character when maxTokens stopped it).
      expect(result.usage.outputTokens).toBe(64);
      expect(callbacks).toBeLessThan(handedOut);
      expect(handedOut).toBeLessThan(64); // a property of this seed and prompt, the case under test
      const exported = await t.collect();
      expect(exported.sum(STREAM_TOKENS, { [MODEL]: 'tiny' })).toBe(64);
      expect(exported.sum(STREAMS, { [MODEL]: 'tiny', [OUTCOME]: 'completed' })).toBe(1);
      // The tokens never handed out count at the end: (end − first) / (64 − 1) on the monitor's clock.
      const tpot = exported.histogram(TPOT, { [MODEL]: 'tiny' });
      expect(tpot?.count).toBe(1);
      expect(tpot?.sum).toBeCloseTo((callbacks * 5) / 1000 / 63, 9);
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('adds tokens to the counter in batches of 16 while streaming; the total and time per output token stay exact', async () => {
    const t = monitorFor();
    const model = await open(t, printable);
    try {
      // The printable model hands out one token per callback; each moves the monitor's clock 1 ms and
      // collects the tokens counter as it stands then (the collection settles before the next decode).
      const during: Array<Promise<number | undefined>> = [];
      await model.complete('count me', {
        maxTokens: 40,
        onToken() {
          during.push(t.collect().then((exported) => exported.sum(STREAM_TOKENS, { [MODEL]: 'tiny' })));
          t.advance(1);
        },
      });
      // The first token at once (time to first token), then 16 at a time, then the one reaching maxTokens.
      const expected = [1, ...Array(15).fill(1), ...Array(16).fill(17), ...Array(7).fill(33), 40];
      expect(await Promise.all(during)).toEqual(expected);
      const exported = await t.collect();
      expect(exported.sum(STREAM_TOKENS, { [MODEL]: 'tiny' })).toBe(40);
      // (last − first token) / 39 on the monitor's clock: the last token's time is its own callback's.
      const tpot = exported.histogram(TPOT, { [MODEL]: 'tiny' });
      expect(tpot?.count).toBe(1);
      expect(tpot?.sum).toBeCloseTo(0.001, 9);
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('an abort mid-stream stops the generation, frees the sequence and counts cancelled', async () => {
    const t = monitorFor();
    const model = await open(t, printable);
    try {
      const controller = new AbortController();
      let seen = 0;
      const error = await model
        .complete('tell me everything', {
          maxTokens: 200,
          signal: controller.signal,
          onToken(tokens) {
            seen += tokens.length;
            if (seen >= 5) controller.abort();
          },
        })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'AbortError' });
      expect(seen).toBeLessThan(200);
      expect(model.queue.inFlight).toBe(0);
      expect(model.kvCache().sequences[0].busy).toBe(false);
      // The one sequence serves the next request at once.
      expect((await model.complete('again', { maxTokens: 3 })).usage.outputTokens).toBe(3);
      const exported = await t.collect();
      expect(exported.by(REQUESTS, OUTCOME, { [MODEL]: 'tiny' })).toEqual({ cancelled: 1, completed: 1 });
      expect(exported.by(STREAMS, OUTCOME, { [MODEL]: 'tiny' })).toEqual({ ...NO_STREAMS, cancelled: 1, completed: 1 });
      // Tokens the runtime generated, the one after the abort included: the sequence's own meter.
      const generated = await model.withSequence((sequence) => sequence.tokenMeter.usedOutputTokens);
      expect(generated).toBeGreaterThanOrEqual(seen + 3);
      expect(exported.sum(STREAM_TOKENS, { [MODEL]: 'tiny' })).toBe(generated);
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('a deadline is deadline_exceeded; stopOnAbortSignal returns the partial text, still not completed', async () => {
    const t = monitorFor();
    const model = await open(t, printable);
    try {
      const late = new AbortController();
      const error = await model
        .complete('slow', {
          maxTokens: 200,
          signal: late.signal,
          onToken: () => late.abort(new DOMException('deadline passed', 'TimeoutError')),
        })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'TimeoutError' });

      const gone = new AbortController();
      let seen = 0;
      const partial = await model.complete('partial', {
        maxTokens: 200,
        signal: gone.signal,
        stopOnAbortSignal: true,
        onToken(tokens) {
          seen += tokens.length;
          if (seen === 4) gone.abort();
        },
      });
      expect(partial.metadata.stopReason).toBe('abort');
      expect(partial.response).toHaveLength(partial.usage.outputTokens);
      expect(partial.usage.outputTokens).toBe(4);
      const exported = await t.collect();
      expect(exported.by(REQUESTS, OUTCOME, { [MODEL]: 'tiny' })).toEqual({ deadline_exceeded: 1, cancelled: 1 });
      expect(exported.by(STREAMS, OUTCOME, { [MODEL]: 'tiny' })).toEqual({
        ...NO_STREAMS,
        deadline_exceeded: 1,
        cancelled: 1,
      });
      // Both interrupted, but fewer than stream.minSamples (100) ended: no ratio to judge yet.
      expect(t.monitor.snapshot().streams.tiny).toMatchObject({ samples: 2, interruptedRatio: 0 });
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('a runtime error is an error outcome, rethrown unchanged; the sequence is freed', async () => {
    const t = monitorFor();
    const model = await open(t, printable);
    try {
      const boom = new Error('shift size unavailable');
      const error = await model
        .complete('x', {
          maxTokens: 2,
          contextShiftSize: () => {
            throw boom;
          },
        })
        .catch((e: unknown) => e);
      expect(error).toBe(boom);
      expect(model.kvCache().sequences[0].busy).toBe(false);
      const exported = await t.collect();
      expect(exported.by(REQUESTS, OUTCOME, { [MODEL]: 'tiny' })).toEqual({ error: 1 });
      expect(exported.by(STREAMS, OUTCOME, { [MODEL]: 'tiny' })).toEqual({ ...NO_STREAMS, error: 1 });
    } finally {
      await model.release();
      await t.close();
    }
  });
});
