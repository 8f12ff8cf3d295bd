/**
 * Writes a tiny, valid GGUF v3 model of the `llama` architecture with seeded random weights, so tests and
 * examples run the real llama.cpp runtime without downloading a model. The same seed gives the same bytes.
 *
 *   pnpm exec tsx scripts/make-gguf.ts OUT.gguf [--f16] [--printable] [--seed N] [--defect missing-tensor|bad-key|bad-shape|not-gguf]
 *
 * Shape: embedding 64, 2 layers, 4 heads, feed-forward 128, context 256 (~470 KB as F32, ~240 KB as F16).
 * Vocabulary (SentencePiece style): `<unk>`, `<s>`, `</s>`, the 256 byte tokens `<0x00>`…`<0xFF>` and `▁`
 * as a normal token, without which detokenizing does not round-trip. The text it generates is noise.
 *
 * Defects, for load-error tests: `missing-tensor` leaves out blk.1.ffn_down.weight, `bad-key` leaves out
 * llama.context_length, `bad-shape` writes blk.0.attn_q.weight as 64×32, `not-gguf` is not a GGUF at all.
 * Layout per the GGUF spec: little-endian, metadata value types u32 4, i32 5, f32 6, string 8, array 9;
 * tensor types F32 0, F16 1; dimensions in ggml order (innermost first); data aligned to 32 bytes.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export type GgufDefect = 'missing-tensor' | 'bad-key' | 'bad-shape' | 'not-gguf';

export interface GgufOptions {
  /** Seed of the weights (default 1). */
  seed?: number;
  /** Weight type of the matrices (default f32; norms stay f32). */
  type?: 'f32' | 'f16';
  /** Training context length written in the metadata (default 256). */
  contextLength?: number;
  /**
   * Only printable ASCII bytes and `▁` can win greedy decoding (the other rows of output.weight are zero),
   * so every generated token is a whole character and the text streams one token per callback (default
   * false: any token, and byte tokens that only form a character together arrive grouped).
   */
  printable?: boolean;
  defect?: GgufDefect;
}

const EMBD = 64;
const LAYERS = 2;
const HEADS = 4;
const FF = 128;
const ALIGNMENT = 32;
const U32 = 4;
const I32 = 5;
const F32 = 6;
const STRING = 8;
const ARRAY = 9;

/** `<unk>`, `<s>`, `</s>`, 256 byte tokens, `▁`: 260 tokens. */
export const GGUF_VOCABULARY_SIZE = 260;

type Value =
  | { type: typeof U32 | typeof I32 | typeof F32; value: number }
  | string
  | { array: 'string'; values: string[] }
  | { array: typeof F32 | typeof I32; values: number[] };

interface Tensor {
  name: string;
  dims: number[];
  f16: boolean;
  data: Float32Array;
}

