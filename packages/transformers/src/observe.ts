import type { StreamHandle } from '@infersignal/core';

/** What one call's tokenizer output held: rows and tokens (padding excluded). */
export interface Tally {
  batch: number;
  inputTokens: number;
  /** Tokens generated, summed over rows. */
  outputTokens: number;
}

/** The call whose synchronous part is running now, or null: the tokenizer hook writes into it. */
export interface Tap {
  current: Tally | null;
}

/**
 * Observes what the pipeline's tokenizer returns. transformers.js tokenizers
 * are callable objects that call their own `_call`; an own `_call` on the
 * instance reads `input_ids` and `attention_mask` after the tokenizer built
 * them, so nothing is tokenized twice. Every text pipeline tokenizes before
 * its first `await`, in the synchronous part of the call, which is when
 * `tap.current` is set: a call gets its own tokenizer output even with
 * several calls in flight, and a tokenizer call the app makes itself is
 * not counted.
 */
export function tapTokenizer(tokenizer: unknown, tap: Tap, onError: (error: unknown) => void): boolean {
  const tok = tokenizer as { _call?: (...args: unknown[]) => unknown } | null | undefined;
  if (!tok || typeof tok._call !== 'function') return false;
  const original = tok._call;
  tok._call = function (this: unknown, ...args: unknown[]) {
    const out = original.apply(this, args);
    const tally = tap.current;
    if (tally !== null) {
      try {
        count(out as Encoded, tally);
      } catch (error) {
        onError(error);
      }
    }
    return out;
  };
  return true;
}

type MaskData = ArrayLike<number | bigint>;

interface Encoded {
  input_ids?: { dims?: readonly number[] };
  attention_mask?: { data?: MaskData };
}

function count(out: Encoded, tally: Tally): void {
  const dims = out?.input_ids?.dims;
  if (!dims || dims.length === 0) return;
  const rows = dims.length > 1 ? dims[0] : 1;
  const columns = dims[dims.length - 1];
  tally.batch += rows;
  // One row has no padding; several are padded to the longest, which the attention mask tells apart.
  tally.inputTokens += rows === 1 ? columns : unpadded(out.attention_mask?.data, rows * columns);
}

/** Ones in an attention mask: int64 0/1 values read through their low 32-bit words, with no BigInt per element. */
function unpadded(data: MaskData | undefined, cells: number): number {
  if (!data) return cells;
  let sum = 0;
  if (data instanceof BigInt64Array) {
    const words = new Int32Array(data.buffer, data.byteOffset, data.length * 2);
    for (let i = 0; i < words.length; i += 2) sum += words[i];
    return sum;
  }
  for (let i = 0; i < data.length; i++) sum += Number(data[i]);
  return sum;
}

/** A transformers.js streamer: `generate()` calls `put` with the prompt, then once per step, then `end`. */
export interface Streamer {
  put(value: bigint[][]): void;
  end(): void;
}

/**
 * Generated tokens go to the stream at the first step (time to first
 * token), then in batches of this many steps and at the end: one counter
 * update per batch, not per token. Time per output token stays exact:
 * `generate()` calls `end()` right after its last step.
 */
const STEP_BATCH = 16;

/**
 * The streamer handed to `generate()`: counts steps on the call's stream
 * (one token per step, the time a row's client waits between tokens) and
 * tokens over all rows, then passes every call on to the app's streamer.
 */
export function observingStreamer(stream: StreamHandle, tally: Tally, user: Streamer | undefined): Streamer {
  let prompt = true;
  let steps = 0;
  let unrecorded = 0;
  return {
    put(value) {
      if (prompt) prompt = false;
      else {
        steps++;
        unrecorded++;
        tally.outputTokens += value.length;
        if (unrecorded >= STEP_BATCH || steps === 1) {
          stream.token(unrecorded);
          unrecorded = 0;
        }
      }
      user?.put(value);
    },
    end() {
      if (unrecorded > 0) stream.token(unrecorded);
      unrecorded = 0;
      user?.end();
    },
  };
}

const NOT_DONE: boolean[] = [];

/**
 * A stopping criterion that ends the generation at the step after `signal`
 * aborts. transformers.js calls each criterion with the rows' token ids and
 * ORs what it returns per row; an empty answer stops none.
 */
export function abortCriterion(signal: AbortSignal): (rows: unknown[]) => boolean[] {
  return (rows) => (signal.aborted ? rows.map(() => true) : NOT_DONE);
}

/** The app's `stopping_criteria` (one, a list, or an array) with `extra` appended, as an array. */
export function withCriterion(user: unknown, extra: unknown): unknown[] {
  if (user === undefined || user === null) return [extra];
  if (Array.isArray(user)) return [...user, extra];
  const list = (user as { criteria?: unknown }).criteria;
  if (Array.isArray(list)) return [...list, extra];
  return [user, extra];
}
