import { performance } from 'node:perf_hooks';

/**
 * A client can keep a response stream open and stop reading: HTTP/2 flow
 * control then holds every message, and a handler that waits for room waits
 * forever with the call in flight. This watches what both wirings can see
 * alike: a response message handed on (`sent`) and HTTP/2 taking it (its
 * write callback, `taken`). While at least one message waits, the time since
 * the last one was taken (or since the first waiting one was sent) is the
 * stall; at `timeoutMs` `onStall` runs, once. A client that reads slowly
 * keeps resetting that time, so it is never cut off; a handler that sends
 * nothing has nothing waiting, so its pauses are not stalls.
 *
 * One timer per call, armed when a message starts to wait and re-armed (or
 * refreshed) at most once per `timeoutMs`, never per message; a message
 * costs a counter and one clock read.
 */
export class WriteStallWatch {
  private pending = 0;
  /** performance.now() from which the waiting message(s) made no progress. */
  private since = 0;
  private timer: NodeJS.Timeout | undefined;
  private armed = false;
  private stopped = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly onStall: () => void,
  ) {}

  /** A response message was handed on toward HTTP/2. */
  sent(): void {
    if (this.pending++ !== 0 || this.stopped) return;
    this.since = performance.now();
    if (this.armed) return;
    this.armed = true;
    if (this.timer === undefined) this.timer = setTimeout(this.check, this.timeoutMs).unref();
    else this.timer.refresh();
  }

  /** HTTP/2 took a message: progress, whether more wait or not. A bound function, usable as a write callback. */
  readonly taken = (): void => {
    if (this.pending > 0) this.pending--;
    if (this.pending > 0) this.since = performance.now();
  };

  /** The call ended: nothing more to watch. */
  stop(): void {
    this.stopped = true;
    this.armed = false;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private readonly check = (): void => {
    this.armed = false;
    if (this.stopped || this.pending === 0) return;
    const idle = performance.now() - this.since;
    if (idle < this.timeoutMs) {
      // A message was taken since this timer was armed: wait out the rest from then.
      this.armed = true;
      this.timer = setTimeout(this.check, Math.max(1, Math.ceil(this.timeoutMs - idle))).unref();
      return;
    }
    this.stop();
    this.onStall();
  };
}
