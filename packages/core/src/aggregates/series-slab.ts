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
    const out = new Float64Array(total);
    let at = 0;
    for (const block of this.blocks) {
      const take = Math.min(block.length, total - at);
      out.set(take === block.length ? block : block.subarray(0, take), at);
      at += take;
    }
    return out;
  }
}
