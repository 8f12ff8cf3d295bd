/**
 * The arrival stamps of a queue's waiting requests, so the age of the
 * oldest one and the time the waiting ones have already spent are known at
 * any moment. A wait histogram reports a request only when it leaves the
 * queue: a stuck queue looks quiet until it drains; these do not.
 *
 * Bounded: a ring of `size` stamps in arrival order. A request leaves by
 * clearing its slot (it may start out of order), and the head skips the
 * cleared slots, so reading the oldest is amortized O(1). The sum of waits
 * is exact whatever the ring holds: n·now − Σ arrival, over every waiting
 * request. Requests that arrive while the ring is full of older ones are
 * not stamped there: they are newer than every stamped one, so the oldest
 * stamped is still the oldest; once only unstamped ones wait, the age
 * reads their mean (sum / n), a lower bound.
 */
export class QueueAge {
  private readonly stamps: Float64Array;
  private readonly mask: number;
  /** Sequence number of the oldest slot not yet skipped, and of the next arrival. */
  private head = 0;
  private tail = 0;
  /** Requests waiting, stamped or not. */
  private count = 0;
  /** Σ (arrival − origin) over the waiting requests; relative, so the sum keeps sub-ms precision. */
  private arrivals = 0;

  constructor(
    /** Slots in the ring: rounded up to a power of two. */
    size: number,
    /** Time (ms) the stamps are taken relative to. */
    private readonly origin: number,
  ) {
    let n = 1;
    while (n < size) n *= 2;
    this.stamps = new Float64Array(n);
    this.mask = n - 1;
  }

  /** A request arrived at `now` (ms): its sequence number, or -1 when the ring is full. */
  arrive(now: number): number {
    const at = now - this.origin;
    this.count++;
    this.arrivals += at;
    if (this.tail - this.head > this.mask) return -1;
    const seq = this.tail++;
    this.stamps[seq & this.mask] = at;
    return seq;
  }

  /** The request of `seq` (from arrive()), which arrived at `arrival` (ms), no longer waits. */
  leave(seq: number, arrival: number): void {
    if (this.count <= 0) return;
    if (--this.count === 0) {
      // Empty: start the sum from exact zero, so rounding never accumulates across busy periods.
      this.arrivals = 0;
      this.head = this.tail;
    } else {
      this.arrivals -= arrival - this.origin;
    }
    if (seq >= this.head && seq < this.tail) this.stamps[seq & this.mask] = Number.NaN;
  }

  get waiting(): number {
    return this.count;
  }

  /** Age (ms) at `now` of the oldest request still waiting; 0 when none waits. */
  oldest(now: number): number {
    if (this.count === 0) return 0;
    return Math.max(now - this.origin - this.oldestArrival(), 0);
  }

  /** Arrival − origin (ms) of the oldest request still waiting (see the class); NaN when none waits. */
  oldestArrival(): number {
    if (this.count === 0) return Number.NaN;
    while (this.head < this.tail && Number.isNaN(this.stamps[this.head & this.mask]!)) this.head++;
    return this.head < this.tail ? this.stamps[this.head & this.mask]! : this.arrivals / this.count;
  }

  /** Σ (arrival − origin) (ms) over the waiting requests. */
  get arrivalSum(): number {
    return this.arrivals;
  }

  /** Sum (ms) at `now` of the time every waiting request has waited so far. */
  total(now: number): number {
    if (this.count === 0) return 0;
    return Math.max(0, this.count * (now - this.origin) - this.arrivals);
  }
}
