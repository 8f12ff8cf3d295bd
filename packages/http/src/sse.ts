import type { ServerResponse } from 'node:http';
import { InferSignalConfigError, type StreamHandle } from '@infersignal/core';
import { describeValue } from '@infersignal/core/signals';

/** One server-sent event. */
export interface SseEvent {
  /** `event:` field (the event type the client listens for). */
  event?: string;
  /** `id:` field (the client sends it back as Last-Event-ID). */
  id?: string;
  /** Output tokens this event carries (default 1: one event = one token). 0 for a control event. */
  tokens?: number;
}

export interface SseOptions {
  /** Extra response headers written with the head (the SSE ones are set for you). */
  headers?: Record<string, string>;
  /**
   * A client that accepts nothing for this long is a stalled stream: once a
   * write found the socket buffer full (`send()` returned false) and
   * `drain` has not come within this many ms, the response is destroyed and
   * the stream counted `cancelled` (an interruption) with `error.type`
   * `write_stall`, and `endReason` is `write_stall`.
   * Default 30 000; 0 turns the check off.
   */
  stallTimeoutMs?: number;
  /**
   * Writes a comment line (`:`) after this many ms without a write, from the
   * first event on, so proxies keep an idle stream open and a peer that
   * vanished without closing is found by the failed write (the response
   * then closes, counted `cancelled`). Skipped while the buffer is full.
   * Default 0: off.
   */
  heartbeatMs?: number;
}

/** Why a stream was ended by the writer rather than by the handler or the client. */
type SseEndReason = 'write_stall';

/** Writer for a `text/event-stream` response that reports to the request's stream handle. */
export interface SseStream {
  /**
   * Writes one event. Strings are sent as they are (split on newlines into
   * `data:` lines), anything else as JSON. Each event counts `tokens`
   * (default 1) and the first such event marks the first token; an event
   * with `tokens: 0` is neither. Returns `false` when the client is gone
   * (nothing written) or the socket buffer is full (await `drained()`
   * before writing more).
   */
  send(data: unknown, event?: SseEvent): boolean;
  /** A comment line (`: text`), e.g. a keep-alive; not a token. */
  comment(text?: string): boolean;
  /**
   * Resolves true once the socket buffer has room again, false when the
   * stream closed first (client gone, or stalled past `stallTimeoutMs`).
   * Resolves at once when nothing is waiting to drain.
   */
  drained(): Promise<boolean>;
  /** Ends the response; the request (and its stream) is counted when it finishes. */
  end(): void;
  /** True once the client went away or the response ended: stop generating. */
  readonly closed: boolean;
  /** `write_stall` when the writer ended the stream because the client stopped reading; else undefined. */
  readonly endReason: SseEndReason | undefined;
}

const SSE_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  // nginx buffers proxied responses by default, which would hold every token back.
  'x-accel-buffering': 'no',
};

const DEFAULT_STALL_TIMEOUT_MS = 30_000;

function formatData(data: unknown): string {
  const text = typeof data === 'string' ? data : (JSON.stringify(data) ?? '');
  // Each line of the payload needs its own `data:` prefix, or the client
  // would read the rest as unknown fields.
  return text.includes('\n') ? `data: ${text.split(/\r?\n/).join('\ndata: ')}\n` : `data: ${text}\n`;
}

function fieldValue(value: string): string {
  // A newline in `event:`/`id:` would start a new field; drop it.
  return value.replace(/[\r\n]/g, '');
}

function milliseconds(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 2 ** 31 - 1)
    throw new InferSignalConfigError(field, `must be a number of milliseconds ≥ 0, got ${describeValue(value)}`);
  return value;
}

/** Checks the writer's options (each field named `options.<field>`) and fills the defaults. */
function resolveSseOptions(options: SseOptions | undefined): Required<Omit<SseOptions, 'headers'>> {
  return {
    stallTimeoutMs: milliseconds('options.stallTimeoutMs', options?.stallTimeoutMs, DEFAULT_STALL_TIMEOUT_MS),
    heartbeatMs: milliseconds('options.heartbeatMs', options?.heartbeatMs, 0),
  };
}

/**
 * SSE writer over a raw Node response. The head is written with the first
 * write (not at creation), so a handler that opens the stream and then waits
 * for a queue slot does not mark the request as started too early.
 *
 * A client can keep its connection open and stop reading: every write then
 * lands in the socket buffer until it is full, and a handler that waits for
 * `drain` waits forever while the request stays in flight. So a write that
 * returns false arms a timer (one per stall, not per write); `drain` disarms
 * it, and if it fires first the response is destroyed, which ends the
 * request as cut off. Timers are unref'd and dropped when the response closes.
 */
