/**
 * Longest single event-loop block per period, from the lateness of a timer
 * due every `intervalMs`. A timer fires late by as long as the loop was
 * held when it fell due, so its lateness is what a request arriving then
 * waited for the loop. Many short runs each delay it by one run, never by
 * their sum: a loop 25 % busy in 6 ms slices reads as ≈ 6 ms, one 300 ms
 * block as ≈ 300 ms.
 *
 * With the process's CPU time at each firing, it also tells what held the
 * loop: a block of the process's own work spends about its length on CPU;
 * a process that waited for a CPU (a loaded machine, a CPU quota) spends
 * little. Where the time the loop's thread waited in the run queue is
 * known (Linux), it also says how much of the block was a wait for a CPU.
 * That figure may be left out of a firing (NaN): the next one is then
 * measured from the last one given.
 *
 * A probe due rarely (a loop at rest) misses the part of a block that ran
 * before it fell due. Given the time the loop was busy since the last
 * firing, it reads a block as the longer of that and its lateness: a bound
 * from above that, on a loop otherwise at rest, is the block itself.
 */
export class LoopBlockProbe {
  /** When the probe is next due (ms). */
  dueAt: number;
  private lastCpu: number;
  /** The process's CPU time (ms) at the last firing. */
  get lastCpuMs(): number {
    return this.lastCpu;
  }
  private longest = 0;
  private longestCpu = 0;
  private lastQueued: number;
  private longestQueued = Number.NaN;
  /** CPU time (ms) the process spent during the longest block of the last period taken. */
  cpuOfLongest = 0;
  /** Time (ms) the loop's thread waited for a CPU during that block; NaN where unknown. */
  queuedOfLongest = Number.NaN;

  constructor(
    public intervalMs: number,
    now: number,
    cpuMs = 0,
    queuedMs = Number.NaN,
  ) {
    this.dueAt = now + intervalMs;
    this.lastCpu = cpuMs;
    this.lastQueued = queuedMs;
  }

  /**
   * The probe timer fired at `now` (ms) and is re-armed for `intervalMs`
   * later; returns its lateness (ms). `busyMs`: the time the loop was busy
   * since the last firing, where the block is to be read from it too.
   */
  fired(now: number, cpuMs = 0, queuedMs = Number.NaN, busyMs = Number.NaN): number {
    const late = now - this.dueAt;
    const block = Number.isNaN(busyMs) ? late : Math.max(busyMs, late);
    if (block > this.longest) {
      this.longest = block;
      this.longestCpu = cpuMs - this.lastCpu;
      this.longestQueued = queuedMs - this.lastQueued;
    }
    this.dueAt = now + this.intervalMs;
    this.lastCpu = cpuMs;
    if (!Number.isNaN(queuedMs)) this.lastQueued = queuedMs;
    return late;
  }

  /** From `now` (ms) on, due every `intervalMs`. */
  rearm(now: number, intervalMs: number): void {
    this.intervalMs = intervalMs;
    this.dueAt = now + intervalMs;
  }

  /** Longest block (ms) of the period so far, including a probe overdue at `now`; changes nothing. */
  peek(now: number): number {
    return Math.max(0, this.longest, now - this.dueAt);
  }

  /**
   * Longest block (ms) since the last call, including a probe overdue at
   * `now` (its timer has not run yet); starts the next period. The overdue
   * part is counted here once: the probe's lateness is then measured from `now`.
   */
  take(now: number, cpuMs = 0, queuedMs = Number.NaN): number {
    const overdue = now - this.dueAt;
    let longest = Math.max(0, this.longest);
    let cpu = this.longestCpu;
    let queued = this.longestQueued;
    if (overdue > longest) {
      longest = overdue;
      cpu = cpuMs - this.lastCpu;
      queued = queuedMs - this.lastQueued;
    }
    if (overdue > 0) {
      this.dueAt = now;
      this.lastCpu = cpuMs;
      if (!Number.isNaN(queuedMs)) this.lastQueued = queuedMs;
    }
    this.longest = 0;
    this.longestCpu = 0;
    this.longestQueued = Number.NaN;
    this.cpuOfLongest = Math.max(0, cpu);
    this.queuedOfLongest = Math.max(0, queued);
    return longest;
  }
}
