import type { StreamHandle, Ticket } from '@infersignal/core';
import type { Deadline } from '@grpc/grpc-js';
import type { CallContext, ShedStatus } from './call-signal';
import { attributesOf, oldAttributesOf } from './methods';
import type { MethodEntry } from './methods';
import { GRPC_STATUS, outcomeOf, streamOutcomeOf } from './status';

/**
 * A cancel this close to the deadline is the deadline. Two cases land here:
 * grpc-js's own deadline timer (it runs on a monotonic millisecond clock that
 * can round differently from `Date.now()`), and the client's deadline timer,
 * whose RST_STREAM can reach the server a few ms before the server's timer
 * fires when the request headers were slower than the reset on loopback.
 */
const DEADLINE_SLACK_MS = 20;

/**
 * One call's lifecycle: arrival → (shed | enqueue) → start → messages →
 * exactly one final status. Every method is safe to call more than once and
 * never throws into grpc-js or the handler.
 */
export class CallRecorder {
  /** Set when the call was shed: the status to answer with. The handler is not called. */
  shed: ShedStatus | undefined;
  /** Status of an error the handler emitted on a stream, applied when the stream finishes. */
  errorCode: number | undefined;
  ticket: Ticket | undefined;
  private stream: StreamHandle | undefined;
  private done = false;

  constructor(
    private readonly instrumentation: CallContext,
    private readonly entry: MethodEntry,
    /** Undefined when nothing named it: core labels it `_unknown`. */
    readonly model: string | undefined,
    private readonly arrival: number,
  ) {}

  get ended(): boolean {
    return this.done;
  }

  enqueue(): void {
    this.ticket = this.instrumentation.options.gate.enqueue(this.model);
    // Only calls that stream responses feed the stream signal (time to
    // first message, interrupted share); a unary answer is not a stream.
    if (this.entry.responseStream) this.stream = this.ticket.stream();
  }

  /** The handler begins: ends the queue wait (unless the app starts the ticket itself). */
  start(): void {
    if (this.ticket === undefined || !this.instrumentation.options.autoStart) return;
    try {
      this.ticket.start();
    } catch (error) {
      this.instrumentation.monitor.internalError('grpc', error);
    }
  }

  /** A response message is sent: the first one is the first token. */
  message(): void {
    if (this.stream === undefined || this.done) return;
    try {
      this.stream.token(1);
    } catch (error) {
      this.instrumentation.monitor.internalError('grpc', error);
    }
  }

  /**
   * grpc-js reported the call cancelled. It does so for every call once the
   * stream closes, also after a normal status, so this only counts when no
   * status was recorded yet: the client went away (CANCELLED) or the
   * deadline passed (grpc-js answered DEADLINE_EXCEEDED from its own timer,
   * which no handler or interceptor sees).
   */
  cancelled(deadline: Deadline): void {
    if (this.done) return;
    const at = typeof deadline === 'number' ? deadline : deadline.getTime();
    this.finish(Date.now() >= at - DEADLINE_SLACK_MS ? GRPC_STATUS.DEADLINE_EXCEEDED : GRPC_STATUS.CANCELLED);
  }

  /** The final status (and why the server ended the stream itself, if it did). The first call wins. */
  finish(code: number, reason?: Parameters<StreamHandle['end']>[1]): void {
    if (this.done) return;
    this.done = true;
    const { instrumentation } = this;
    try {
      const { ctx, duration } = instrumentation.calls;
      // A negative duration (a clock that went backwards) is counted by the monitor, not recorded.
      const ms = ctx.clock() - this.arrival;
      ctx.recordSeconds(duration, ms / 1000, attributesOf(this.entry, code));
      // recordSeconds' range check holds for milliseconds too.
      if (instrumentation.options.oldConventions)
        ctx.recordSeconds(instrumentation.calls.durationOld, ms, oldAttributesOf(this.entry, code));
      this.stream?.end(streamOutcomeOf(code), reason);
      this.ticket?.end(outcomeOf(code));
    } catch (error) {
      instrumentation.monitor.internalError('grpc', error);
    }
  }
}
