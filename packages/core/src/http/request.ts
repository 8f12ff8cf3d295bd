import { ServerResponse } from 'node:http';
import type { Monitor, Outcome, QueueTracker, StreamHandle, StreamOutcome, Ticket } from '../types';
import { createSseStream, type SseOptions, type SseStream } from './sse';

/** What a request handler sees (`req.inferSignal` in Express, `request.inferSignal` in Fastify). */
export interface HttpRequestSignal {
  /** The queue ticket of this request (arrival was recorded when the adapter saw the request). */
  readonly ticket: Ticket;
  /** Model label the request is recorded under (capped by the monitor). */
  readonly model: string;
  /** Route pattern label, when known at arrival; never the raw URL. */
  readonly route: string | undefined;
  /** Inference begins now: records the queue wait. Without a call, the response head counts as the start. */
  start(): void;
  /** Streaming handle of this request (one per request; time to first token is measured from arrival). */
  stream(): StreamHandle;
  /** Turns the response into a `text/event-stream` whose events count as tokens. */
  sse(options?: SseOptions): SseStream;
  /**
   * Runs `fn` through the queue tracker's bounded FIFO with this request's
   * ticket; a client that leaves while waiting frees its place.
   */
  run<T>(fn: () => Promise<T> | T): Promise<T>;
  /** Aborted when the client goes away before the response finished. */
  readonly signal: AbortSignal;
  /** Count this request as `error` whatever the status (e.g. a failure after the head was sent). */
  fail(): void;
  /** True once the request has been counted. */
  readonly ended: boolean;
}

/** What the adapter that tracks a request reports from its framework's own events. */
export interface TrackedHttpRequest extends HttpRequestSignal {
  /** The response finished (Fastify's onResponse): the status decides, unless fail() was called. */
  finished(): void;
  /** The client went away (Fastify's onRequestAbort): a response that had not finished was cut off. */
  closed(): void;
}

/**
 * The framework object that owns the response, where the framework must be
 * told before the SSE writer takes the raw response over (Fastify's reply:
 * `hijack()`, after which Fastify sends nothing for the request).
 */
export interface HttpReplyOwner {
  hijack(): unknown;
}

/** Settings of one adapter registration (a middleware, a plugin), made once. */
export interface HttpRequestSettings {
  readonly monitor: Monitor;
  readonly tracker: QueueTracker;
  /** Finished responses with a status at or above this are `error`. */
  readonly errorStatus: number;
  /** Start the ticket when the response head is written, if the handler did not. */
  readonly autoStart: boolean;
  /** Source name for `monitor.internalError`. */
  readonly source: string;
}

const kRequest = Symbol('infersignal.request');

type TrackedResponse = ServerResponse & { [kRequest]?: HttpRequestLifecycle };
type WriteHead = ServerResponse['writeHead'];

const STREAM_OUTCOME: Record<Outcome, StreamOutcome> = {
  completed: 'completed',
  cancelled: 'cancelled',
  error: 'error',
  rejected: 'unavailable',
  unavailable: 'unavailable',
  timeout: 'deadline_exceeded',
  deadline_exceeded: 'deadline_exceeded',
};

/**
 * One HTTP request's lifecycle over the raw Node response, whatever the
 * framework: arrival (constructor) → start (handler, run(), or the response
 * head) → exactly one end.
 *
 * The outcome is decided once. Node emits `close` on every ServerResponse:
 * a tick after `finish` when the response was handed to the OS in full, or
 * alone when the socket went away first (client disconnect, or a destroy
 * after an error). So one `close` listener sees every end, and
 * `writableFinished` tells the two apart. An adapter may report earlier from
 * its framework's events (finished(), closed()); whichever comes first wins,
 * `settled` and the ticket's idempotent end() make the rest no-ops.
 *
 * Per request this allocates the object itself and nothing more unless
 * asked (stream handle, AbortController): the listener and the writeHead
 * wrapper are shared functions that find the request through a symbol on
 * the response.
 */
