/**
 * Fixed-capacity ring of timestamped samples. Memory is allocated once;
 * pushing overwrites the oldest sample. Quantiles copy the live samples
 * into a scratch array (also preallocated) and sort it — done on the
 * detector timer, never on the request path.
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

  /** Copies samples at or after `since` into the scratch array, sorted; returns how many. */
  private sorted(since: number): number {
    let n = 0;
    this.forEach((value) => {
      this.scratch[n++] = value;
    }, since);
    this.scratch.subarray(0, n).sort();
    return n;
  }

  /** Nearest-rank quantile (q in [0, 1]) of samples at or after `since`; NaN when empty. */
  quantile(q: number, since = -Infinity): number {
    const n = this.sorted(since);
    if (n === 0) return Number.NaN;
    const rank = Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1));
    return this.scratch[rank];
  }

  /** Several quantiles and the max from one sort. */
  summary(quantiles: readonly number[], since = -Infinity): { count: number; max: number; values: number[] } {
    const n = this.sorted(since);
    if (n === 0) return { count: 0, max: Number.NaN, values: quantiles.map(() => Number.NaN) };
    return {
      count: n,
      max: this.scratch[n - 1],
      values: quantiles.map((q) => this.scratch[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]),
    };
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
