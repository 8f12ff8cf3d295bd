import { statSync } from 'node:fs';
import type { Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GGUF_VOCABULARY_SIZE, makeGguf } from '../../../scripts/make-gguf';
import { CONTEXT, cpuLlama, models } from './helpers';

// Data bytes from the shapes: embeddings and output 64 × 260, per layer q/k/v/o 64 × 64 and gate/up/down
// 64 × 128, norms 64 (always F32).
const MATRIX_VALUES = 2 * 64 * GGUF_VOCABULARY_SIZE + 2 * (4 * 64 * 64 + 3 * 64 * 128);
const NORM_BYTES = (1 + 2 * 2) * 64 * 4;

describe('make-gguf', () => {
  const dir = models();
  let llama: Llama;
  let log: string[];
  beforeAll(async () => {
    ({ llama, log } = await cpuLlama());
  });
  afterAll(async () => {
    await llama.dispose();
    dir.cleanup();
  });

  it('writes the same bytes for the same seed, other bytes for another seed', () => {
    const a = makeGguf({ seed: 7 });
    expect(Buffer.compare(a, makeGguf({ seed: 7 }))).toBe(0);
    expect(Buffer.compare(a, makeGguf({ seed: 8 }))).not.toBe(0);
    expect(a.length).toBe(makeGguf({ seed: 8 }).length);
  });

  it('writes a GGUF v3 header with 21 tensors and the data 32-byte aligned at the end', () => {
    const bytes = makeGguf();
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('GGUF');
    expect(view.getUint32(4, true)).toBe(3);
    expect(view.getBigUint64(8, true)).toBe(21n);
    expect(view.getBigUint64(16, true)).toBe(19n);
    const dataBytes = MATRIX_VALUES * 4 + NORM_BYTES;
    expect((bytes.length - dataBytes) % 32).toBe(0);
  });

  it.each([
    ['f32', MATRIX_VALUES * 4 + NORM_BYTES],
    ['f16', MATRIX_VALUES * 2 + NORM_BYTES],
  ] as const)('%s: llama.cpp loads it with the weights the shapes imply (%i bytes)', async (type, size) => {
    const path = dir.write({ type });
    const model = await llama.loadModel({ modelPath: path });
    try {
      expect(model.size).toBe(size);
      expect(statSync(path).size).toBeLessThan(size + 8192);
      expect(model.trainContextSize).toBe(256);
      expect(model.tokens.bos).toBe(1);
      expect(model.tokens.eos).toBe(2);
    } finally {
      await model.dispose();
    }
  });

  it('detokenizes what it tokenized (▁ is a normal token), without a warning', async () => {
    const model = await llama.loadModel({ modelPath: dir.write() });
    try {
      for (const text of ['hello world', ' two  spaces', 'naïve ✓ 東京']) {
        const tokens = model.tokenize(text);
        expect(model.detokenize(tokens)).toBe(text);
      }
      // ▁ (259) for the leading space and each space, byte tokens (3 + byte) for the rest.
      expect(model.tokenize('ab c')).toEqual([259, 3 + 0x61, 3 + 0x62, 259, 3 + 0x63]);
      expect(log.filter((line) => !line.startsWith('debug') && !line.startsWith('info'))).toEqual([]);
    } finally {
      await model.dispose();
    }
  });

  it('decodes greedily to the same tokens on every run; printable models emit only printable ASCII', async () => {
    const run = async (path: string) => {
      const model = await llama.loadModel({ modelPath: path });
      const context = await model.createContext({ ...CONTEXT, sequences: 1 });
      try {
        const completion = new llama.classes.LlamaCompletion({ contextSequence: context.getSequence() });
        return await completion.generateCompletion('abc', { maxTokens: 32 });
      } finally {
        await context.dispose();
        await model.dispose();
      }
    };
    const printable = dir.write({ printable: true, seed: 3 });
    const first = await run(printable);
    expect(await run(dir.write({ printable: true, seed: 3 }))).toBe(first);
    expect(first).toMatch(/^[\x20-\x7e]{20,}$/);
  });
});
