/**
 * The values a scrape or a readiness probe must read as they are now, kept
 * in shared memory so that another thread can read them while the main
 * thread is busy or blocked: per queue its depth, in-flight count, level
 * and the arrival stamps behind the oldest wait and the pending waits; for
 * the monitor its overall level as of the last tick, a heartbeat, and a
 * count of changes: every record into core's aggregates and every queue
 * update adds 1, so a reader that kept an exposition knows whether its
 * counters, histograms and queue gauges may have moved since. The other
 * gauges are samples, refreshed on timers (the tick, the event loop's
 * period, a device-memory source): a reader bounds their age itself. A
 * level that changes is counted all the same, as the alert it raises. The
 * request path writes with plain stores (a reader may see one request's
 * update half done, never a torn number), the tick and the event-loop probe
 * write the rest. `@infersignal/node` serves its
 * Prometheus endpoint and readiness from a worker thread over this board.
 */
import { performance } from 'node:perf_hooks';
import { SCOPE } from './version';

/** Cells of the board's header. */
const BOARD = {
  /** Epoch ms (timeOrigin + performance.now()) of the last heartbeat. */
  beatEpoch: 0,
  /** The monitor's clock (ms) at that heartbeat: a reader maps its own epoch time onto that clock. */
  beatClock: 1,
  /** The monitor's overall level (0 ok, 1 warn, 2 critical) as of the last tick. */
  level: 2,
  /** Queues with a slot. */
  queues: 3,
  /**
   * A heartbeat older than this (ms) means the main thread is stuck: the
   * event loop's CRITICAL delay, or twice the longest healthy gap between
   * heartbeats if that is longer. NaN: no heartbeat is kept.
   */
  stuckAfterMs: 4,
  /** Records and queue updates so far (see the module's comment). */
  changes: 5,
  headerCells: 8,
} as const;

/** Cells of one queue's slot, `QUEUE.cells` apart after the header. */
export const QUEUE = {
  waiting: 0,
  inFlight: 1,
  capacity: 2,
  /** Backpressure level: 0 ok, 1 warn, 2 critical. */
  level: 3,
  /** Waiting requests counted by the arrival stamps (QueueAge). */
  stamped: 4,
  /** Σ (arrival − origin) over the waiting requests. */
  arrivals: 5,
  /** Arrival − origin of the oldest waiting request (NaN when none waits). */
  oldest: 6,
  /** The clock (ms) the arrival cells are relative to. */
  origin: 7,
  cells: 8,
} as const;

/** A level as a number, as the backpressure gauge and the board carry it. */
export const LEVEL_VALUE = { ok: 0, warn: 1, critical: 2 } as const;

const origin = performance.timeOrigin;

export class LiveBoard {
  readonly buffer: SharedArrayBuffer;
  /** Where each value sits in `buffer`, for a reader in another thread. */
  readonly layout = { header: BOARD, queue: QUEUE } as const;
  private readonly cells: Float64Array;
  /** Queue names by slot. */
  readonly queueNames: string[] = [];
  /** Called when a queue takes a slot (the exposition host tells its reader the names). */
  onQueue: ((name: string, slot: number) => void) | undefined;
  /** The change count's cell, which recorders add 1 to (`changes[0]++`). */
  readonly changes: Float64Array;
  /** The instrumentation scope whose series the change count covers (the producer export's). */
  readonly changesCover = SCOPE.name;

  constructor(readonly maxQueues: number) {
    this.buffer = new SharedArrayBuffer((BOARD.headerCells + maxQueues * QUEUE.cells) * 8);
    this.cells = new Float64Array(this.buffer);
    this.changes = this.cells.subarray(BOARD.changes, BOARD.changes + 1);
    this.cells[BOARD.beatEpoch] = Number.NaN;
    this.cells[BOARD.stuckAfterMs] = Number.NaN;
  }

  /** Heartbeats come at least every `gapMs` while the main thread turns; it is stuck past `criticalMs` (or 2 gaps). */
  keepHeartbeat(gapMs: number, criticalMs: number): void {
    this.cells[BOARD.stuckAfterMs] = Math.max(criticalMs, 2 * gapMs);
  }

  /** The main thread is turning: stamps the heartbeat with the monitor's clock `now`. */
  beat(now: number): void {
    this.cells[BOARD.beatEpoch] = origin + performance.now();
    this.cells[BOARD.beatClock] = now;
  }

  /** The monitor's overall level at a tick. */
  setLevel(level: keyof typeof LEVEL_VALUE, now: number): void {
    this.cells[BOARD.level] = LEVEL_VALUE[level];
    this.beat(now);
  }

  /** The cells of a new queue's slot, undefined once every slot is taken. */
  queueSlot(name: string, capacity: number, arrivalOrigin: number): Float64Array | undefined {
    const slot = this.queueNames.length;
    if (slot >= this.maxQueues) return undefined;
    this.queueNames.push(name);
    const at = BOARD.headerCells + slot * QUEUE.cells;
    const cells = this.cells.subarray(at, at + QUEUE.cells);
    cells[QUEUE.capacity] = capacity;
    cells[QUEUE.origin] = arrivalOrigin;
    cells[QUEUE.oldest] = Number.NaN;
    this.cells[BOARD.queues] = slot + 1;
    this.onQueue?.(name, slot);
    return cells;
  }
}
