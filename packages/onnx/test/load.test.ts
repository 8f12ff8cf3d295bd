import { statSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS, SPANS } from '@infersignal/core';
import { createSession } from '@infersignal/onnx';
import { ModelLoadError } from '../src/errors';
import { ONNX_ATTR } from '../src/attributes';
import { fixture, fixtureBytes, harness, inputs, maxAbsDiff, tinyMlp, type Harness } from './helpers';

let h: Harness;
afterEach(() => h?.close());

const loadPoints = async (outcome: string) =>
  (await h.points(METRICS.modelLoadDuration.name)).filter((p) => p.attributes[ATTR.outcome] === outcome);

describe('createSession', () => {
  it('times the load, records size and providers, and runs the real MLP', async () => {
    h = harness();
    const session = await createSession(h.monitor, 'mlp', fixture('tiny-mlp.onnx'), { runtime: ort });
    const size = statSync(fixture('tiny-mlp.onnx')).size;

    expect(session.loadInfo).toMatchObject({
      kind: 'load',
      generation: 1,
      fileBytes: size,
      source: 'path',
      providersRequested: ['cpu'],
      providersUsed: ['cpu'],
    });
    expect(session.inputNames).toEqual(['x']);
    expect(session.outputNames).toEqual(['y']);
    // CPU and no memory source given: nothing is measured, nothing registered.
    expect(session.deviceMemory).toBeNull();
    expect(h.monitor.snapshot().deviceMemory).toEqual({});

    const [load] = await loadPoints('success');
    expect(load.attributes).toEqual({ [ATTR.model]: 'mlp', [ATTR.loadKind]: 'load', [ATTR.outcome]: 'success' });
    const value = load.value as { count: number; sum: number };
    expect(value.count).toBe(1);
    expect(value.sum).toBeGreaterThan(0);
    expect(value.sum).toBeCloseTo(session.loadInfo.seconds, 1);

    const [span] = h.spans.getFinishedSpans().filter((s) => s.name === SPANS.modelLoad);
    expect(span.attributes[ONNX_ATTR.fileSize]).toBe(size);
    expect(span.attributes[ONNX_ATTR.providersRequested]).toBe('cpu');
    expect(span.attributes[ONNX_ATTR.providersUsed]).toBe('cpu');
    expect(span.attributes[ONNX_ATTR.runtime]).toBe('onnxruntime-node');

    const x = inputs(7, 5 * 4);
    const { y } = await session.run({ x: new ort.Tensor('float32', x, [5, 4]) });
    expect(y.dims).toEqual([5, 3]);
    const expected = Array.from({ length: 5 }, (_, r) => tinyMlp(x.subarray(r * 4, r * 4 + 4))).flat();
    expect(maxAbsDiff(y.data as Float32Array, expected)).toBeLessThan(1e-5);

    // Inference went through the queue: one completed request, no tensor data in any span attribute.
    const requests = await h.points(METRICS.requests.name);
    expect(requests.map((p) => [p.attributes[ATTR.queue], p.attributes[ATTR.outcome], p.value])).toEqual([
      ['onnx:mlp', 'completed', 1],
    ]);
    for (const s of h.spans.getFinishedSpans()) {
      for (const v of Object.values(s.attributes)) expect(typeof v === 'object' && v !== null).toBe(false);
    }
    await session.release();
  });

  it('loads from bytes and reports the buffer size', async () => {
    h = harness();
    const bytes = fixtureBytes('tiny-mlp.onnx');
    const session = await createSession(h.monitor, 'mlp', bytes, {
      runtime: ort,
      sessionOptions: { executionProviders: ['cpu'] },
    });
    expect(session.loadInfo).toMatchObject({
      source: 'buffer',
      fileBytes: bytes.byteLength,
      providersRequested: ['cpu'],
      providersUsed: ['cpu'],
    });
    await session.release();
  });

  it.each([
    [
      'corrupt bytes',
      () => new TextEncoder().encode('this is not an onnx model, just garbage bytes'),
      'corrupt',
      /not a valid ONNX model.*protobuf parsing failed/,
    ],
    [
      'a truncated file',
      () => fixtureBytes('matmul-chain.onnx').subarray(0, 4096),
      'corrupt',
      /not a valid ONNX model/,
    ],
    ['a missing file', () => fixture('no-such-model.onnx'), 'missing', /does not exist/],
    [
      'an unsupported opset',
      () => fixture('unsupported-opset.onnx'),
      'unsupported_opset',
      /opset this onnxruntime does not support.*Opset 99/,
    ],
  ] as const)('%s: clear ModelLoadError after an error outcome', async (_label, source, reason, message) => {
    h = harness();
    const err = await createSession(h.monitor, 'broken', source(), { runtime: ort }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelLoadError);
    const e = err as ModelLoadError;
    expect(e).toMatchObject({ model: 'broken', kind: 'load', reason });
    expect(e.message).toMatch(message);
    expect(e.message.startsWith('Failed to load ONNX model "broken"')).toBe(true);
    expect(e.cause).toBeInstanceOf(Error);

    const [failed] = await loadPoints('error');
    expect(failed.attributes).toEqual({ [ATTR.model]: 'broken', [ATTR.loadKind]: 'load', [ATTR.outcome]: 'error' });
    expect((failed.value as { count: number }).count).toBe(1);
    expect(await loadPoints('success')).toEqual([]);
    expect(h.monitor.snapshot().models.broken).toMatchObject({ loads: 0, failures: 1, loading: 0 });
  });

  it('an execution provider that is not available fails as provider_unavailable', async () => {
    h = harness();
    const err = await createSession(h.monitor, 'mlp', fixture('tiny-mlp.onnx'), {
      runtime: ort,
      sessionOptions: { executionProviders: ['no-such-ep'] },
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'ModelLoadError', reason: 'provider_unavailable' });
    const [span] = h.spans.getFinishedSpans().filter((s) => s.name === SPANS.modelLoad);
    expect(span.attributes[ONNX_ATTR.providersRequested]).toBe('no-such-ep');
    expect(span.attributes[ATTR.outcome]).toBe('error');
  });

  it('imports onnxruntime-node itself when no runtime is passed', async () => {
    h = harness();
    const session = await createSession(h.monitor, 'mlp', fixture('tiny-mlp.onnx'));
    const { y } = await session.run({ x: new ort.Tensor('float32', new Float32Array([1, 0, -1, 0.5]), [1, 4]) });
    expect(maxAbsDiff(y.data as Float32Array, tinyMlp([1, 0, -1, 0.5]))).toBeLessThan(1e-5);
    await session.release();
  });

  it('reports device memory only from the sources it is given', async () => {
    h = harness();
    let reserved = 1000;
    const session = await createSession(h.monitor, 'mlp', fixture('tiny-mlp.onnx'), {
      runtime: ort,
      deviceMemory: { reserved: () => reserved, intervalMs: 0, source: 'test-gpu' },
    });
    session.deviceMemory!.sample();
    expect(h.monitor.snapshot().deviceMemory['test-gpu']).toMatchObject({ allocated: null, reserved: 1000 });
    reserved = 3000;
    session.deviceMemory!.sample();
    expect(h.monitor.snapshot().deviceMemory['test-gpu']).toMatchObject({ reserved: 3000 });
    await session.release();
  });

  it('rejects a bad concurrency at creation, naming the field', async () => {
    h = harness();
    await expect(
      createSession(h.monitor, 'mlp', fixture('tiny-mlp.onnx'), { runtime: ort, queue: { concurrency: 0 } }),
    ).rejects.toThrow(/options\.queue\.concurrency/);
    // Unknown keys (the flat queue settings of before among them) are refused before any load.
    for (const [options, field] of [
      [{ concurrency: 2 }, 'options.concurrency'],
      [{ queueName: 'q' }, 'options.queueName'],
      [{ deviceMemory: { allocated: 5 } }, 'options.deviceMemory.allocated'],
      [{ deviceMemory: { sauce: 'x' } }, 'options.deviceMemory.sauce'],
      [{ runtime: {} }, 'options.runtime'],
    ] as const) {
      const error = await createSession(h.monitor, 'mlp', fixture('tiny-mlp.onnx'), options as never).catch((e) => e);
      expect(error).toBeInstanceOf(InferSignalConfigError);
      expect(error.field).toBe(field);
    }
    expect(h.monitor.snapshot().models).toEqual({});
  });
});
