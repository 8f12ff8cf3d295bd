import { ServerResponse } from 'node:http';
import type { Monitor, Outcome, QueueTracker, StreamHandle, StreamOutcome, Ticket } from '@infersignal/core';
import { ServerSentEvents, type SseOptions, type SseStream } from './sse';

/** What a handler sees as `req.inferSignal`. */
export interface InferSignalRequest {
  /** The queue ticket of this request (arrival was recorded when the middleware ran). */
  readonly ticket: Ticket;
  /** Model label the request is recorded under (capped by the monitor). */
  readonly model: string;
  /** Route pattern label, when known at arrival (middleware mounted on a route); never the raw URL. */
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

/** Per-middleware settings, made once at registration. */
export interface Shared {
  readonly monitor: Monitor;
  readonly tracker: QueueTracker;
  /** Finished responses with a status at or above this are `error`. */
  readonly errorStatus: number;
  /** Start the ticket when the response head is written, if the handler did not. */
  readonly autoStart: boolean;
  /** Source name for `monitor.internalError`. */
  readonly source: string;
}

const kSignal = Symbol('infersignal.request');

type TrackedResponse = ServerResponse & { [kSignal]?: RequestSignal };
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
 * One request's lifecycle: arrival (constructor) → start (handler, run(), or
 * the response head) → exactly one end. `finish` means the response was
 * handed to the OS in full; `close` without `writableFinished` means the
 * socket went away first (client disconnect, or a destroy after an error).
 * Both events can fire, in either order on some paths; `settled` makes the
 * first one win, on top of the ticket's own idempotent end().
 */
export class RequestSignal implements InferSignalRequest {
  private handle: StreamHandle | undefined;
  private controller: AbortController | undefined;
  private failed = false;
  private settled = false;
  /** The response's writeHead before auto-start wrapped it. */
  writeHeadBefore: WriteHead | undefined;

  constructor(
    private readonly shared: Shared,
    readonly ticket: Ticket,
    readonly route: string | undefined,
    private readonly res: ServerResponse,
  ) {
    const tracked = res as TrackedResponse;
    if (shared.autoStart) wrapWriteHead(tracked, this);
    tracked[kSignal] = this;
    // Shared listener functions (no closure per request): they find the
    // request through the symbol on the response.
    res.on('finish', onFinish);
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
    return new ServerSentEvents(this.res, this.stream(), options?.headers);
  }

  run<T>(fn: () => Promise<T> | T): Promise<T> {
    return this.shared.tracker.run(fn, { ticket: this.ticket, signal: this.signal });
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

  /** The response finished: the status decides, unless the handler called fail(). */
  finished(): void {
    // The client left before its request was received in full (e.g. mid-body):
    // whatever answer was written went to a closed peer, as Fastify's onRequestAbort sees it.
    if (this.res.req?.readableAborted === true) return this.settle(this.failed ? 'error' : 'cancelled');
    const status = this.res.statusCode;
    this.settle(this.failed || status >= this.shared.errorStatus ? 'error' : 'completed');
  }

  /** The socket closed: a response that had not finished was cut off. */
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
      this.shared.monitor.internalError(this.shared.source, error);
    }
  }
}

function onFinish(this: TrackedResponse): void {
  this[kSignal]?.finished();
}

function onClose(this: TrackedResponse): void {
  this[kSignal]?.closed();
}

/**
 * Wraps the instance's writeHead once. Should a second signal ever attach to
 * the same response, it reuses the first one's original instead of wrapping
 * the wrapper (which would call itself forever).
 */
function wrapWriteHead(res: TrackedResponse, signal: RequestSignal): void {
  if (res.writeHead === (startOnHead as WriteHead)) {
    signal.writeHeadBefore = res[kSignal]?.writeHeadBefore;
    return;
  }
  signal.writeHeadBefore = res.writeHead;
  res.writeHead = startOnHead as WriteHead;
}

function startOnHead(this: TrackedResponse, ...args: unknown[]): ServerResponse {
  const signal = this[kSignal];
  // ticket.start() is a no-op when the handler already started (or the request ended).
  signal?.ticket.start();
  const writeHead = signal?.writeHeadBefore ?? ServerResponse.prototype.writeHead;
  return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
}

declare global {
  // Express's own augmentation point (@types/express-serve-static-core, v4 and v5).
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by the InferSignal middleware on the requests it tracks (undefined elsewhere, or when shed). */
      inferSignal?: InferSignalRequest;
    }
  }
}
