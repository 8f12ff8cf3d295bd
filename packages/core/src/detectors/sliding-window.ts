import { selectRank } from './select';

/**
 * Fixed-capacity ring of timestamped samples. Memory is allocated once;
 * pushing overwrites the oldest sample. Quantiles copy the live samples
 * into a scratch array (also preallocated) and select their ranks in it
 * (linear: a sort, n log n, held the event loop 0.4–0.6 ms a full
 * 4 096-sample window) — done on the detector timer, never on the request
 * path. NaN samples are left out of quantiles.
 */
export class SlidingWindow {
  private readonly values: Float64Array;
  private readonly times: Float64Array;
  private readonly scratch: Float64Array;
  private head = 0;
  private size = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`SlidingWindow capacity must be an integer >= 1, got ${capacity}`);
    this.values = new Float64Array(capacity);
    this.times = new Float64Array(capacity);
    this.scratch = new Float64Array(capacity);
  }

  get length(): number {
    return this.size;
  }

  push(value: number, at = 0): void {
    this.values[this.head] = value;
    this.times[this.head] = at;
    this.head = (this.head + 1) % this.capacity;
    if (this.size < this.capacity) this.size++;
  }

  clear(): void {
    this.head = 0;
    this.size = 0;
  }

  /** Oldest-first iteration over samples at or after `since`. */
  forEach(fn: (value: number, at: number) => void, since = -Infinity): void {
    const start = (this.head - this.size + this.capacity) % this.capacity;
    for (let i = 0; i < this.size; i++) {
      const index = (start + i) % this.capacity;
      if (this.times[index] >= since) fn(this.values[index], this.times[index]);
    }
  }

  /** Copies the samples at or after `since` into the scratch array, NaN left out; returns how many. */
  private gather(since: number): number {
    const { values, times, scratch, capacity } = this;
    let index = (this.head - this.size + capacity) % capacity;
    let n = 0;
    // A straight loop: a callback and a modulo per sample cost more than the selection itself.
    for (let i = 0; i < this.size; i++) {
      const value = values[index]!;
      if (times[index]! >= since && !Number.isNaN(value)) scratch[n++] = value;
      if (++index === capacity) index = 0;
    }
    return n;
  }

  /** Nearest-rank quantile (q in [0, 1]) of samples at or after `since`; NaN when empty. */
  quantile(q: number, since = -Infinity): number {
    const n = this.gather(since);
    return n === 0 ? Number.NaN : selectRank(this.scratch, 0, n, rankOf(q, n));
  }

  /** Several quantiles and the max, each rank selected above the one before. */
  summary(quantiles: readonly number[], since = -Infinity): { count: number; max: number; values: number[] } {
    const n = this.gather(since);
    if (n === 0) return { count: 0, max: Number.NaN, values: quantiles.map(() => Number.NaN) };
    const values = new Array<number>(quantiles.length);
    // Ascending ranks: selecting one leaves everything above it after it, where the next is looked for.
    const order = quantiles.map((_, index) => index).sort((a, b) => quantiles[a]! - quantiles[b]!);
    let from = 0;
    let last = Number.NaN;
    for (const index of order) {
      const rank = rankOf(quantiles[index]!, n);
      if (rank >= from) {
        last = selectRank(this.scratch, from, n, rank);
        from = rank + 1;
      }
      values[index] = last;
    }
    let max = from > 0 ? last : Number.NEGATIVE_INFINITY;
    for (let i = from; i < n; i++) if (this.scratch[i]! > max) max = this.scratch[i]!;
    return { count: n, max, values };
  }

  mean(since = -Infinity): number {
    let sum = 0;
    let n = 0;
    this.forEach((value) => {
      sum += value;
      n++;
    }, since);
    return n === 0 ? Number.NaN : sum / n;
  }
}

/** The nearest rank of quantile q among n samples (0-based). */
function rankOf(q: number, n: number): number {
  return Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1));
}