class HttpRequestLifecycle implements TrackedHttpRequest {
  private handle: StreamHandle | undefined = undefined;
  private controller: AbortController | undefined = undefined;
  private failed = false;
  private settled = false;
  /** The response's writeHead before auto-start wrapped it (read by startOnHead). */
  writeHeadBefore: WriteHead | undefined = undefined;

  constructor(
    private readonly settings: HttpRequestSettings,
    readonly ticket: Ticket,
    readonly route: string | undefined,
    private readonly res: ServerResponse,
    private readonly owner: HttpReplyOwner | undefined,
  ) {
    const tracked = res as TrackedResponse;
    if (settings.autoStart) wrapWriteHead(tracked, this);
    tracked[kRequest] = this;
    // One listener rather than `finish` + `close` (the server benchmark priced
    // each listener on Express's path): `close` follows `finish` on every response.
    res.on('close', onClose);
  }

  get model(): string {
    return this.ticket.model;
  }

  get ended(): boolean {
    return this.settled;
  }

  start(): void {
    this.ticket.start();
  }

  stream(): StreamHandle {
    if (this.handle === undefined) this.handle = this.ticket.stream();
    return this.handle;
  }

  sse(options?: SseOptions): SseStream {
    this.owner?.hijack();
    return createSseStream(this.res, this.stream(), options);
  }

  run<T>(fn: () => Promise<T> | T): Promise<T> {
    return this.settings.tracker.run(fn, { ticket: this.ticket, signal: this.signal });
  }

  get signal(): AbortSignal {
    // Made on first use: most requests never ask for one.
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.settled && !this.res.writableFinished) this.controller.abort();
    }
    return this.controller.signal;
  }

  fail(): void {
    this.failed = true;
  }

  finished(): void {
    // The client left before its request was received in full (e.g. mid-body):
    // whatever answer was written went to a closed peer.
    if (this.res.req?.readableAborted === true) return this.settle(this.failed ? 'error' : 'cancelled');
    this.settle(this.failed || this.res.statusCode >= this.settings.errorStatus ? 'error' : 'completed');
  }

  closed(): void {
    if (this.res.writableFinished) return this.finished();
    if (this.settled) return;
    // Tell a handler still waiting in run() or generating that nobody listens.
    this.controller?.abort();
    this.settle(this.failed ? 'error' : 'cancelled');
  }

  private settle(outcome: Outcome): void {
    if (this.settled) return;
    this.settled = true;
    try {
      this.handle?.end(STREAM_OUTCOME[outcome]);
      this.ticket.end(outcome);
    } catch (error) {
      this.settings.monitor.internalError(this.settings.source, error);
    }
  }
}

/**
 * Starts tracking one request on its raw Node response (the ticket is its
 * arrival). `owner`: see HttpReplyOwner. Adapters call it through
 * HttpTracking.track().
 */
export function trackHttpRequest(settings: HttpRequestSettings, ticket: Ticket, route: string | undefined, res: ServerResponse, owner?: HttpReplyOwner): TrackedHttpRequest {
  return new HttpRequestLifecycle(settings, ticket, route, res, owner);
}

function onClose(this: TrackedResponse): void {
  this[kRequest]?.closed();
}

/**
 * Wraps the instance's writeHead once: Node calls it for explicit heads and
 * for the implicit head of the first write()/end(), and has no event for the
 * head. One own property holding a shared function, no closure. Should a
 * second request ever attach to the same response, it reuses the first one's
 * original instead of wrapping the wrapper (which would call itself forever).
 */
function wrapWriteHead(res: TrackedResponse, request: HttpRequestLifecycle): void {
  if (res.writeHead === (startOnHead as WriteHead)) {
    request.writeHeadBefore = res[kRequest]?.writeHeadBefore;
    return;
  }
  request.writeHeadBefore = res.writeHead;
  res.writeHead = startOnHead as WriteHead;
}

function startOnHead(this: TrackedResponse, ...args: unknown[]): ServerResponse {
  const request = this[kRequest];
  // ticket.start() is a no-op when the handler already started (or the request ended).
  request?.ticket.start();
  const writeHead = request?.writeHeadBefore ?? ServerResponse.prototype.writeHead;
  return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
}
