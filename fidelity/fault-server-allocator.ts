/**
 * A small model of a framework's caching device allocator, as onnxruntime's
 * BFC arena works without arena shrinkage (PyTorch's caching allocator is
 * the same apart from releasing cached segments on an out-of-memory retry):
 *
 * - memory is reserved from the device in segments (a request under 20 MiB
 *   reserves a 20 MiB segment, a larger one its size rounded up to 2 MiB);
 * - a block is carved best-fit from the free blocks of the segments (split
 *   when larger), and a freed block stays in its segment, merged with free
 *   neighbours, for the next request that fits it;
 * - no segment is ever returned to the device;
 * - when no free block fits and a new segment would pass the device's total,
 *   the allocation fails (`DeviceOutOfMemoryError`).
 *
 * `allocated` (bytes in live blocks) is what a framework reports as
 * allocated; `reserved` (bytes in segments) is what the driver lists for
 * the process. No real device memory is involved: the figures are the model's.
 */

export const MiB = 2 ** 20;
const SMALL_SEGMENT = 20 * MiB;
const ROUND = 2 * MiB;

export class DeviceOutOfMemoryError extends Error {
  override readonly name = 'DeviceOutOfMemoryError';
}

interface Segment {
  size: number;
  /** Blocks in address order, covering the segment. */
  blocks: Block[];
}

export interface Block {
  readonly segment: Segment;
  offset: number;
  size: number;
  free: boolean;
}

export class CachingAllocator {
  allocated = 0;
  reserved = 0;
  /** Allocations that failed for lack of device memory. */
  failures = 0;
  private readonly segments: Segment[] = [];

  /** `onReserve` is called after each new segment (the driver's view changed). */
  constructor(
    readonly total: number,
    private readonly onReserve: (reserved: number) => void = () => {},
  ) {}

  alloc(bytes: number): Block {
    const size = Math.ceil(bytes / ROUND) * ROUND;
    let best: Block | undefined;
    for (const segment of this.segments)
      for (const block of segment.blocks)
        if (block.free && block.size >= size && (!best || block.size < best.size)) best = block;
    if (!best) best = this.reserve(size);
    if (best.size > size) {
      const rest: Block = { segment: best.segment, offset: best.offset + size, size: best.size - size, free: true };
      const blocks = best.segment.blocks;
      blocks.splice(blocks.indexOf(best) + 1, 0, rest);
      best.size = size;
    }
    best.free = false;
    this.allocated += size;
    return best;
  }

  free(block: Block): void {
    if (block.free) return;
    block.free = true;
    this.allocated -= block.size;
    const blocks = block.segment.blocks;
    let i = blocks.indexOf(block);
    const next = blocks[i + 1];
    if (next?.free) {
      block.size += next.size;
      blocks.splice(i + 1, 1);
    }
    const previous = blocks[i - 1];
    if (previous?.free) {
      previous.size += block.size;
      blocks.splice(i, 1);
      i--;
    }
  }

  /** The largest free block (bytes): what the biggest allocation without a new segment can be. */
  largestFree(): number {
    let largest = 0;
    for (const segment of this.segments)
      for (const block of segment.blocks) if (block.free) largest = Math.max(largest, block.size);
    return largest;
  }

  private reserve(size: number): Block {
    const segmentSize = Math.max(size, SMALL_SEGMENT);
    if (this.reserved + segmentSize > this.total) {
      this.failures++;
      throw new DeviceOutOfMemoryError(
        `out of device memory: ${(size / MiB).toFixed(0)} MiB requested, largest free block ${(this.largestFree() / MiB).toFixed(0)} MiB, ` +
          `${(this.reserved / MiB).toFixed(0)} of ${(this.total / MiB).toFixed(0)} MiB reserved, ${(this.allocated / MiB).toFixed(0)} MiB allocated`,
      );
    }
    const segment: Segment = { size: segmentSize, blocks: [] };
    const block: Block = { segment, offset: 0, size: segmentSize, free: true };
    segment.blocks.push(block);
    this.segments.push(segment);
    this.reserved += segmentSize;
    this.onReserve(this.reserved);
    return block;
  }
}
