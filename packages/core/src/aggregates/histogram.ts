/**
 * Fixed-bucket cumulative histogram in typed arrays: one record is a
 * short linear scan and two increments (~40 ns), no allocation. Bucket
 * boundaries match the OTel Views, so an export path can read these
 * counts directly (a MetricProducer) instead of going through the API.
 */
export class FixedHistogram {
  readonly counts: Float64Array;
  count = 0;
  sum = 0;
  min = Number.POSITIVE_INFINITY;
  max = Number.NEGATIVE_INFINITY;
  /** Negative or non-finite values refused (a clock that went backwards). */
  rejected = 0;

  constructor(readonly boundaries: readonly number[]) {
    this.counts = new Float64Array(boundaries.length + 1);
  }

  record(value: number): boolean {
    if (!(value >= 0) || value === Number.POSITIVE_INFINITY) {
      this.rejected++;
      return false;
    }
    const b = this.boundaries;
    let i = 0;
    while (i < b.length && value > b[i]) i++;
    this.counts[i]++;
    this.count++;
    this.sum += value;
    if (value < this.min) this.min = value;
    if (value > this.max) this.max = value;
    return true;
  }

  /** Quantile estimated by linear interpolation inside the bucket (like histogram_quantile). */
  quantile(q: number): number {
    if (this.count === 0) return Number.NaN;
    const rank = q * this.count;
    let cumulative = 0;
    for (let i = 0; i < this.counts.length; i++) {
      const next = cumulative + this.counts[i];
      if (next >= rank && this.counts[i] > 0) {
        const lower = i === 0 ? 0 : this.boundaries[i - 1];
        const upper = i < this.boundaries.length ? this.boundaries[i] : this.max;
        return lower + ((upper - lower) * (rank - cumulative)) / this.counts[i];
      }
      cumulative = next;
    }
    return this.max;
  }
}
