/**
 * Longest single event-loop block per period, from the lateness of a timer
 * due every `intervalMs`. A timer fires late by as long as the loop was
 * held when it fell due, so its lateness is what a request arriving then
 * waited for the loop. Many short runs each delay it by one run, never by
 * their sum: a loop 25 % busy in 6 ms slices reads as ≈ 6 ms, one 300 ms
 * block as ≈ 300 ms.
 */
export class LoopBlockProbe {
  private dueAt: number;
  private longest = 0;

  constructor(
    readonly intervalMs: number,
    now: number,
  ) {
    this.dueAt = now + intervalMs;
  }

  /** The probe timer fired at `now` (ms) and is re-armed for `intervalMs` later; returns its lateness (ms). */
  fired(now: number): number {
    const late = now - this.dueAt;
    if (late > this.longest) this.longest = late;
    this.dueAt = now + this.intervalMs;
    return late;
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
  take(now: number): number {
    const overdue = now - this.dueAt;
    const longest = Math.max(0, this.longest, overdue);
    if (overdue > 0) this.dueAt = now;
    this.longest = 0;
    return longest;
  }
}
