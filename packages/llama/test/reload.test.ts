import type { Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlamaModel } from '@infersignal/llama';
import { LlamaLoadError } from '../src/errors';
import type { GgufDefect } from '../../../scripts/make-gguf';
import { CONTEXT, MODEL, REQUESTS, cpuLlama, disposeLlama, gate, models, monitorFor, until } from './helpers';

const LOAD = 'infersignal.model.load.duration';

describe('hot reload', () => {
  const dir = models();
  let llama: Llama;
  beforeAll(async () => {
    ({ llama } = await cpuLlama());
  });
  afterAll(async () => {
    await disposeLlama(llama);
    dir.cleanup();
  });

  it('corrupt files while serving: every reload fails with its reason, the old model serves on, 0 failed generations', async () => {
    const t = monitorFor({ clock: undefined });
    const model = await createLlamaModel(t.monitor, 'tiny', dir.write({ printable: true }), {
      llama,
      sequences: 2,
      contextOptions: CONTEXT,
    });
    const serving = model.model;
    let stop = false;
    let served = 0;
    const failures: unknown[] = [];
    // Three clients for two sequences, generating until the reloads are done.
    const clients = [0, 1, 2].map(async (c) => {
      while (!stop) {
        await model.complete(`client ${c}`, { maxTokens: 8 }).then(
          () => served++,
          (e: unknown) => failures.push(e),
        );
      }
    });
    try {
      await until(() => served >= 3, 10_000, 'traffic');
      const reasons: string[] = [];
      for (const defect of ['missing-tensor', 'bad-key', 'bad-shape', 'not-gguf'] satisfies GgufDefect[]) {
        const error = await model.reload(dir.write({ defect })).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LlamaLoadError);
        reasons.push((error as LlamaLoadError).reason);
        expect(model.model).toBe(serving);
      }
      expect(reasons).toEqual(['missing_tensor', 'missing_key', 'bad_shape', 'not_gguf']);
      const before = served;
      await until(() => served >= before + 3, 10_000, 'traffic after the failed reloads');
      expect(serving.disposed).toBe(false);

      const info = await model.reload(dir.write({ printable: true, seed: 2 }));
      expect(info).toMatchObject({ kind: 'reload', generation: 2 });
      expect(model.model).not.toBe(serving);
      const afterSwap = served;
      await until(() => served >= afterSwap + 3, 10_000, 'traffic on the new model');
      await until(() => serving.disposed, 5000, 'the old model disposed');
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    expect(failures).toEqual([]);
    const exported = await t.collect();
    expect(exported.by(REQUESTS, 'infersignal.outcome', { [MODEL]: 'tiny' })).toEqual({ completed: served });
    expect(exported.count(LOAD, { 'infersignal.model.load.kind': 'reload', 'infersignal.outcome': 'error' })).toBe(4);
    expect(exported.count(LOAD, { 'infersignal.model.load.kind': 'reload', 'infersignal.outcome': 'success' })).toBe(1);
    await model.release();
    await t.close();
  });

  it('serves from the old model until the new one is ready and disposes it after its last generation', async () => {
    const t = monitorFor();
    const model = await createLlamaModel(t.monitor, 'tiny', dir.write({ printable: true }), {
      llama,
      sequences: 2,
      contextOptions: CONTEXT,
    });
    try {
      const old = { model: model.model, context: model.context };
      // A generation in progress on the old model (held open by the test).
      const held = gate();
      let heldOn: unknown;
      const running = model.withSequence(async (sequence) => {
        heldOn = sequence.model;
        await held.wait;
        return sequence.context.disposed;
      });
      await until(() => heldOn !== undefined, 1000, 'the held generation');
      await model.reload(dir.write({ printable: true, seed: 5 }));
      // New work runs on the new model while the old one still has its generation.
      const fresh = await model.complete('new', { maxTokens: 3 });
      expect(fresh.usage.outputTokens).toBe(3);
      expect(model.model).not.toBe(old.model);
      expect(heldOn).toBe(old.model);
      expect(old.context.disposed).toBe(false);
      held.open();
      expect(await running).toBe(false); // its context lived to the end of the generation
      expect(old.context.disposed).toBe(true);
      await until(() => old.model.disposed, 5000, 'the old model disposed');
      expect(model.model.disposed).toBe(false);
    } finally {
      await model.release();
      await t.close();
    }
  });
});
