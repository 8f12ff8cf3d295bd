import { readFile } from 'node:fs/promises';
import * as ort from 'onnxruntime-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { createSession } from '@infersignal/onnx';
import { ModelLoadError, SessionReleasedError } from '../src/errors';
import {
  CHAIN_DIM,
  fixture,
  fixtureBytes,
  harness,
  inputs,
  matmulChain,
  maxAbsDiff,
  sleep,
  tinyMlp,
  type Harness,
} from './helpers';

let h: Harness;
afterEach(() => h?.close());

/**
 * A loader that stands for a load of `ms` on the monitor's clock `now`,
 * then reads the real model file: the recorded durations are exactly the
 * ones the test chose, however long the runtime takes to parse the model
 * on this machine.
 */
function loaderTaking(ms: number, now: { ms: number }) {
  return async () => {
    now.ms += ms;
    return readFile(fixture('tiny-mlp.onnx'));
  };
}

describe('session.reload', () => {
  it('records load and reload durations; a reload over 3× baseline raises exactly one spike alert', async () => {
    const now = { ms: 1_000_000 };
    h = harness({ clock: () => now.ms });
    const session = await createSession(h.monitor, 'mlp', loaderTaking(400, now), { runtime: ort });
    expect(session.loadInfo.source).toBe('loader');
    expect(session.loadInfo.fileBytes).toBe(fixtureBytes('tiny-mlp.onnx').byteLength);
    await session.reload(loaderTaking(400, now));
    const slow = await session.reload(loaderTaking(3000, now));
    await session.reload(loaderTaking(400, now));
    expect(slow.generation).toBe(3);
    expect(session.loadInfo.generation).toBe(4);

    const load = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.loadKind]: 'load',
      [ATTR.outcome]: 'success',
    });
    const reload = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.loadKind]: 'reload',
      [ATTR.outcome]: 'success',
    });
    expect(load!.count).toBe(1);
    expect(reload!.count).toBe(3);
    expect(load!.sum).toBeCloseTo(0.4, 9);
    expect(reload!.sum).toBeCloseTo(0.4 + 3 + 0.4, 9);
    expect(reload!.max).toBeCloseTo(3, 9);

    const spikes = h.alerts.filter((a) => a.signal === 'model_load' && a.level !== 'ok');
    expect(spikes).toHaveLength(1);
    expect(spikes[0].labels).toEqual({ model: 'mlp' });
    expect(spikes[0].details).toMatchObject({ kind: 'reload' });
    // 3 s over the 0.4 s median of the loads before it (over the 1 s floor: loads shorter are never spikes).
    expect((spikes[0].details as { ratio: number }).ratio).toBeCloseTo(7.5, 9);
    const counter = await h.points(METRICS.modelLoadSpikes.name);
    // Both kinds exist from the model's first load, at 0 until a spike.
    expect(counter.map((p) => [p.attributes[ATTR.loadKind], p.value]).sort()).toEqual([
      ['load', 0],
      ['reload', 1],
    ]);

    const { y } = await session.run({ x: new ort.Tensor('float32', new Float32Array([0.5, -1, 2, 0]), [1, 4]) });
    expect(maxAbsDiff(y.data as Float32Array, tinyMlp([0.5, -1, 2, 0]))).toBeLessThan(1e-5);
    await session.release();
  });

  it('a failed reload keeps the old session serving and records the failure', async () => {
    h = harness();
    const session = await createSession(h.monitor, 'mlp', fixture('tiny-mlp.onnx'), { runtime: ort });
    const before = session.session;
    const err = await session.reload(new TextEncoder().encode('garbage')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err).toMatchObject({ kind: 'reload', reason: 'corrupt' });
    expect(session.session).toBe(before);
    expect(session.loadInfo.generation).toBe(1);
    const failed = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.loadKind]: 'reload',
      [ATTR.outcome]: 'error',
    });
    expect(failed!.count).toBe(1);
    const { y } = await session.run({ x: new ort.Tensor('float32', new Float32Array([1, 1, 1, 1]), [1, 4]) });
    expect(maxAbsDiff(y.data as Float32Array, tinyMlp([1, 1, 1, 1]))).toBeLessThan(1e-5);
    await session.release();
  });

  it('reload under load loses no request, and the old session is released after its runs', async () => {
    h = harness();
    const opts = { runtime: ort, sessionOptions: { intraOpNumThreads: 1 }, queue: { maxWaiting: 100 } };
    const session = await createSession(h.monitor, 'chain', fixture('matmul-chain.onnx'), opts);
    const old = session.session;
    const rows = 4;
    const xs = Array.from({ length: 40 }, (_, i) => inputs(i + 1, rows * CHAIN_DIM));
    const runs = xs.map((x) => session.run({ x: new ort.Tensor('float32', x, [rows, CHAIN_DIM]) }));
    // Swap while most runs still wait in the queue.
    await runs[2];
    const info = await session.reload(fixtureBytes('matmul-chain.onnx'));
    expect(info).toMatchObject({ generation: 2, source: 'buffer' });
    expect(session.session).not.toBe(old);
    const results = await Promise.all(runs);
    expect(results).toHaveLength(40);
    results.forEach(({ y }, i) => {
      const data = y.data as Float32Array;
      for (let r = 0; r < rows; r++) {
        const expected = matmulChain(xs[i].subarray(r * CHAIN_DIM, (r + 1) * CHAIN_DIM));
        expect(maxAbsDiff(data.subarray(r * CHAIN_DIM, (r + 1) * CHAIN_DIM), expected)).toBeLessThan(1e-3);
      }
    });
    const requests = await h.points(METRICS.requests.name);
    expect(requests.map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([['completed', 40]]);
    // The retired session was released by the wrapper once idle; the runtime's release is asynchronous (bounded poll).
    const x = new ort.Tensor('float32', xs[0], [rows, CHAIN_DIM]);
    const deadline = Date.now() + 5000;
    let error: unknown;
    while (
      !(error = await old.run({ x }).then(
        () => undefined,
        (e: unknown) => e,
      )) &&
      Date.now() < deadline
    )
      await sleep(5);
    expect(String(error)).toMatch(/disposed/);
    await session.release();
  });
});

describe('session.release', () => {
  it('is idempotent, waits for accepted runs, then refuses new ones', async () => {
    h = harness();
    const session = await createSession(h.monitor, 'mlp', fixture('tiny-mlp.onnx'), { runtime: ort });
    const current = session.session;
    const runs = Array.from({ length: 5 }, (_, i) =>
      session.run({ x: new ort.Tensor('float32', new Float32Array([i, 0, 0, 0]), [1, 4]) }),
    );
    const first = session.release();
    const second = session.release();
    expect(second).toBe(first);
    expect(session.released).toBe(true);
    await first;
    const settled = await Promise.allSettled(runs);
    expect(settled.map((s) => s.status)).toEqual(Array(5).fill('fulfilled'));
    expect(session.pending).toBe(0);
    await expect(session.run({ x: new ort.Tensor('float32', new Float32Array(4), [1, 4]) })).rejects.toBeInstanceOf(
      SessionReleasedError,
    );
    await expect(session.reload(fixture('tiny-mlp.onnx'))).rejects.toBeInstanceOf(SessionReleasedError);
    await expect(current.run({ x: new ort.Tensor('float32', new Float32Array(4), [1, 4]) })).rejects.toThrow(
      /disposed/,
    );
  });
});
