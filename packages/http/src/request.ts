import { OutgoingMessage, ServerResponse, type IncomingMessage } from 'node:http';
import type { TextMapGetter } from '@opentelemetry/api';
import type { Monitor, Outcome, QueueTracker, StreamHandle, StreamOutcome, Ticket } from '@infersignal/core';
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

/**
 * What an adapter may report earlier than the lifecycle's own `close`
 * listener would, from its framework's events (neither shipped adapter
 * needs to: the listener sees every end).
 */
export interface TrackedHttpRequest extends HttpRequestSignal {
  /** The response finished: the status decides, unless fail() was called. */
  finished(): void;
  /** The client went away: a response that had not finished was cut off. */
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
 * after an error); below Node 24, a pipelined response still waiting for
 * its connection is the exception (closeWithRequest). So one `close`
 * listener sees every end, and `writableFinished` tells the two apart
 * (closed() says where it cannot: HTTP/2, in-process transports). An
 * adapter may report earlier from its framework's events (finished(),
 * closed()); whichever comes first wins, dropping the response marks it
 * counted, and with the ticket's idempotent end() the rest are no-ops.
 *
 * Per request this allocates the object and the link from the response to
 * it (see trackedRequestOf); a plain response (its prototype Node's own)
 * gets the `close` listener and writeHead wrapper all plain responses
 * share, which find the request through that link, and a re-parented one a
 * `close` listener of its own; nothing more unless asked (stream handle,
 * AbortController). Once counted, the lifecycle lets go of the
 * response and its owner, which nothing after the end needs.
 */
class HttpRequestLifecycle implements TrackedHttpRequest {
  private handle: StreamHandle | undefined = undefined;
  private controller: AbortController | undefined = undefined;
  private failed = false;
  /** Settled because the response was cut off (what a late `signal` reports). */
  private cutOff = false;
  /** Until counted: undefined from then on is what `ended` means. */
  private res: ServerResponse | undefined;
  private owner: HttpReplyOwner | undefined;
  /** How closed() reads whether the response finished in full (FinishRead), found from its prototype at arrival. */
  private readonly finish: FinishRead;

  constructor(
    readonly settings: HttpRequestSettings,
    readonly ticket: Ticket,
    readonly route: string | undefined,
    res: ServerResponse,
    owner: HttpReplyOwner | undefined,
    proto: unknown,
  ) {
    this.res = res;
    this.owner = owner;
    const plain = proto === ServerResponse.prototype;
    this.finish = plain ? PLAIN : finishReadOf(proto);
    // open() has checked trackedRequestWith(res): one request per response.
    remember(res, this, plain);
    if (settings.autoStart) startOnHead(res, ticket, proto);
    // Read only if the request's span is made: the trace its caller sent (`traceparent`), where nothing else took it.
    ticket.setTraceCarrier(res, REQUEST_HEADERS);
    // One listener rather than `finish` + `close` (the server benchmark priced
    // each listener on Express's path): `close` follows `finish` on every response.
    // A plain response holds its request, so one function serves them all: no closure a request.
    if (plain) res.on('close', closePlainResponse);
    else res.on('close', () => this.closed());
    // Queued behind an earlier response on its connection (HTTP/1.1 pipelining): see closeWithRequest().
    if (QUEUED_RESPONSES_MAY_NOT_CLOSE && res.socket === null) this.closeWithRequest(res.req as IncomingMessage);
  }

  /**
   * A response waiting for its connection, behind an earlier one, is never
   * given it if the connection goes away first, and Node 20 and 22 then
   * never emit its `close` (Node 24 does): only its request closes. So such
   * a request is counted when its request closes with its connection gone.
   * Rare (pipelined requests), hence a closure of its own.
   */
  private closeWithRequest(req: IncomingMessage | undefined): void {
    req?.once('close', () => {
      if (req.socket == null || req.socket.destroyed) this.closed();
    });
  }

  get model(): string {
    return this.ticket.model;
  }

  get ended(): boolean {
    return this.res === undefined;
  }

  start(): void {
    this.ticket.start();
  }

  stream(): StreamHandle {
    if (this.handle === undefined) this.handle = this.ticket.stream();
    return this.handle;
  }

  sse(options?: SseOptions): SseStream {
    // Counted already: the client is gone or the response ended, so there is nothing to write to.
    if (this.res === undefined) return ENDED_SSE;
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
      if (this.cutOff) this.controller.abort();
    }
    return this.controller.signal;
  }

  fail(): void {
    this.failed = true;
  }

  finished(): void {
    const res = this.res;
    if (res === undefined) return;
    // The client left before its request was received in full (e.g. mid-body):
    // whatever answer was written went to a closed peer.
    // `complete` (own property) first: a request received in full was not cut off mid-body, and
    // readableAborted is a getter four prototypes up on Express's re-parented request.
    const req = res.req as IncomingMessage | undefined;
    if (req !== undefined && req.complete !== true && req.readableAborted) {
      this.settle(this.failed ? 'error' : 'cancelled');
      return;
    }
    this.settle(this.failed || res.statusCode >= this.settings.errorStatus ? 'error' : 'completed');
  }

  closed(): void {
    const res = this.res;
    if (res === undefined) return;
    const finish = this.finish;
    if (
      finish === PLAIN
        ? res.writableFinished
        : finish === NODE_GETTER
          ? (NODE_WRITABLE_FINISHED!.call(res) as boolean)
          : endedAndFinished(res)
    ) {
      this.finished();
      return;
    }
    // Ended, and its socket still open: nothing cut it off. A response on a real connection closes unfinished only
    // with its socket destroyed (or never given one); an in-process transport such as fastify.inject()'s
    // (light-my-request) never drains its stand-in socket, so Node never reads that response finished.
    const socket = res.socket;
    if (res.writableEnded && socket != null && !socket.destroyed) {
      this.finished();
      return;
    }
    // Tell a handler still waiting in run() or generating that nobody listens.
    this.cutOff = true;
    this.controller?.abort();
    this.settle(this.failed ? 'error' : 'cancelled');
  }

  private settle(outcome: Outcome): void {
    const res = this.res;
    if (res === undefined) return;
    // A re-parented response's WeakMap entry goes once its response has finished: the handler is done with it,
    // and entries left for the collector cost every request (see trackedRequestOf). A cut-off one stays, for a
    // handler still generating that reads `req.inferSignal` late (it finds it `ended`); so the value must stop
    // reaching its key.
    if (this.finish !== PLAIN && !this.cutOff && outcome !== 'cancelled') trackedRequests.delete(res);
    this.res = undefined;
    this.owner = undefined;
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
 * arrival). `owner`: see HttpReplyOwner. `proto`: the response's prototype,
 * read once by the caller (Object.getPrototypeOf on a response goes through
 * a runtime call, ~200 instructions). Adapters reach it through
 * HttpTracking.open(), after trackedRequestWith() found nothing on `res`.
 */
export function trackHttpRequest(
  settings: HttpRequestSettings,
  ticket: Ticket,
  route: string | undefined,
  res: ServerResponse,
  owner: HttpReplyOwner | undefined,
  proto: unknown,
): TrackedHttpRequest {
  return new HttpRequestLifecycle(settings, ticket, route, res, owner, proto);
}

/** A tracked request's incoming headers, reached from its response (Node links the two). */
export const REQUEST_HEADERS: TextMapGetter<ServerResponse> = {
  keys: (res) => Object.keys(res.req?.headers ?? {}),
  get: (res, key) => res.req?.headers[key],
};

type WriteHead = (this: ServerResponse, ...args: unknown[]) => ServerResponse;

/** What sse() returns once the request was counted: a stream to a client that is gone. */
const ENDED_SSE: SseStream = Object.freeze({
  send: () => false,
  comment: () => false,
  drained: () => Promise.resolve(false),
  end: () => {},
  closed: true,
  endReason: undefined,
});

/** Re-parented responses (Express's) → their request: see trackedRequestOf. */
const trackedRequests = new WeakMap<ServerResponse, HttpRequestLifecycle>();
/** Where a plain response (its prototype Node's own) holds its request: see trackedRequestOf. */
const TRACKED = Symbol('infersignal.trackedRequest');
type PlainResponse = ServerResponse & { [TRACKED]?: HttpRequestLifecycle };

/** Links `res` to its request (see trackedRequestOf); `plain`: its prototype is Node's own. */
function remember(res: ServerResponse, request: HttpRequestLifecycle, plain: boolean): void {
  if (plain) (res as PlainResponse)[TRACKED] = request;
  else trackedRequests.set(res, request);
}

/**
 * The request tracked on a raw response, if any. The Express adapter
 * serves `req.inferSignal` from it, and the head hook on a response
 * prototype starts it.
 *
 * Two places, by the response's prototype. A plain response (Fastify's
 * `reply.raw`, a bare `http` server) holds it in a symbol property: every
 * such response takes the same hidden-class transition, and a WeakMap
 * entry instead cost ~0.7 µs a request (the key's identity hash, the
 * ephemeron table and its processing in the garbage collector), half of
 * the Fastify plugin's own work. A response
 * re-parented with `Object.setPrototypeOf` (Express does it to every one)
 * is kept in a WeakMap: on such an object each property added builds a
 * hidden class of its own (~2 % of an Express hello-world request,
 * measured). The entry is deleted when a finished response is counted:
 * left for the collector, dead entries made the table grow between
 * scavenges and every set and lookup, and the scavenges that clear them,
 * dearer (0.6–1.0 µs a request in a loop that keeps 64 in flight, Node 20
 * and 24). A cut-off response's entry
 * stays, for late readers, and the lifecycle drops its response when it
 * settles, so no dead entry's value reaches its own key: such an ephemeron
 * cycle cost ~5 % of the same request, in the garbage collector.
 */
export function trackedRequestOf(res: ServerResponse): TrackedHttpRequest | undefined {
  return trackedRequestWith(res, Object.getPrototypeOf(res));
}

/** trackedRequestOf(res) where the caller has read `proto`, the response's prototype. */
export function trackedRequestWith(res: ServerResponse, proto: unknown): TrackedHttpRequest | undefined {
  return proto === ServerResponse.prototype ? (res as PlainResponse)[TRACKED] : trackedRequests.get(res);
}

/**
 * Node 20 and 22 leave a response queued behind an earlier one on its
 * connection without `close` when the connection goes away (see
 * closeWithRequest); Node 24 closes it. Below 24 each request's response
 * is checked for a connection at arrival.
 */
const QUEUED_RESPONSES_MAY_NOT_CLOSE = Number(process.versions.node.split('.')[0]) < 24;

/** Node's own `writableFinished` getter (OutgoingMessage's). */
const NODE_WRITABLE_FINISHED = Object.getOwnPropertyDescriptor(OutgoingMessage.prototype, 'writableFinished')?.get;
/**
 * How a response's `writableFinished` is read at `close`, once a request.
 * PLAIN: its prototype is Node's own (Fastify's `reply.raw`), the property
 * itself (a check here cost Fastify's path ~50 ns). NODE_GETTER: re-parented
 * with `Object.setPrototypeOf` (Express's) onto a chain that leads to Node's
 * getter, three prototypes up, a lookup V8 cannot cache for objects that
 * each have a hidden class of their own: that getter is called directly
 * (~0.3 µs less a request). OTHER: any other
 * prototype, endedAndFinished(). Found at arrival from the prototype read
 * there: at `close` that read was a second runtime call on Express's path.
 */
type FinishRead = 0 | 1 | 2;
const PLAIN = 0;
const NODE_GETTER = 1;
const OTHER = 2;
/** The re-parented prototype finishReadOf() saw last, and its answer (an app's responses share one prototype). */
let lastFinishedPrototype: object | undefined;
let lastFinishRead: FinishRead = OTHER;

/** FinishRead of a response whose prototype, `proto`, is not Node's own. */
function finishReadOf(proto: unknown): FinishRead {
  if (typeof proto !== 'object' || proto === null) return OTHER;
  if (proto !== lastFinishedPrototype) {
    lastFinishedPrototype = proto;
    lastFinishRead =
      NODE_WRITABLE_FINISHED !== undefined && getterOf(proto, 'writableFinished') === NODE_WRITABLE_FINISHED
        ? NODE_GETTER
        : OTHER;
  }
  return lastFinishRead;
}

/**
 * Finished in full, for a response whose `writableFinished` is not Node's
 * OutgoingMessage getter. HTTP/2's compatibility response (Fastify with
 * `http2: true`) reports `writableFinished` once its stream closed, a
 * stream the client cancelled included; that one never ended
 * (`writableEnded` false), which tells it apart.
 */
function endedAndFinished(res: ServerResponse): boolean {
  return res.writableFinished && res.writableEnded;
}

/** The getter `name` resolves to from `proto` up (undefined for a data property or none). */
function getterOf(proto: object, name: string): (() => unknown) | undefined {
  for (let o: object | null = proto; o !== null; o = Object.getPrototypeOf(o) as object | null) {
    const descriptor = Object.getOwnPropertyDescriptor(o, name);
    if (descriptor !== undefined) return descriptor.get;
  }
  return undefined;
}

/** Head hook installed on each response prototype seen; null where none can be (frozen, or not made from Node's). */
const headHooks = new WeakMap<object, WriteHead | null>();
/** The response prototype startOnHead() saw last, and its hook. */
let lastHooked: object | undefined;
let lastHook: WriteHead | null | undefined;

/**
 * Starts the ticket when the response head is written: Node calls writeHead
 * for explicit heads and for the implicit head of the first write()/end(),
 * and has no event for the head. ticket.start() is a no-op when the handler
 * already started (or the request ended).
 *
 * A plain response gets its own writeHead wrapper. A response re-parented
 * with `Object.setPrototypeOf` is different: Express does it to every
 * req/res (onto `app.response`), and there the hook goes once on that
 * prototype — Express's documented place to extend responses — and starts
 * the request tracked for the response; responses it does not track pass
 * straight through. Should something later replace the prototype's
 * writeHead, each request sees it and falls back to its own wrapper.
 */
function startOnHead(res: ServerResponse, ticket: Ticket, proto: unknown): void {
  if (proto !== ServerResponse.prototype && typeof proto === 'object' && proto !== null) {
    // An app's responses all share one prototype: the last one's hook saves the WeakMap lookup.
    let hook = proto === lastHooked ? lastHook : headHooks.get(proto);
    if (hook === undefined) headHooks.set(proto, (hook = hookPrototype(proto as ServerResponse)));
    lastHooked = proto;
    lastHook = hook;
    if (hook !== null && (proto as ServerResponse).writeHead === (hook as unknown)) return;
  }
  const writeHead = res.writeHead as unknown as WriteHead;
  if (proto === ServerResponse.prototype && writeHead === NODE_WRITE_HEAD) {
    // The common case (Fastify's reply.raw): one shared wrapper, which finds the request on the response.
    res.writeHead = plainWriteHead as unknown as ServerResponse['writeHead'];
    return;
  }
  res.writeHead = function writeHeadStartingInference(this: ServerResponse) {
    ticket.start();
    // biome-ignore lint/complexity/noArguments: passes writeHead's overloads through untouched, without a rest array.
    return writeHead.apply(this, arguments as unknown as unknown[]);
  } as ServerResponse['writeHead'];
}

const NODE_WRITE_HEAD = ServerResponse.prototype.writeHead as unknown as WriteHead;

/**
 * writeHead of a plain response whose writeHead was Node's own: starts its
 * request, then Node's. Node's reads its three parameters, never
 * `arguments`, so they are passed as they are: forwarding `arguments`
 * materialized it, ~20 bytes a request.
 */
function plainWriteHead(this: PlainResponse, statusCode: unknown, reason: unknown, headers: unknown) {
  this[TRACKED]?.ticket.start();
  return NODE_WRITE_HEAD.call(this, statusCode, reason, headers);
}

/** The `close` listener of every plain response: Node calls it with the response as `this`. */
function closePlainResponse(this: PlainResponse): void {
  this[TRACKED]?.closed();
}

/**
 * Installs the head hook on a response prototype; null where it cannot be.
 * Only a prototype made from Node's (Express's app.response is one): Node's
 * own classes are never patched.
 */
function hookPrototype(proto: ServerResponse): WriteHead | null {
  if (!Object.prototype.isPrototypeOf.call(ServerResponse.prototype, proto) || !Object.isExtensible(proto)) return null;
  // The prototype's own writeHead if it had one; otherwise looked up at each call, so a later patch below it still runs.
  const own = Object.hasOwn(proto, 'writeHead') ? (proto.writeHead as unknown as WriteHead) : undefined;
  const hook = function writeHeadStartingInference(
    this: ServerResponse,
    statusCode: unknown,
    reason: unknown,
    headers: unknown,
  ) {
    const request = trackedRequests.get(this);
    if (request?.settings.autoStart === true) request.ticket.start();
    const writeHead = (own ?? (Object.getPrototypeOf(proto) as ServerResponse).writeHead) as unknown as WriteHead;
    // Node's own, as under Express: its three parameters as they are (see plainWriteHead).
    if (writeHead === NODE_WRITE_HEAD) return NODE_WRITE_HEAD.call(this, statusCode, reason, headers);
    // biome-ignore lint/complexity/noArguments: passes writeHead's overloads through untouched, without a rest array.
    return writeHead.apply(this, arguments as unknown as unknown[]);
  };
  proto.writeHead = hook as unknown as ServerResponse['writeHead'];
  return hook;
}