class ServerSentEvents implements SseStream {
  private headWritten = false;
  private stallTimer: NodeJS.Timeout | undefined = undefined;
  private heartbeat: NodeJS.Timeout | undefined = undefined;
  private listening = false;
  private waiters: Array<(drained: boolean) => void> | undefined = undefined;
  endReason: SseEndReason | undefined = undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly handle: StreamHandle,
    private readonly headers: Record<string, string> | undefined,
    private readonly stallTimeoutMs: number,
    private readonly heartbeatMs: number,
  ) {}

  get closed(): boolean {
    return this.res.destroyed || this.res.writableEnded;
  }

  private writeHead(): void {
    if (this.headWritten) return;
    this.headWritten = true;
    if (this.heartbeatMs > 0) {
      this.listen();
      this.heartbeat = setInterval(this.beat, this.heartbeatMs).unref();
    }
    if (this.res.headersSent) return;
    // HTTP/2 forbids connection-specific headers: Node would drop `connection` with a process warning.
    const http2 = (this.res.req?.httpVersionMajor ?? 1) >= 2;
    for (const name in SSE_HEADERS) if (!(http2 && name === 'connection')) this.res.setHeader(name, SSE_HEADERS[name]);
    if (this.headers) for (const name in this.headers) this.res.setHeader(name, this.headers[name]);
  }

  private write(chunk: string): boolean {
    const flushed = this.res.write(chunk);
    if (this.heartbeat !== undefined) this.heartbeat.refresh();
    if (!flushed && this.stallTimer === undefined && this.stallTimeoutMs > 0) {
      this.listen();
      this.stallTimer = setTimeout(this.stall, this.stallTimeoutMs).unref();
    }
    return flushed;
  }

  /** One `drain` and one `close` listener for the life of the response, added on first need. */
  private listen(): void {
    if (this.listening) return;
    this.listening = true;
    this.res.on('drain', this.onDrain);
    this.res.once('close', this.onClose);
  }

  private readonly onDrain = (): void => {
    if (this.stallTimer !== undefined) {
      clearTimeout(this.stallTimer);
      this.stallTimer = undefined;
    }
    this.wake(true);
  };

  private readonly onClose = (): void => {
    this.stop();
    this.wake(false);
  };

  private readonly stall = (): void => {
    this.stallTimer = undefined;
    if (this.closed) return;
    this.endReason = 'write_stall';
    // Counted here rather than left to whoever tracks the request: a writer made from a bare
    // ticket.stream() has no lifecycle to see the close. The first end() wins, so a lifecycle's later one is a no-op.
    this.handle.end('cancelled', 'write_stall');
    this.res.destroy();
  };

  private readonly beat = (): void => {
    if (this.closed) this.stop();
    else if (!this.res.writableNeedDrain) this.write(':\n\n');
  };

  private stop(): void {
    if (this.stallTimer !== undefined) clearTimeout(this.stallTimer);
    if (this.heartbeat !== undefined) clearInterval(this.heartbeat);
    this.stallTimer = undefined;
    this.heartbeat = undefined;
  }

  private wake(drained: boolean): void {
    const waiters = this.waiters;
    if (waiters === undefined) return;
    this.waiters = undefined;
    for (const resolve of waiters) resolve(drained);
  }

  send(data: unknown, event?: SseEvent): boolean {
    if (this.closed) return false;
    this.writeHead();
    let frame = '';
    if (event?.event !== undefined) frame += `event: ${fieldValue(event.event)}\n`;
    if (event?.id !== undefined) frame += `id: ${fieldValue(event.id)}\n`;
    frame += formatData(data);
    frame += '\n';
    const flushed = this.write(frame);
    const tokens = event?.tokens ?? 1;
    if (tokens > 0) this.handle.token(tokens);
    return flushed;
  }

  comment(text = ''): boolean {
    if (this.closed) return false;
    this.writeHead();
    return this.write(`: ${fieldValue(text)}\n\n`);
  }

  drained(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (!this.res.writableNeedDrain) return Promise.resolve(true);
    this.listen();
    return new Promise((resolve) => (this.waiters ??= []).push(resolve));
  }

  end(): void {
    if (this.closed) return;
    this.writeHead();
    this.stop();
    this.res.end();
  }
}

/**
 * Turns a raw Node response into a `text/event-stream` whose events count
 * as tokens of `stream` (the first one marks time to first token). The
 * HTTP adapters call it from `inferSignal.sse()`; a server without an
 * adapter can call it with `ticket.stream()`. Bad options throw an
 * InferSignalConfigError naming the field.
 */
export function createSseStream(res: ServerResponse, stream: StreamHandle, options?: SseOptions): SseStream {
  const { stallTimeoutMs, heartbeatMs } = resolveSseOptions(options);
  return new ServerSentEvents(res, stream, options?.headers, stallTimeoutMs, heartbeatMs);
}
