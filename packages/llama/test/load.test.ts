import { statSync } from 'node:fs';
import { LlamaLogLevel, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InferSignalConfigError } from '@infersignal/core';
import { createLlamaModel } from '@infersignal/llama';
import { LlamaLoadError, LlamaModelReleasedError } from '../src/errors';
import {
  CONTEXT,
  KV_BYTES_PER_TOKEN,
  MODEL,
  REQUESTS,
  collectGarbage,
  cpuLlama,
  disposeLlama,
  models,
  monitorFor,
} from './helpers';

const LOAD = 'infersignal.model.load.duration';

describe('load', () => {
  const dir = models();
  let llama: Llama;
  let good: string;
  beforeAll(async () => {
    ({ llama } = await cpuLlama());
    good = dir.write();
  });
  afterAll(async () => {
    await disposeLlama(llama);
    dir.cleanup();
  });

  it('times model file + context as one model_load and reports what it loaded', async () => {
    const t = monitorFor();
    // The source function runs inside the timed load: 200 ms on the monitor's clock.
    const model = await createLlamaModel(
      t.monitor,
      'tiny',
      () => {
        t.advance(200);
        return good;
      },
      { llama, sequences: 2, contextOptions: CONTEXT, kvCache: false },
    );
    try {
      const exported = await t.collect();
      const load = exported.histogram(LOAD, { [MODEL]: 'tiny', 'infersignal.model.load.kind': 'load' });
      expect(load?.count).toBe(1);
      expect(load?.sum).toBeCloseTo(0.2, 9);
      expect(exported.value('infersignal.model.load.baseline', { [MODEL]: 'tiny' })).toBeCloseTo(0.2, 9);
      expect(model.loadInfo).toMatchObject({
        kind: 'load',
        generation: 1,
        path: good,
        fileBytes: statSync(good).size,
        gpu: false,
        gpuLayers: 0,
        contextSize: 256,
        sequences: 2,
        kvBytesPerToken: KV_BYTES_PER_TOKEN,
      });
      expect(model.context.totalSequences).toBe(2);
      expect(model.queue.concurrency).toBe(2);
      expect(model.queue.name).toBe('llama:tiny');
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('warns model_load when a reload takes more than 3× the baseline', async () => {
    const t = monitorFor();
    const slow = (ms: number) => () => {
      t.advance(ms);
      return good;
    };
    const model = await createLlamaModel(t.monitor, 'tiny', slow(200), { llama, contextOptions: CONTEXT });
    try {
      await model.reload(slow(500));
      expect(t.alerts.filter((a) => a.signal === 'model_load')).toEqual([]);
      // Baseline: median of 0.2 and 0.5 = 0.35 s; 1.2 s is 3.4×.
      await model.reload(slow(1200));
      const alert = t.alerts.find((a) => a.signal === 'model_load');
      expect(alert).toMatchObject({ level: 'warn', labels: { model: 'tiny' } });
      expect(alert?.value).toBeCloseTo(1.2, 9);
      expect(alert?.threshold).toBeCloseTo(3 * 0.35, 9);
      expect(model.loadInfo.generation).toBe(3);
      const exported = await t.collect();
      expect(exported.sum('infersignal.model.load.spikes', { [MODEL]: 'tiny' })).toBe(1);
    } finally {
      await model.release();
      await t.close();
    }
  });

  it.each([
    ['missing-tensor', 'missing_tensor', /tensor 'blk\.1\.ffn_down\.weight'/],
    ['bad-key', 'missing_key', /key not found in model: llama\.context_length/],
    ['bad-shape', 'bad_shape', /tensor 'blk\.0\.attn_q\.weight' has wrong shape; expected 64, 64, got 64, 32/],
  ] as const)(
    '%s: LlamaLoadError says why, from llama.cpp’s log, and the failure is recorded',
    async (defect, reason, detail) => {
      const t = monitorFor();
      const error = await createLlamaModel(t.monitor, 'broken', dir.write({ defect }), {
        llama,
        contextOptions: CONTEXT,
      }).catch((e: unknown) => e);
      try {
        expect(error).toBeInstanceOf(LlamaLoadError);
        const e = error as LlamaLoadError;
        expect(e).toMatchObject({ model: 'broken', kind: 'load', reason });
        expect(e.detail).toMatch(detail);
        expect(e.message).toMatch(detail);
        expect((e.cause as Error).message).toBe('Failed to load model');
        const exported = await t.collect();
        expect(exported.count(LOAD, { [MODEL]: 'broken', 'infersignal.outcome': 'error' })).toBe(1);
        expect(t.monitor.snapshot().models.broken).toMatchObject({ loads: 0, failures: 1 });
      } finally {
        await t.close();
      }
    },
  );

  it('not a GGUF and a missing file are told apart without llama.cpp', async () => {
    const t = monitorFor();
    try {
      const notGguf = await createLlamaModel(t.monitor, 'm', dir.write({ defect: 'not-gguf' }), { llama }).catch(
        (e: unknown) => e,
      );
      expect(notGguf).toMatchObject({ name: 'LlamaLoadError', reason: 'not_gguf', detail: null });
      const missing = await createLlamaModel(t.monitor, 'm', `${dir.dir}/absent.gguf`, { llama }).catch(
        (e: unknown) => e,
      );
      expect(missing).toMatchObject({ name: 'LlamaLoadError', reason: 'missing_file' });
      expect((missing as LlamaLoadError).cause).toMatchObject({ code: 'ENOENT' });
      expect(t.monitor.snapshot().models.m.failures).toBe(2);
    } finally {
      await t.close();
    }
  });

  it('rejects bad options at creation, naming the field', async () => {
    const t = monitorFor();
    try {
      const field = (options: object, name = 'm', source: unknown = good) =>
        createLlamaModel(t.monitor, name, source as string, { llama, ...options }).then(
          () => 'loaded',
          (e: unknown) => (e instanceof InferSignalConfigError ? e.field : e),
        );
      expect(await field({ sequences: 0 })).toBe('llama.sequences');
      expect(await field({ sequences: 1.5 })).toBe('llama.sequences');
      expect(await field({ shed: 'yes' })).toBe('llama.shed');
      expect(await field({ kvCache: 5 })).toBe('llama.kvCache');
      expect(await field({}, '')).toBe('llama.name');
      expect(await field({}, 'm', 42)).toBe('llama.source');
      expect(await field({ llama: {} })).toBe('llama.llama');
      const queue = t.monitor.queue('shared', { concurrency: 3 });
      expect(await field({ sequences: 2, queue })).toBe('llama.queue');
    } finally {
      await t.close();
    }
  });

  it('after release: work is refused as unavailable, the context and model are disposed', async () => {
    const t = monitorFor();
    const model = await createLlamaModel(t.monitor, 'tiny', good, { llama, contextOptions: CONTEXT });
    const { context, model: llamaModel } = model;
    await model.release();
    expect(model.released).toBe(true);
    expect(context.disposed).toBe(true);
    expect(llamaModel.disposed).toBe(true);
    await expect(model.complete('hi')).rejects.toBeInstanceOf(LlamaModelReleasedError);
    await expect(model.reload(good)).rejects.toBeInstanceOf(LlamaModelReleasedError);
    expect((await t.collect()).sum(REQUESTS, { 'infersignal.outcome': 'unavailable' })).toBe(1);
    expect(llama.disposed).toBe(false); // the caller's Llama stays theirs
    await t.close();
  });

  it('release() ends even when node-llama-cpp cannot dispose the Llama it made after a failed load', async () => {
    const t = monitorFor();
    // No `llama` given: the wrapper makes one, and release() disposes it.
    const model = await createLlamaModel(t.monitor, 'own', good, {
      llamaOptions: { gpu: false, maxThreads: 1, logLevel: LlamaLogLevel.error, logger: () => {} },
      contextOptions: CONTEXT,
    });
    const own = model.llama;
    expect(own).not.toBe(llama);
    // (Its reason may read `unknown` here: llama.cpp's log reaches one Llama instance per process, and this
    // process has two.)
    await expect(model.reload(dir.write({ defect: 'bad-shape' }))).rejects.toBeInstanceOf(LlamaLoadError);
    // The failed model object, gone: node-llama-cpp's handle on it can now never be released.
    collectGarbage();
    const started = performance.now();
    await model.release();
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(t.monitor.snapshot().internalErrors).toBe(1);
    expect(t.warnings.join('\n')).toMatch(/error in llama\.dispose .*did not settle within 2000 ms/);
    await t.close();
  });
});
