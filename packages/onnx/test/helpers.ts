import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
export const fixtureBytes = (name: string): Uint8Array => new Uint8Array(readFileSync(fixture(name)));

export { type Harness, harness } from '../../../test/support/model-harness';

export { sleep } from '../../../test/support/async';
export { maxAbsDiff, tinyMlp } from '../../../test/support/tiny-mlp';

export const CHAIN_DIM = 512;
const chainWeights = [0, 1].map((k) => {
  const w = new Float64Array(CHAIN_DIM * CHAIN_DIM);
  for (let i = 0; i < CHAIN_DIM; i++)
    for (let j = 0; j < CHAIN_DIM; j++) w[i * CHAIN_DIM + j] = (((i * 7 + j * 13 + k * 5) % 17) - 8) / 256;
  return w;
});

/** matmul-chain.onnx in JS: one row of 512 → 512 (two MatMul + Relu layers). */
export function matmulChain(row: ArrayLike<number>): Float64Array {
  let x = Float64Array.from(row);
  for (const w of chainWeights) {
    const y = new Float64Array(CHAIN_DIM);
    for (let i = 0; i < CHAIN_DIM; i++) {
      const xi = x[i];
      if (xi === 0) continue;
      for (let j = 0; j < CHAIN_DIM; j++) y[j] += xi * w[i * CHAIN_DIM + j];
    }
    for (let j = 0; j < CHAIN_DIM; j++) y[j] = Math.max(0, y[j]);
    x = y;
  }
  return x;
}

/** Deterministic input values in [-1, 1). */
export function inputs(seed: number, length: number): Float32Array {
  const out = new Float32Array(length);
  let s = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) / 2 ** 32) * 2 - 1;
  }
  return out;
}
