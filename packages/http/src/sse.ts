import type { ServerResponse } from 'node:http';
import type { StreamHandle } from '@infersignal/core';

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
}

/** Writer for a `text/event-stream` response that reports to the request's stream handle. */
export interface SseStream {
  /**
   * Writes one event. Strings are sent as they are (split on newlines into
   * `data:` lines), anything else as JSON. Each event counts `tokens`
   * (default 1) and the first such event marks the first token; an event
   * with `tokens: 0` is neither. Returns `false` when the client is gone
   * (nothing written) or the socket buffer is full (wait for `drain` on the
   * response before writing more).
   */
  send(data: unknown, event?: SseEvent): boolean;
  /** A comment line (`: text`), e.g. a keep-alive; not a token. */
  comment(text?: string): boolean;
  /** Ends the response; the request (and its stream) is counted when it finishes. */
  end(): void;
  /** True once the client went away or the response ended: stop generating. */
  readonly closed: boolean;
}

const SSE_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  // nginx buffers proxied responses by default, which would hold every token back.
  'x-accel-buffering': 'no',
};

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

/**
 * SSE writer over a raw Node response. The head is written with the first
 * write (not at creation), so a handler that opens the stream and then waits
 * for a queue slot does not mark the request as started too early.
 */
class ServerSentEvents implements SseStream {
  private headWritten = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly handle: StreamHandle,
    private readonly headers: Record<string, string> | undefined,
  ) {}

  get closed(): boolean {
    return this.res.destroyed || this.res.writableEnded;
  }

  private writeHead(): void {
    if (this.headWritten) return;
    this.headWritten = true;
    if (this.res.headersSent) return;
    for (const name in SSE_HEADERS) this.res.setHeader(name, SSE_HEADERS[name]);
    if (this.headers) for (const name in this.headers) this.res.setHeader(name, this.headers[name]);
  }

  send(data: unknown, event?: SseEvent): boolean {
    if (this.closed) return false;
    this.writeHead();
    let frame = '';
    if (event?.event !== undefined) frame += `event: ${fieldValue(event.event)}\n`;
    if (event?.id !== undefined) frame += `id: ${fieldValue(event.id)}\n`;
    frame += formatData(data);
    frame += '\n';
    const flushed = this.res.write(frame);
    const tokens = event?.tokens ?? 1;
    if (tokens > 0) this.handle.token(tokens);
    return flushed;
  }

  comment(text = ''): boolean {
    if (this.closed) return false;
    this.writeHead();
    return this.res.write(`: ${fieldValue(text)}\n\n`);
  }

  end(): void {
    if (this.closed) return;
    this.writeHead();
    this.res.end();
  }
}

/**
 * Turns a raw Node response into a `text/event-stream` whose events count
 * as tokens of `stream` (the first one marks time to first token). The
 * HTTP adapters call it from `inferSignal.sse()`; a server without an
 * adapter can call it with `ticket.stream()`.
 */
export function createSseStream(res: ServerResponse, stream: StreamHandle, options?: SseOptions): SseStream {
  return new ServerSentEvents(res, stream, options?.headers);
}
