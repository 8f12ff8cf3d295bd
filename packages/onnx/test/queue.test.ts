import * as ort from 'onnxruntime-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, SPANS } from '@infersignal/core';
import { createSession } from '@infersignal/onnx';
import { CHAIN_DIM, fixture, harness, inputs, matmulChain, maxAbsDiff, type Harness } from './helpers';

let h: Harness;
afterEach(() => h?.close());

const spanSeconds = (s: { startTime: [number, number]; endTime: [number, number] }) =>
  s.endTime[0] - s.startTime[0] + (s.endTime[1] - s.startTime[1]) / 1e9;

describe('session.run through the queue', () => {
  it('50 concurrent runs on concurrency 1: waits grow to ≥ 40× one run, all 50 results correct', async () => {
    h = harness();
    const session = await createSession(h.monitor, 'chain', fixture('matmul-chain.onnx'), {
      runtime: ort,
      sessionOptions: { intraOpNumThreads: 1 },
      queue: { maxWaiting: 60 },
    });
    // 512 rows × two 512×512 MatMuls: a few ms per run on one CPU thread, long
    // against the few ms it takes to enqueue all 50 (which the last request does not wait for).
    const rows = 512;
    const xs = Array.from({ length: 50 }, (_, i) => inputs(100 + i, rows * CHAIN_DIM));
    const results = await Promise.all(
      xs.map((x) => session.run({ x: new ort.Tensor('float32', x, [rows, CHAIN_DIM]) })),
    );

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
    // "One run" is the first-quartile run, an uncontended one: the cold first run
    // and runs slowed by a busy 2-core machine would otherwise move it.
    const requestSpans = h.spans.getFinishedSpans().filter((s) => s.name === SPANS.request);
    expect(requestSpans).toHaveLength(50);
    // The batch size (first input dimension) rides on the span, never on metrics.
    expect(requestSpans.every((s) => s.attributes['infersignal.batch.size'] === rows)).toBe(true);
    // A span lasts the queue wait plus the run; the run alone is what is left after the wait.
    const runs = requestSpans
      .map((s) => spanSeconds(s) - (s.attributes[ATTR.queueWait] as number))
      .sort((a, b) => a - b);
    const oneRunTrimmed = runs[Math.floor(runs.length / 4)];
    expect(wait!.max!).toBeGreaterThanOrEqual(40 * oneRunTrimmed);

    // FIFO: in arrival order each request waited at least as long as the one before it.
    const waits = [...requestSpans]
      .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
      .map((s) => s.attributes[ATTR.queueWait] as number);
    for (let i = 1; i < waits.length; i++) expect(waits[i]).toBeGreaterThanOrEqual(waits[i - 1] - 1e-4);
    // The last request waited for at least 40 runs more than the second one did.
    expect(waits[49] - waits[1]).toBeGreaterThanOrEqual(40 * oneRunTrimmed);

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
