import type { LoopSource, LoopTimer } from '../src/signals/event-loop';

interface Timer {
  due: number;
  ms: number;
  fn: () => void;
  stopped: boolean;
}

/**
 * A single-threaded loop in simulated time: synchronous runs (`busy`) hold
 * it, and a timer fires at its due time or when the run holding the loop
 * ends, whichever is later — as libuv's timers do. A timer that is due
 * runs before a run that becomes ready at the same instant.
 */
export class SimLoop implements LoopSource {
  t = 0;
  private readonly timers: Timer[] = [];
  private readonly runs: { at: number; ms: number; cpu: number; queued: number }[] = [];
  private cpu = 0;
  private queued = 0;
  private busyMs = 0;
  private turns = 0;
  private busyAtLastRead = 0;
  private readAt = 0;

  now(): number {
    return this.t;
  }

  every(ms: number, fn: () => void): LoopTimer {
    const timer: Timer = { due: this.t + ms, ms, fn, stopped: false };
    this.timers.push(timer);
    return {
      every: (next) => {
        timer.ms = next;
        timer.due = this.t + next;
      },
      stop: () => {
        timer.stopped = true;
      },
    };
  }

  /** A synchronous run of `ms` that becomes ready at `at`. */
  busy(at: number, ms: number): void {
    this.runs.push({ at, ms, cpu: ms, queued: 0 });
    this.runs.sort((a, b) => a.at - b.at);
  }

  /** The process kept off the CPUs for `ms` from `at` (in the run queue): the loop stands still without running anything. */
  stall(at: number, ms: number): void {
    this.runs.push({ at, ms, cpu: 0, queued: ms });
    this.runs.sort((a, b) => a.at - b.at);
  }

  /** A synchronous wait of `ms` from `at` (file or child-process I/O): the loop stands still, off CPU, not queued for one. */
  wait(at: number, ms: number): void {
    this.runs.push({ at, ms, cpu: 0, queued: 0 });
    this.runs.sort((a, b) => a.at - b.at);
  }

  /** A synchronous run of `cpuMs` of work on a loaded machine: it holds the loop `ms`, the rest waiting for a CPU. */
  slowed(at: number, ms: number, cpuMs: number): void {
    this.runs.push({ at, ms, cpu: cpuMs, queued: ms - cpuMs });
    this.runs.sort((a, b) => a.at - b.at);
  }

  /** Runs everything ready up to `until`. */
  advance(until: number): void {
    for (;;) {
      let timer: Timer | undefined;
      for (const candidate of this.timers)
        if (!candidate.stopped && (!timer || candidate.due < timer.due)) timer = candidate;
      const run = this.runs[0];
      const timerReady = timer ? Math.max(this.t, timer.due) : Number.POSITIVE_INFINITY;
      const runReady = run ? Math.max(this.t, run.at) : Number.POSITIVE_INFINITY;
      const next = Math.min(timerReady, runReady);
      if (next > until) break;
      this.t = next;
      this.turns++;
      if (timer && timerReady <= runReady) {
        timer.fn();
        timer.due = this.t + timer.ms;
      } else {
        this.runs.shift();
        this.t += run!.ms;
        this.busyMs += run!.ms;
        this.cpu += run!.cpu;
        this.queued += run!.queued;
      }
    }
    this.t = Math.max(this.t, until);
  }

  utilization(): number {
    const elapsed = this.t - this.readAt;
    const share = elapsed > 0 ? (this.busyMs - this.busyAtLastRead) / elapsed : 0;
    this.readAt = this.t;
    this.busyAtLastRead = this.busyMs;
    return share;
  }

  /** Busy time so far; a run counts once it has run (the loop's timers see it then). */
  activeMs(): number {
    return this.busyMs;
  }

  /** Each timer firing and each run is a turn of the loop. */
  iterations(): number {
    return this.turns;
  }

  cpuMs(): number {
    return this.cpu;
  }

  queuedMs(): number {
    return this.queued;
  }

  close(): void {
    for (const timer of this.timers) timer.stopped = true;
  }
}
