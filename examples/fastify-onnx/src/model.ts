/**
 * The model side of the example: the committed test model
 * `matmul-chain.onnx` (input `x` [rows, 512] → two 512×512 MatMul + Relu
 * layers → output `y` [rows, 512]), how a JSON request becomes its input
 * tensor, and how repeated runs become a stream of fake tokens.
 *
 * One request carries a batch of `rows` rows: a single row costs ~0.05 ms,
 * less than Fastify spends on the HTTP request, and a server whose
 * bottleneck is HTTP parsing never queues in front of its model. With 512
 * rows a run takes ~2.5 ms on one CPU thread (measured on the 2-core dev
 * machine), so the model is the bottleneck, as on a real inference server.
 */
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import type { MonitoredSession } from '@infersignal/onnx';

/** Width of the model's rows. */
export const DIM = 512;

/** The committed model, reused from the ONNX package's tests (2 MiB). */
export const DEFAULT_MODEL_PATH = fileURLToPath(
  new URL('../../../packages/onnx/test/fixtures/matmul-chain.onnx', import.meta.url),
);

/** Largest batch a client may ask for (bounds memory per request: 2 MiB in, 2 MiB out). */
export const MAX_ROWS = 1024;

const VOCABULARY = (
  'the a model token stream queue signal early warning before failure latency wait capacity load server node ' +
  'onnx fastify inference batch prompt answer fine quick brown fox jumps over lazy dog and then some more'
).split(' ');

/**
 * Builds the [rows, 512] input of one request: the client's values tiled
 * into row 0, then copied into the other rows (memcpy, not a JS loop: a
 * request must not cost more CPU in JavaScript than in the model).
 */
export function inputTensor(values: ArrayLike<number>, rows: number): ort.Tensor {
  const data = new Float32Array(rows * DIM);
  const n = values.length;
  for (let i = 0; i < DIM; i++) data[i] = n > 0 ? Number(values[i % n]) || 0 : ((i % 17) - 8) / 8;
  const row0 = data.subarray(0, DIM);
  for (let r = 1; r < rows; r++) data.set(row0, r * DIM);
  return new ort.Tensor('float32', data, [rows, DIM]);
}

/** What `/v1/infer` answers about row 0 of the output: no 2 MiB JSON bodies. */
export interface OutputSummary {
  /** Index of the largest value of row 0. */
  argmax: number;
  /** Euclidean norm of row 0. */
  norm: number;
  /** The first 8 values of row 0, rounded to 6 digits. */
  head: number[];
}

export function summarize(output: ort.Tensor): OutputSummary {
  const data = output.data as Float32Array;
  let argmax = 0;
  let sumSquares = 0;
  for (let i = 0; i < DIM; i++) {
    const v = data[i];
    sumSquares += v * v;
    if (v > data[argmax]) argmax = i;
  }
  return {
    argmax,
    norm: Math.sqrt(sumSquares),
    head: Array.from(data.subarray(0, 8), (v) => Math.round(v * 1e6) / 1e6),
  };
}

/** Seeds a token stream's state row from the prompt (deterministic: same prompt, same tokens). */
function seedRow(prompt: string): Float32Array {
  const row = new Float32Array(DIM);
  let h = 2166136261;
  for (let i = 0; i < prompt.length; i++) h = Math.imul(h ^ prompt.charCodeAt(i), 16777619);
  for (let i = 0; i < DIM; i++) {
    h = Math.imul(h ^ (h >>> 15), 2246822507) >>> 0;
    row[i] = (h / 2 ** 32) * 2 - 1;
  }
  return row;
}

/**
 * Fake autoregressive decoding: each token is one run of the model on the
 * previous step's output (renormalised, since two Relu layers shrink it),
 * batched to `rows` rows so a step costs what a decode step would. The token
 * is a word picked by the argmax of row 0. Every run goes through the
 * session's queue, so streams and `/v1/infer` contend for the same model.
 */
export async function* generateTokens(
  session: MonitoredSession,
  prompt: string,
  maxTokens: number,
  rows: number,
  signal?: AbortSignal,
): AsyncGenerator<string> {
  let state = seedRow(prompt);
  for (let step = 0; step < maxTokens; step++) {
    if (signal?.aborted) return;
    const result = await session.run({ [session.inputNames[0]]: inputTensor(state, rows) });
    const out = result[session.outputNames[0]] as ort.Tensor;
    const row = (out.data as Float32Array).subarray(0, DIM);
    const { argmax } = summarize(out);
    // Renormalise and perturb by the step so the chain neither dies out nor repeats.
    let max = 0;
    for (let i = 0; i < DIM; i++) max = Math.max(max, Math.abs(row[i]));
    const next = new Float32Array(DIM);
    for (let i = 0; i < DIM; i++) next[i] = (max > 0 ? row[i] / max : 0) - 0.5 + ((i * 31 + step * 7) % 13) / 13;
    state = next;
    yield VOCABULARY[(argmax + step) % VOCABULARY.length];
  }
}
