import type { SeriesSlab } from './series-slab';

const COUNT = 0;
const SUM = 1;
const MIN = 2;
const MAX = 3;
/** Numbers kept before the bucket counts: count, sum, min, max. */
export const HISTOGRAM_HEAD = 4;

/**
 * Records `value` into the histogram numbers at `values[at …]` (count, sum,
 * min, max, then one count per bucket of `boundaries`). The caller has
 * checked the value is finite and not negative.
 */
export function recordInto(values: Float64Array, at: number, boundaries: readonly number[], value: number): void {
  let i = 0;
  while (i < boundaries.length && value > boundaries[i]) i++;
  values[at + HISTOGRAM_HEAD + i]++;
  values[at + COUNT]++;
  values[at + SUM] += value;
  if (value < values[at + MIN]) values[at + MIN] = value;
  if (value > values[at + MAX]) values[at + MAX] = value;
}

/**
 * Fixed-bucket cumulative histogram in typed arrays: one record is a
 * short linear scan and a few increments (~40 ns), no allocation. Bucket
 * boundaries match the OTel Views, so an export path can read these
 * counts directly (a MetricProducer) instead of going through the API.
 *
 * Its numbers (count, sum, min, max, then the bucket counts) live in a
 * Float64Array of its own, or at an offset in a `SeriesSlab` shared with
 * the other series of an aggregate, which copies them all at once.
 */
export class FixedHistogram {
  /** The bucket counts, one more than the boundaries (a view of the numbers). */
  readonly counts: Float64Array;
  /** Negative or non-finite values refused (a clock that went backwards). */
  rejected = 0;
  /** Where its numbers are: `values[offset …]` (its own array, or a slab block shared with other series). */
  readonly values: Float64Array;
  readonly offset: number;

  constructor(
    readonly boundaries: readonly number[],
    slab?: SeriesSlab,
  ) {
    const stride = boundaries.length + 1 + HISTOGRAM_HEAD;
    const place = slab?.allocate() ?? { values: new Float64Array(stride), offset: 0 };
    this.values = place.values;
    this.offset = place.offset;
    this.values[this.offset + MIN] = Number.POSITIVE_INFINITY;
    this.values[this.offset + MAX] = Number.NEGATIVE_INFINITY;
    this.counts = this.values.subarray(this.offset + HISTOGRAM_HEAD, this.offset + stride);
  }

  get count(): number {
    return this.values[this.offset + COUNT];
  }

  get sum(): number {
    return this.values[this.offset + SUM];
  }

  get min(): number {
    return this.values[this.offset + MIN];
  }

  get max(): number {
    return this.values[this.offset + MAX];
  }

  record(value: number): boolean {
    if (!(value >= 0) || value === Number.POSITIVE_INFINITY) {
      this.rejected++;
      return false;
    }
    recordInto(this.values, this.offset, this.boundaries, value);
    return true;
  }
}
