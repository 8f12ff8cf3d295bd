import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS } from '@infersignal/core';
import { fileSystemHandler, loadLayersModel, loadModel } from '@infersignal/tfjs';
import { ModelLoadError, ModelReleasedError } from '../src/errors';
import { delayed, harness, maxAbsDiff, saveTinyMlp, taking, tinyMlp, type Harness } from './helpers';

let modelPath: string;
let h: Harness;
beforeAll(async () => {
  modelPath = await saveTinyMlp();
});
afterEach(() => h?.close());

const X = [
  [1, 0, -1, 0.5],
  [0.25, 2, -0.5, 1],
  [-1, -1, 1, 1],
];

async function predictRows(out: tf.Tensor): Promise<void> {
  const data = await out.data();
  const expected = X.flatMap((row) => tinyMlp(row));
  expect(out.shape).toEqual([3, 3]);
  expect(maxAbsDiff(data, expected)).toBeLessThan(1e-5);
}

describe('loadLayersModel', () => {
  it('times the load, serves predict through the queue with correct numbers', async () => {
    h = harness();
    const m = await loadLayersModel(h.monitor, 'mlp', tf, fileSystemHandler(modelPath));
    const load = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.loadKind]: 'load',
      [ATTR.outcome]: 'success',
    });
    expect(load!.count).toBe(1);
    expect(load!.sum).toBeGreaterThan(0);
    const x = tf.tensor2d(X);
    const y = (await m.predict(x)) as tf.Tensor;
    await predictRows(y);
    tf.dispose([x, y]);
    const requests = await h.points(METRICS.requests.name);
    expect(requests.map((p) => [p.attributes[ATTR.queue], p.attributes[ATTR.outcome], p.value])).toEqual([
      ['tfjs:mlp', 'completed', 1],
    ]);
    await m.release();
  });

  it('a reload over 3× baseline raises exactly one spike alert; durations recorded', async () => {
    // The monitor's clock is the test's; each load moves it by the load time it stands for.
    const now = { ms: 1_000_000 };
    h = harness({ clock: () => now.ms });
    const m = await loadLayersModel(h.monitor, 'mlp', tf, taking(fileSystemHandler(modelPath), 400, now));
    await m.reload(taking(fileSystemHandler(modelPath), 400, now));
    await m.reload(taking(fileSystemHandler(modelPath), 3000, now));
    await m.reload(taking(fileSystemHandler(modelPath), 400, now));
    expect(m.generation).toBe(4);
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
    expect((spikes[0].details as { ratio: number; kind: string }).kind).toBe('reload');
    // 3 s over the 0.4 s median of the loads before it (over the 1 s floor: loads shorter are never spikes).
    expect((spikes[0].details as { ratio: number }).ratio).toBeCloseTo(7.5, 9);
    await m.release();
  });

  it('a corrupt model.json gives a clear error and an error outcome; a failed reload keeps the old model', async () => {
    h = harness();
    const bad = join(dirname(modelPath), 'corrupt.json');
    writeFileSync(bad, '{ this is not json');
    const err = await loadLayersModel(h.monitor, 'broken', tf, fileSystemHandler(bad)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelLoadError);
    expect((err as Error).message).toMatch(/^Failed to load TF.js model "broken": .*JSON/);
    expect((err as Error).cause).toBeInstanceOf(SyntaxError);
    const failed = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.model]: 'broken',
      [ATTR.outcome]: 'error',
    });
    expect(failed!.count).toBe(1);

    const m = await loadLayersModel(h.monitor, 'mlp', tf, fileSystemHandler(modelPath));
    const before = m.model;
    await expect(m.reload(fileSystemHandler(bad))).rejects.toMatchObject({ name: 'ModelLoadError', kind: 'reload' });
    expect(m.model).toBe(before);
    const x = tf.tensor2d(X);
    const y = (await m.predict(x)) as tf.Tensor;
    await predictRows(y);
    tf.dispose([x, y]);
    await m.release();
  });

  it('reload under load loses no request and frees the old weights', async () => {
    h = harness();
    const baseline = tf.memory().numTensors;
    const m = await loadLayersModel(h.monitor, 'mlp', tf, fileSystemHandler(modelPath), { leak: false });
    const weights = tf.memory().numTensors - baseline;
    expect(weights).toBe(4);
    const x = tf.tensor2d(X);
    const calls = Array.from({ length: 30 }, () => m.predict(x) as Promise<tf.Tensor>);
    const reloading = m.reload(delayed(fileSystemHandler(modelPath), 5, []));
    const outputs = await Promise.all(calls);
    await reloading;
    for (const y of outputs) await predictRows(y);
    tf.dispose(outputs);
    tf.dispose(x);
    expect(m.generation).toBe(2);
    const requests = await h.points(METRICS.requests.name);
    expect(requests.map((p) => [p.attributes[ATTR.outcome], p.value])).toEqual([['completed', 30]]);
    // Only the new model's 4 weight tensors remain.
    expect(tf.memory().numTensors - baseline).toBe(4);
    const first = m.release();
    expect(m.release()).toBe(first);
    await first;
    expect(tf.memory().numTensors - baseline).toBe(0);
    await expect(m.predict(x)).rejects.toBeInstanceOf(ModelReleasedError);
  });
});

describe('options', () => {
  it('the shared dialect: unknown keys and bad values are refused, naming the field, before the load', async () => {
    h = harness();
    let loads = 0;
    const loader = async () => {
      loads++;
      return { predict: () => tf.scalar(0), dispose: () => {} };
    };
    for (const [options, field] of [
      [{ concurrency: 2 }, 'options.concurrency'],
      [{ queueName: 'q' }, 'options.queueName'],
      [{ queue: { concurrency: 0 } }, 'options.queue.concurrency'],
      [{ queue: { name: '' } }, 'options.queue.name'],
      [{ leak: { windowSize: 2 } }, 'options.leak.windowSize'],
      [{ leak: { window: 5 } }, 'options.leak.window'],
    ] as const) {
      const error = await loadModel(h.monitor, 'm', tf, loader, 'x', options as never).catch((e: unknown) => e);
      expect(error, field).toBeInstanceOf(InferSignalConfigError);
      expect((error as InferSignalConfigError).field).toBe(field);
    }
    expect(loads).toBe(0);
    expect(() => loadLayersModel(h.monitor, 'm', {} as never, 'x')).toThrow(/"tf"/);
    const model = await loadModel(h.monitor, 'm', tf, loader, 'x', { queue: { name: 'shared', concurrency: 2 } });
    expect([model.queue.name, model.queue.concurrency]).toEqual(['shared', 2]);
    await model.release();
  });
});
