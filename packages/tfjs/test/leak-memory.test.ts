import * as tf from '@tensorflow/tfjs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { createTensorLeakDetector, fileSystemHandler, loadLayersModel, watchTfMemory } from '@infersignal/tfjs';
import { TENSOR_LEAK_SIGNAL } from '../src/leak';
import { harness, saveTinyMlp, type Harness } from './helpers';

let modelPath: string;
let h: Harness;
beforeAll(async () => {
  modelPath = await saveTinyMlp();
});
afterEach(() => h?.close());

const row = [[1, 0, -1, 0.5]];

describe('tensor-leak signal', () => {
  it('a handler that forgets dispose() trips it once; numbers from the real tensor count', async () => {
    h = harness();
    const m = await loadLayersModel(h.monitor, 'mlp', tf, fileSystemHandler(modelPath), { leak: { windowSize: 20 } });
    const start = tf.memory().numTensors;
    for (let i = 0; i < 40; i++) {
      const x = tf.tensor2d(row);
      const y = (await m.predict(x)) as tf.Tensor;
      await y.data(); // reads the result, never disposes x or y: 2 tensors per request
    }
    expect(tf.memory().numTensors - start).toBe(80);
    const leaks = h.alerts.filter((a) => a.signal === TENSOR_LEAK_SIGNAL);
    expect(leaks).toHaveLength(1);
    expect(leaks[0]).toMatchObject({ level: 'warn', threshold: 0.5, labels: { model: 'mlp' } });
    expect(leaks[0].value).toBeCloseTo(2, 6);
    expect(m.leak!.leaking).toBe(true);
    await m.release();
    tf.disposeVariables();
  });

  it('a balanced handler does not trip it', async () => {
    h = harness();
    const m = await loadLayersModel(h.monitor, 'mlp', tf, fileSystemHandler(modelPath), { leak: { windowSize: 20 } });
    const start = tf.memory().numTensors;
    // Concurrent balanced requests: the count after each one wobbles but does not climb.
    for (let round = 0; round < 8; round++) {
      await Promise.all(
        Array.from({ length: 5 }, async () => {
          const x = tf.tensor2d(row);
          const y = (await m.predict(x)) as tf.Tensor;
          await y.data();
          tf.dispose([x, y]);
        }),
      );
    }
    expect(tf.memory().numTensors).toBe(start);
    expect(h.alerts.filter((a) => a.signal === TENSOR_LEAK_SIGNAL)).toEqual([]);
    expect(m.leak!.leaking).toBe(false);
    expect(Math.abs(m.leak!.slope)).toBeLessThan(0.5);
    await m.release();
  });

  it('recovers to ok when the count flattens, and validates its options', () => {
    h = harness();
    let count = 0;
    const detector = createTensorLeakDetector(h.monitor, () => count, { model: 'm', windowSize: 5 });
    for (let i = 0; i < 5; i++) {
      count += 3;
      detector.sample();
    }
    for (let i = 0; i < 5; i++) detector.sample();
    const events = h.alerts.filter((a) => a.signal === TENSOR_LEAK_SIGNAL);
    // Warn at the first full window (+3 per request); ok as soon as the window stops being a clean line.
    expect(events.map((a) => a.level)).toEqual(['warn', 'ok']);
    expect(events[0].value).toBeCloseTo(3, 9);
    expect(detector.slope).toBe(0);
    expect(detector.leaking).toBe(false);
    expect(() => createTensorLeakDetector(h.monitor, () => 0, { model: 'm', windowSize: 1 })).toThrow(
      /options\.windowSize/,
    );
    expect(() => createTensorLeakDetector(h.monitor, () => 0, { model: 'm', minSlope: 0 })).toThrow(
      /options\.minSlope/,
    );
    expect(() => createTensorLeakDetector(h.monitor, () => 0, { model: 'm', window: 5 } as never)).toThrow(
      /options\.window\b/,
    );
  });
});

describe('watchTfMemory', () => {
  it('reports numBytes of live tensors as allocated and no reserved figure on the cpu backend', async () => {
    h = harness();
    const handle = watchTfMemory(h.monitor, tf, { intervalMs: 0 });
    const held = tf.tensor1d(new Float32Array(1000));
    handle.sample();
    const bytes = tf.memory().numBytes;
    expect(bytes).toBeGreaterThanOrEqual(4000);
    expect(h.monitor.snapshot().deviceMemory['tfjs:cpu']).toMatchObject({
      allocated: bytes,
      reserved: null,
      fragmentation: null,
    });
    const allocated = await h.points(METRICS.memoryAllocated.name);
    expect(allocated.map((p) => [p.attributes[ATTR.memorySource], p.value])).toEqual([['tfjs:cpu', bytes]]);
    expect(await h.points(METRICS.memoryReserved.name)).toEqual([]);
    held.dispose();
    handle.sample();
    expect(h.monitor.snapshot().deviceMemory['tfjs:cpu'].allocated).toBe(bytes - 4000);
    handle.stop();
  });

  it('takes a reserved figure from elsewhere (e.g. the GPU sampler)', () => {
    h = harness();
    const handle = watchTfMemory(h.monitor, tf, { intervalMs: 0, reserved: () => 10_000_000, source: 'tfjs:gpu0' });
    handle.sample();
    const snap = h.monitor.snapshot().deviceMemory['tfjs:gpu0'];
    expect(snap.reserved).toBe(10_000_000);
    expect(snap.fragmentation).toBeCloseTo(1 - tf.memory().numBytes / 10_000_000, 9);
    handle.stop();
  });
});
