import type { LlamaContextSequence } from 'node-llama-cpp';
import { describe, expect, it } from 'vitest';
import type { MonitoredLlamaModel } from '@infersignal/llama';
import { LLAMA_METRICS } from '../src/definition';
import { KV_BYTES_PER_TOKEN, MODEL, monitorFor, servedModel } from './helpers';

const SHIFTS = LLAMA_METRICS.kvCacheShifts.name;
const REASON = 'infersignal.kv_cache.shift.reason';

describe('KV cache as allocated versus reserved', () => {
  const { open } = servedModel({ kvCache: { intervalMs: 0 } });

  /** Both sequences, held together so each can be read (`withSequence` hands out free ones). */
  async function sequencesOf(model: MonitoredLlamaModel): Promise<LlamaContextSequence[]> {
    const out: LlamaContextSequence[] = [];
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const holders = [0, 1].map(() =>
      model.withSequence((sequence) => {
        out.push(sequence);
        if (out.length === 2) release();
        return hold;
      }),
    );
    await Promise.all(holders);
    return out;
  }

  it('tokens held per sequence are its nextTokenIndex; the device-memory source is them in bytes', async () => {
    const t = monitorFor();
    const model = await open(t);
    try {
      const stateBefore = model.context.stateSize;
      const [a, b] = await Promise.all([
        model.complete('the first prompt', { maxTokens: 40 }),
        model.complete('second', { maxTokens: 90 }),
      ]);
      const sequences = await sequencesOf(model);
      const snapshot = model.kvCache();
      const bySequence = new Map(sequences.map((s) => [s.nextTokenIndex, s]));
      expect(snapshot.sequences.map((s) => s.tokens).sort()).toEqual([...bySequence.keys()].sort());
      // A fresh sequence holds its prompt (with <s>) and what it generated.
      expect(snapshot.sequences.map((s) => s.tokens).sort((x, y) => x - y)).toEqual(
        [a, b].map((r) => r.usage.evaluatedTokens + r.usage.outputTokens).sort((x, y) => x - y),
      );
      const held = snapshot.tokens;
      expect(snapshot).toMatchObject({ capacity: 512, bytesPerToken: KV_BYTES_PER_TOKEN, usage: held / 512 });
      expect(snapshot.sequences.every((s) => s.capacity === 256 && !s.busy)).toBe(true);
      // llama.cpp's own state grows by at least the KV bytes of each token held (cell metadata on top).
      const perToken = (model.context.stateSize - stateBefore) / held;
      expect(perToken).toBeGreaterThanOrEqual(KV_BYTES_PER_TOKEN);
      expect(perToken).toBeLessThan(KV_BYTES_PER_TOKEN * 1.05);

      model.kvCacheMemory?.sample();
      const memory = t.monitor.snapshot().deviceMemory['llama-kv:tiny'];
      expect(memory).toMatchObject({ allocated: held * KV_BYTES_PER_TOKEN, reserved: 512 * KV_BYTES_PER_TOKEN });
      expect(memory.fragmentation).toBeCloseTo(1 - held / 512, 12);
      const exported = await t.collect();
      expect(exported.value(LLAMA_METRICS.kvCacheTokens.name, { [MODEL]: 'tiny' })).toBe(held);
      expect(exported.value(LLAMA_METRICS.kvCacheCapacity.name, { [MODEL]: 'tiny' })).toBe(512);
      expect(
        exported.value('infersignal.device.memory.allocated', { 'infersignal.memory.source': 'llama-kv:tiny' }),
      ).toBe(held * KV_BYTES_PER_TOKEN);
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('exports the unused share of the KV cache without alerting on it: free slots are not fragmentation', async () => {
    const t = monitorFor();
    const model = await open(t);
    try {
      // Before the first generation there is no usage to judge: not measured.
      t.monitor.tick();
      expect(t.monitor.snapshot().deviceMemory['llama-kv:tiny']).toMatchObject({ allocated: null, reserved: null });
      await model.complete('short', { maxTokens: 10 });
      // A mostly empty cache, held past the fragmentation threshold's hold time.
      for (let i = 0; i < 5; i++) {
        t.advance(1000);
        t.monitor.tick();
      }
      const memory = t.monitor.snapshot().deviceMemory['llama-kv:tiny']!;
      expect(memory.fragmentation).toBeCloseTo(1 - model.kvCache().tokens / 512, 12);
      expect(memory.fragmentation).toBeGreaterThan(0.65);
      expect(t.alerts.filter((a) => a.signal === 'gpu_fragmentation')).toEqual([]);
      const exported = await t.collect();
      expect(
        exported.value('infersignal.device.memory.fragmentation', { 'infersignal.memory.source': 'llama-kv:tiny' }),
      ).toBeCloseTo(memory.fragmentation!, 12);
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('counts every context shift of a generation that outgrows its sequence', async () => {
    const t = monitorFor();
    const model = await open(t, { sequences: 1 });
    try {
      // Ground truth from the runtime: the sequence's fill drops when it shifts (one token per callback here).
      const fill: number[] = [];
      const sequence = (await sequencesOf1(model))!;
      const result = await model.complete('x', {
        maxTokens: 700,
        contextShiftSize: 64,
        onToken: () => fill.push(sequence.nextTokenIndex),
      });
      const drops = fill.filter((v, i) => i > 0 && v < fill[i - 1]).length;
      expect(drops).toBeGreaterThanOrEqual(3);
      expect(result.contextShifts).toBe(drops);
      // Each shift runs from a full sequence (255 of 256) down to 256 − contextShiftSize.
      const shifted = fill.flatMap((v, i) => (i > 0 && v < fill[i - 1] ? [[fill[i - 1], v]] : []));
      expect(shifted).toEqual(Array(drops).fill([255, 256 - 64]));
      expect(model.kvCache().shifts).toEqual({ generation: drops, prompt: 0 });
      expect((await t.collect()).value(SHIFTS, { [MODEL]: 'tiny', [REASON]: 'generation' })).toBe(drops);

      const quiet = await model.complete('no shift', { maxTokens: 20 });
      expect(quiet.contextShifts).toBe(0);
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('counts shifts at the edge where the wrapper stops watching for them (prompt bound + maxTokens)', async () => {
    const t = monitorFor();
    const model = await open(t, { sequences: 1 });
    try {
      const sequence = (await sequencesOf1(model))!;
      // 'x' is bounded by 1 byte + a leading space + <s> = 3 tokens: up to maxTokens 256 − 2 − 3 = 251 the
      // generation cannot reach 255 tokens and no shift-size function is passed; past it, one is.
      const byMaxTokens: Record<number, number> = {};
      for (const maxTokens of [250, 251, 252, 253, 254, 255]) {
        const fill: number[] = [];
        const result = await model.complete('x', { maxTokens, onToken: () => fill.push(sequence.nextTokenIndex) });
        expect(result.usage.outputTokens).toBe(maxTokens);
        const drops = fill.filter((v, i) => i > 0 && v < fill[i - 1]).length;
        expect(result.contextShifts).toBe(drops);
        byMaxTokens[maxTokens] = drops;
      }
      expect(byMaxTokens[251]).toBe(0);
      // The range crosses the runtime's own edge, so both sides of the wrapper's bound are exercised.
      expect(byMaxTokens[255]).toBeGreaterThan(0);
      expect(model.kvCache().shifts.generation).toBe(Object.values(byMaxTokens).reduce((a, b) => a + b, 0));
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('counts a prompt cut to fit the context, and not one that fits', async () => {
    const t = monitorFor();
    const model = await open(t, { sequences: 1 });
    try {
      const fits = await model.complete('word '.repeat(40), { maxTokens: 2 });
      expect(fits.promptTruncated).toBe(false);
      // 300 words ≈ 1,500 tokens; the context keeps 256 − 25 of them.
      const cut = await model.complete('word '.repeat(300), { maxTokens: 2 });
      expect(cut.promptTruncated).toBe(true);
      expect(cut.usage.evaluatedTokens).toBeLessThanOrEqual(256);
      expect(model.kvCache().shifts).toEqual({ generation: 0, prompt: 1 });
      expect((await t.collect()).value(SHIFTS, { [MODEL]: 'tiny', [REASON]: 'prompt' })).toBe(1);
      // At the limit, against what the runtime kept: 'a' × n is n byte tokens after <s>; the room is
      // 256 − 25 (shift size) − 1 (<s>) = 230, and the sequence then holds <s>, the prompt kept, and the
      // generated token (not yet evaluated).
      const sequence = (await sequencesOf1(model))!;
      for (const n of [230, 231]) {
        const result = await model.complete('a'.repeat(n), { maxTokens: 1 });
        const kept = sequence.nextTokenIndex - 1;
        expect(result.promptTruncated).toBe(kept < n);
        expect(kept).toBe(230);
      }
      expect(model.kvCache().shifts).toEqual({ generation: 0, prompt: 2 });
      // Tokens given directly are counted as given.
      const tokens = model.model.tokenize('a'.repeat(231), false, 'trimLeadingSpace');
      expect((await model.complete(tokens, { maxTokens: 1 })).promptTruncated).toBe(true);
      expect((await model.complete(tokens.slice(1), { maxTokens: 1 })).promptTruncated).toBe(false);
    } finally {
      await model.release();
      await t.close();
    }
  });
});

/** The only sequence of a one-sequence model. */
async function sequencesOf1(model: MonitoredLlamaModel): Promise<LlamaContextSequence | undefined> {
  let found: LlamaContextSequence | undefined;
  await model.withSequence((sequence) => {
    found = sequence;
  });
  return found;
}