/** mulberry32: small, seedable, the same sequence on every platform. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function vocabulary(): { tokens: string[]; types: number[] } {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [2, 3, 3]; // unknown, control, control
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(6); // byte
  }
  tokens.push('\u2581');
  types.push(1); // normal
  return { tokens, types };
}

function tensors(options: GgufOptions): Tensor[] {
  const next = random(options.seed ?? 1);
  const f16 = options.type === 'f16';
  const matrix = (name: string, cols: number, rows: number): Tensor => {
    const data = new Float32Array(cols * rows);
    for (let i = 0; i < data.length; i++) data[i] = (next() * 2 - 1) / Math.sqrt(cols);
    return { name, dims: [cols, rows], f16, data };
  };
  const norm = (name: string): Tensor => ({ name, dims: [EMBD], f16: false, data: new Float32Array(EMBD).fill(1) });
  const out = [matrix('token_embd.weight', EMBD, GGUF_VOCABULARY_SIZE), norm('output_norm.weight')];
  const output = matrix('output.weight', EMBD, GGUF_VOCABULARY_SIZE);
  if (options.printable) {
    // Token ids: 0–2 specials, 3 + b for byte b, 259 for ▁. Zero logits lose to the best of ~95 random ones.
    for (let token = 0; token < GGUF_VOCABULARY_SIZE; token++) {
      const byte = token - 3;
      if (token === GGUF_VOCABULARY_SIZE - 1 || (byte >= 0x20 && byte < 0x7f)) continue;
      output.data.fill(0, token * EMBD, (token + 1) * EMBD);
    }
  }
  out.push(output);
  for (let i = 0; i < LAYERS; i++) {
    const q = options.defect === 'bad-shape' && i === 0 ? EMBD / 2 : EMBD;
    out.push(norm(`blk.${i}.attn_norm.weight`), matrix(`blk.${i}.attn_q.weight`, EMBD, q));
    out.push(matrix(`blk.${i}.attn_k.weight`, EMBD, EMBD), matrix(`blk.${i}.attn_v.weight`, EMBD, EMBD));
    out.push(matrix(`blk.${i}.attn_output.weight`, EMBD, EMBD), norm(`blk.${i}.ffn_norm.weight`));
    out.push(matrix(`blk.${i}.ffn_gate.weight`, EMBD, FF), matrix(`blk.${i}.ffn_up.weight`, EMBD, FF));
    out.push(matrix(`blk.${i}.ffn_down.weight`, FF, EMBD));
  }
  return options.defect === 'missing-tensor' ? out.filter((t) => t.name !== 'blk.1.ffn_down.weight') : out;
}

function metadata(options: GgufOptions): Array<[string, Value]> {
  const { tokens, types } = vocabulary();
  const u32 = (value: number): Value => ({ type: U32, value });
  const kv: Array<[string, Value]> = [
    ['general.architecture', 'llama'],
    ['general.name', 'infersignal-tiny'],
    ['general.alignment', u32(ALIGNMENT)],
    ['general.file_type', u32(options.type === 'f16' ? 1 : 0)],
    ['llama.context_length', u32(options.contextLength ?? 256)],
    ['llama.embedding_length', u32(EMBD)],
    ['llama.block_count', u32(LAYERS)],
    ['llama.feed_forward_length', u32(FF)],
    ['llama.attention.head_count', u32(HEADS)],
    ['llama.attention.head_count_kv', u32(HEADS)],
    ['llama.attention.layer_norm_rms_epsilon', { type: F32, value: 1e-5 }],
    ['llama.rope.dimension_count', u32(EMBD / HEADS)],
    ['tokenizer.ggml.model', 'llama'],
    ['tokenizer.ggml.tokens', { array: 'string', values: tokens }],
    ['tokenizer.ggml.scores', { array: F32, values: tokens.map((_, i) => (i === tokens.length - 1 ? -1 : 0)) }],
    ['tokenizer.ggml.token_type', { array: I32, values: types }],
    ['tokenizer.ggml.unknown_token_id', u32(0)],
    ['tokenizer.ggml.bos_token_id', u32(1)],
    ['tokenizer.ggml.eos_token_id', u32(2)],
  ];
  return options.defect === 'bad-key' ? kv.filter(([key]) => key !== 'llama.context_length') : kv;
}

/** Growable little-endian byte writer. */
class Writer {
  private buffer = new Uint8Array(1 << 16);
  private view = new DataView(this.buffer.buffer);
  length = 0;

  private reserve(n: number): number {
    if (this.length + n > this.buffer.length) {
      const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + n));
      grown.set(this.buffer.subarray(0, this.length));
      this.buffer = grown;
      this.view = new DataView(grown.buffer);
    }
    const at = this.length;
    this.length += n;
    return at;
  }
  u32(v: number): void {
    const at = this.reserve(4); // before reading this.view: reserve may replace it
    this.view.setUint32(at, v, true);
  }
  i32(v: number): void {
    const at = this.reserve(4);
    this.view.setInt32(at, v, true);
  }
  u64(v: number): void {
    const at = this.reserve(8);
    this.view.setBigUint64(at, BigInt(v), true);
  }
  f32(v: number): void {
    const at = this.reserve(4);
    this.view.setFloat32(at, v, true);
  }
  f16(v: number): void {
    const at = this.reserve(2);
    this.view.setUint16(at, toHalf(v), true);
  }
  string(s: string): void {
    const bytes = new TextEncoder().encode(s);
    this.u64(bytes.length);
    const at = this.reserve(bytes.length);
    this.buffer.set(bytes, at);
  }
  align(): void {
    this.reserve((ALIGNMENT - (this.length % ALIGNMENT)) % ALIGNMENT);
  }
  bytes(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }
}

