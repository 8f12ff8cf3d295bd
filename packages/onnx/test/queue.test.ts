import * as ort from 'onnxruntime-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, SPANS } from '@infersignal/core';
import { createSession } from '@infersignal/onnx';
import { CHAIN_DIM, fixture, harness, inputs, matmulChain, maxAbsDiff, type Harness } from './helpers';

let h: Harness;
afterEach(() => h?.close());

describe('session.run through the queue', () => {
  it('50 concurrent runs on concurrency 1: served in arrival order, the last waits for the runs before it, all 50 results correct', async () => {
    h = harness();
    const session = await createSession(h.monitor, 'chain', fixture('matmul-chain.onnx'), {
      runtime: ort,
      sessionOptions: { intraOpNumThreads: 1 },
      queue: { maxWaiting: 60 },
    });
    // 512 rows × two 512×512 MatMuls: a few ms per run on one CPU thread. All 50 are queued in one turn of
    // the event loop, before the first run can end.
    const rows = 512;
    const xs = Array.from({ length: 50 }, (_, i) => inputs(100 + i, rows * CHAIN_DIM));
    const finished: number[] = [];
    const results = await Promise.all(
      xs.map((x, i) =>
        session.run({ x: new ort.Tensor('float32', x, [rows, CHAIN_DIM]) }).then((result) => {
          finished.push(i);
          return result;
        }),
      ),
    );
    // FIFO: one at a time, in the order they came.
    expect(finished).toEqual(xs.map((_, i) => i));

    const wait = await h.histogram(METRICS.queueWait.name, { [ATTR.queue]: 'onnx:chain' });
    const inference = await h.histogram(METRICS.inferenceDuration.name, {
      [ATTR.queue]: 'onnx:chain',
      [ATTR.outcome]: 'completed',
    });
    expect(wait!.count).toBe(50);
    expect(inference!.count).toBe(50);
    const oneRun = (inference!.sum ?? 0) / inference!.count;
    console.log(
      `one run ${(oneRun * 1000).toFixed(2)} ms, max queue wait ${(wait!.max! * 1000).toFixed(1)} ms (${(wait!.max! / oneRun).toFixed(1)}×)`,
    );
    expect(oneRun).toBeGreaterThan(0.0003);
    // The last request arrived before the second run began and waited until the 49th ended: its wait covers
    // runs 2 to 49, which is every recorded run time but the first's and its own (each at most the longest).
    expect(wait!.max!).toBeGreaterThanOrEqual(inference!.sum! - 2 * inference!.max! - 1e-6);

    const requestSpans = h.spans.getFinishedSpans().filter((s) => s.name === SPANS.request);
    expect(requestSpans).toHaveLength(50);
    // The batch size (first input dimension) rides on the span, never on metrics.
    expect(requestSpans.every((s) => s.attributes['infersignal.batch.size'] === rows)).toBe(true);
    // The spans carry the same waits the histogram recorded.
    const spanWaits = requestSpans.map((s) => s.attributes[ATTR.queueWait] as number);
    expect(Math.max(...spanWaits)).toBe(wait!.max);

    // Every result is the right one: rows 0, 1 and the last of each call recomputed in JS.
    results.forEach(({ y }, i) => {
      expect(y.dims).toEqual([rows, CHAIN_DIM]);
      const data = y.data as Float32Array;
      for (const r of [0, 1, rows - 1]) {
        const expected = matmulChain(xs[i].subarray(r * CHAIN_DIM, (r + 1) * CHAIN_DIM));
        expect(maxAbsDiff(data.subarray(r * CHAIN_DIM, (r + 1) * CHAIN_DIM), expected)).toBeLessThan(1e-3);
      }
    });
    expect(session.pending).toBe(0);
    await session.release();
  });

  it('a run error is rethrown unchanged and counted as an error outcome', async () => {
    h = harness();
    const session = await createSession(h.monitor, 'chain', fixture('matmul-chain.onnx'), { runtime: ort });
    const err = await session
      .run({ wrong: new ort.Tensor('float32', new Float32Array(4), [1, 4]) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/input 'x' is missing|wrong/);
    const requests = await h.points(METRICS.requests.name);
    expect(requests.map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([['error', 1]]);
    await session.release();
  });
});
