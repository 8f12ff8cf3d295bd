/** Series per block: small enough that a few series waste little, large enough that a copy is few `set` calls. */
export const SLAB_BLOCK_SERIES = 32;

/**
 * The numbers of many series of one aggregate instrument, `stride` per
 * series, side by side in a few Float64Array blocks. Whatever the number of
 * series, a copy of all of them is one `TypedArray.set` per block (a memory
 * copy), not a loop over series: at the cardinality caps that copy is what
 * holds the event loop while a collection takes its snapshot.
 */
export class SeriesSlab {
  private readonly blocks: Float64Array[] = [];
  /**
   * A copy its reader handed back (`release`), for the next copy: a fresh
   * array of megabytes costs its page faults (milliseconds, at times) in
   * the turn that makes it, which is the turn a collection holds the loop.
   */
  private spare: Float64Array | undefined = undefined;
  /** Series allocated so far. */
  length = 0;

  constructor(readonly stride: number) {}

  /** Room for one more series: its block and the offset of its first number there, all numbers zero. */
  allocate(): { values: Float64Array; offset: number } {
    const inBlock = this.length % SLAB_BLOCK_SERIES;
    if (inBlock === 0) this.blocks.push(new Float64Array(SLAB_BLOCK_SERIES * this.stride));
    this.length++;
    return { values: this.blocks[this.blocks.length - 1], offset: inBlock * this.stride };
  }

  /** Every series' numbers as they are now, series i at `[i * stride, (i + 1) * stride)`. */
  copy(): Float64Array {
    const total = this.length * this.stride;
    const spare = this.spare;
    let out: Float64Array;
    if (spare !== undefined && spare.length >= total) {
      // Taken, so two copies alive at once never share an array; every number up to `total` is written below.
      this.spare = undefined;
      out = spare.length === total ? spare : spare.subarray(0, total);
    } else out = new Float64Array(total);
    let at = 0;
    for (const block of this.blocks) {
      const take = Math.min(block.length, total - at);
      out.set(take === block.length ? block : block.subarray(0, take), at);
      at += take;
    }
    return out;
  }

  /** `copy` (from this slab's `copy()`, or a view of it) is no longer read: its array may take the next copy. */
  release(copy: Float64Array): void {
    if (this.spare === undefined || copy.buffer.byteLength > this.spare.buffer.byteLength)
      this.spare = new Float64Array(copy.buffer);
  }
}
