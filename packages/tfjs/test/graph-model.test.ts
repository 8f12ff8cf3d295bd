import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { fileSystemHandler, loadGraphModel } from '@infersignal/tfjs';
import { ModelLoadError } from '../src/errors';
import {
  GRAPH_WEIGHTS,
  SHIFTED_WEIGHTS,
  graphDef,
  graphReference,
  writeGraphModel,
  type GraphWeights,
} from './graph-fixture';
import { harness, maxAbsDiff, type Harness } from './helpers';

let root: string;
let modelPath: string;
let shiftedPath: string;
let h: Harness;
beforeAll(async () => {
  await tf.setBackend('cpu');
  root = mkdtempSync(join(tmpdir(), 'infersignal-tfjs-graph-'));
  modelPath = writeGraphModel(join(root, 'v1'));
  shiftedPath = writeGraphModel(join(root, 'v2'), SHIFTED_WEIGHTS);
});
afterEach(() => h?.close());

// Rows chosen so Relu clips some outputs to 0 and passes others.
const X = [
  [1, 0, -1, 0.5],
  [0.25, 2, -0.5, 1],
  [-1, -1, 1, 1],
];

async function expectReference(out: tf.Tensor, weights: GraphWeights): Promise<void> {
  const expected = X.flatMap((row) => graphReference(row, weights));
  expect(out.shape).toEqual([3, 3]);
  expect(maxAbsDiff(await out.data(), expected)).toBeLessThan(1e-6);
}

describe('loadGraphModel (hand-written graph-model format, pure-JS CPU backend)', () => {
  it('records the load; execute and predict go through the queue with the reference numbers', async () => {
    h = harness();
    const m = await loadGraphModel(h.monitor, 'graph', tf, fileSystemHandler(modelPath));
    const load = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.model]: 'graph',
      [ATTR.loadKind]: 'load',
      [ATTR.outcome]: 'success',
    });
    expect(load!.count).toBe(1);
    expect(load!.sum).toBeGreaterThan(0);
    expect(m.generation).toBe(1);

    // The reference has both signs before Relu, so the test would notice a missing bias or Relu.
    const reference = X.flatMap((row) => graphReference(row));
    expect(reference.some((v) => v === 0)).toBe(true);
    expect(reference.some((v) => v > 0)).toBe(true);

    const x = tf.tensor2d(X);
    // 4 at once on a concurrency-1 queue: 3 of them wait for the one before.
    const outputs = await Promise.all([
      m.execute({ x }, 'y') as Promise<tf.Tensor>,
      m.execute(x) as Promise<tf.Tensor>,
      m.predict(x) as Promise<tf.Tensor>,
      m.predict({ x }) as Promise<tf.Tensor>,
    ]);
    for (const y of outputs) await expectReference(y, GRAPH_WEIGHTS);
    tf.dispose([x, ...outputs]);

    const requests = await h.points(METRICS.requests.name);
    expect(
      requests.map((p) => [p.attributes[ATTR.queue], p.attributes[ATTR.model], p.attributes[ATTR.outcome], p.value]),
    ).toEqual([['tfjs:graph', 'graph', 'completed', 4]]);
    const wait = await h.histogram(METRICS.queueWait.name, { [ATTR.queue]: 'tfjs:graph' });
    expect(wait!.count).toBe(4);
    expect(wait!.max).toBeGreaterThan(0);
    const inference = await h.histogram(METRICS.inferenceDuration.name, {
      [ATTR.queue]: 'tfjs:graph',
      [ATTR.outcome]: 'completed',
    });
    expect(inference!.count).toBe(4);
    await m.release();
  });

  it('a reload is recorded as kind reload and serves the new weights', async () => {
    h = harness();
    const m = await loadGraphModel(h.monitor, 'graph', tf, fileSystemHandler(modelPath));
    const before = m.model;
    await m.reload(fileSystemHandler(shiftedPath));
    expect(m.generation).toBe(2);
    expect(m.model).not.toBe(before);

    const load = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.model]: 'graph',
      [ATTR.loadKind]: 'load',
      [ATTR.outcome]: 'success',
    });
    const reload = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.model]: 'graph',
      [ATTR.loadKind]: 'reload',
      [ATTR.outcome]: 'success',
    });
    expect(load!.count).toBe(1);
    expect(reload!.count).toBe(1);
    expect(reload!.sum).toBeGreaterThan(0);

    const x = tf.tensor2d(X);
    const y = (await m.execute(x)) as tf.Tensor;
    await expectReference(y, SHIFTED_WEIGHTS);
    tf.dispose([x, y]);
    await m.release();
  });

  it('a corrupt graph model.json gives ModelLoadError and an error outcome', async () => {
    h = harness();
    // Bytes cut off mid-file: not JSON any more.
    const truncated = join(root, 'truncated.json');
    const whole = JSON.stringify({ format: 'graph-model', modelTopology: graphDef(), weightsManifest: [] });
    writeFileSync(truncated, whole.slice(0, whole.length / 2));
    const err = await loadGraphModel(h.monitor, 'broken', tf, fileSystemHandler(truncated)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err).toMatchObject({ model: 'broken', kind: 'load' });
    expect((err as Error).message).toMatch(/^Failed to load TF.js model "broken": .*JSON/);
    expect((err as Error).cause).toBeInstanceOf(SyntaxError);

    // Valid JSON, broken graph: MatMul reads a node the GraphDef does not have.
    const dangling = writeGraphModel(join(root, 'dangling'), GRAPH_WEIGHTS, graphDef(['x', 'missing_weights']));
    const err2 = await loadGraphModel(h.monitor, 'broken', tf, fileSystemHandler(dangling)).catch((e: unknown) => e);
    expect(err2).toBeInstanceOf(ModelLoadError);
    expect((err2 as Error).message).toMatch(/^Failed to load TF.js model "broken": /);
    expect((err2 as Error).cause).toBeInstanceOf(Error);

    const failed = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.model]: 'broken',
      [ATTR.loadKind]: 'load',
      [ATTR.outcome]: 'error',
    });
    expect(failed!.count).toBe(2);
    const succeeded = await h.histogram(METRICS.modelLoadDuration.name, {
      [ATTR.model]: 'broken',
      [ATTR.outcome]: 'success',
    });
    expect(succeeded).toBeUndefined();
  });
});