/** IEEE 754 half precision, round to nearest (the weights are small and finite). */
function toHalf(value: number): number {
  const f = new DataView(new ArrayBuffer(4));
  f.setFloat32(0, value);
  const x = f.getUint32(0);
  const sign = (x >>> 16) & 0x8000;
  const exponent = ((x >>> 23) & 0xff) - 127 + 15;
  if (exponent <= 0) return sign; // below half's normal range: zero is close enough for random weights
  if (exponent >= 31) return sign | 0x7c00;
  const mantissa = x & 0x7fffff;
  const half = sign | (exponent << 10) | (mantissa >>> 13);
  return (mantissa & 0x1000) !== 0 ? half + 1 : half;
}

function writeValue(w: Writer, value: Value): void {
  if (typeof value === 'string') {
    w.u32(STRING);
    w.string(value);
  } else if ('type' in value) {
    w.u32(value.type);
    if (value.type === U32) w.u32(value.value);
    else if (value.type === I32) w.i32(value.value);
    else w.f32(value.value);
  } else {
    w.u32(ARRAY);
    w.u32(value.array === 'string' ? STRING : value.array);
    w.u64(value.values.length);
    for (const item of value.values) {
      if (typeof item === 'string') w.string(item);
      else if (value.array === F32) w.f32(item);
      else w.i32(item);
    }
  }
}

/** The bytes of a model (or of a deliberately broken one, with `defect`). */
export function makeGguf(options: GgufOptions = {}): Uint8Array {
  if (options.defect === 'not-gguf') return new TextEncoder().encode('this is not a GGUF model file\n'.repeat(8));
  const list = tensors(options);
  const kv = metadata(options);
  const w = new Writer();
  w.u32(0x46554747); // "GGUF"
  w.u32(3);
  w.u64(list.length);
  w.u64(kv.length);
  for (const [key, value] of kv) {
    w.string(key);
    writeValue(w, value);
  }
  let offset = 0;
  for (const t of list) {
    w.string(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(t.f16 ? 1 : 0);
    w.u64(offset);
    const size = t.data.length * (t.f16 ? 2 : 4);
    offset += size + ((ALIGNMENT - (size % ALIGNMENT)) % ALIGNMENT);
  }
  w.align();
  for (const t of list) {
    for (const v of t.data) t.f16 ? w.f16(v) : w.f32(v);
    w.align();
  }
  return w.bytes();
}

/** Writes `makeGguf(options)` to `path` and returns the path. */
export function writeGguf(path: string, options: GgufOptions = {}): string {
  writeFileSync(path, makeGguf(options));
  return path;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i === -1 ? undefined : args.splice(i, 2)[1];
  };
  const f16 = args.includes('--f16');
  const printable = args.includes('--printable');
  const seed = flag('--seed');
  const defect = flag('--defect') as GgufDefect | undefined;
  const out = args.find((a) => !a.startsWith('--'));
  if (!out) {
    console.error(
      'usage: tsx scripts/make-gguf.ts OUT.gguf [--f16] [--printable] [--seed N] [--defect missing-tensor|bad-key|bad-shape|not-gguf]',
    );
    process.exit(2);
  }
  writeGguf(out, { type: f16 ? 'f16' : 'f32', seed: seed === undefined ? 1 : Number(seed), printable, defect });
  console.log(out);
}
