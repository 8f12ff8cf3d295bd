import type { Attributes } from '@opentelemetry/api';
import type { Server as HttpServer, IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Server as TlsServer, type TLSSocket } from 'node:tls';
import { ATTR, InferSignalConfigError, METRICS, type Level, type Monitor } from '@infersignal/core';
import {
  fieldOrDefault,
  ThresholdDetector,
  checkOptionKeys,
  type CounterRecorder,
  type Gauge,
  type GaugeObserver,
  type HistogramRecorder,
  type Signal,
  type SignalContext,
  describeValue,
} from '@infersignal/core/signals';

/**
 * Connection and TLS signals of an `http`/`https` server: the protocol-layer
 * precursors of a P99 glitch. A server at its connection limit turns new
 * clients away at accept (Node closes the socket: the client sees
 * ECONNRESET) before any request-level signal can see them, and slow or
 * failing TLS handshakes cost CPU on the same event loop that runs
 * inference. Everything here hangs off per-connection events; the only
 * per-request work is one WeakMap lookup and a counter increment.
 *
 * One `connections` signal per monitor (registered on the first
 * instrumented server) holds every server of that monitor; the HTTP
 * adapters share this one implementation.
 */

export interface InstrumentServerOptions {
  /**
   * Connections the server is sized for. Default: `server.maxConnections`,
   * read at every connection event (so setting it after this call works).
   * Without either, open connections are counted but saturation is not judged.
   */
  capacity?: number;
  /** `infersignal.server.name` attribute and alert label. Default `https` for TLS servers, else `http`. Unique per monitor. */
  name?: string;
  /** open / capacity above which the `connections` signal is WARN (default thresholds.connections.saturationWarn, 0.85). */
  saturationWarn?: number;
  /** open / capacity above which it is CRITICAL (default thresholds.connections.saturationCritical, 0.95). */
  saturationCritical?: number;
  /** Requests (keep-alive reuse) and handshakes (TLS session reuse) the reuse shares are computed over (default 1000). */
  reuseWindow?: number;
}

/** Live counts of one instrumented server (the same numbers the gauges and counters export). */
export interface ServerInstrumentation {
  readonly name: string;
  readonly tls: boolean;
  readonly open: number;
  readonly opened: number;
  readonly rejected: number;
  /** undefined when neither `capacity` nor `server.maxConnections` is set. */
  readonly capacity: number | undefined;
  /** Level of the `connections` signal. */
  readonly level: Level;
  readonly handshakes: number;
  readonly handshakeFailures: number;
  /** Keep-alive reuse share over the window; NaN before the first request. */
  readonly reuseRatio: number;
  /** TLS session reuse share over the window; NaN before the first handshake (and on plain HTTP). */
  readonly sessionReuseRatio: number;
  /** Removes the listeners and stops observing this server's gauges (also done on the server's `close`). Idempotent. */
  stop(): void;
}

/** What `instrumentServer` needs of a server: `http.Server` and `https.Server` both fit. */
type InstrumentableServer = HttpServer;

const SIGNAL = 'connections';
const OPTION_KEYS: ReadonlySet<string> = new Set([
  'capacity',
  'name',
  'saturationWarn',
  'saturationCritical',
  'reuseWindow',
]);
const MAX_SERVERS = 64;
/** Distinct TLS error codes kept per server before they fold into `_other`. */
const MAX_ERROR_TYPES = 32;
/** Handshakes timed at once; past it (a SYN flood on the TLS port) new ones go untimed rather than grow the map. */
const MAX_PENDING_HANDSHAKES = 10_000;

/** Share of `true` over the last `size` pushes, in O(1) per push and fixed memory. */
class ShareWindow {
  private readonly bits: Uint8Array;
  private next = 0;
  private count = 0;
  private ones = 0;

  constructor(size: number) {
    this.bits = new Uint8Array(size);
  }

  push(value: boolean): void {
    const bit = value ? 1 : 0;
    if (this.count === this.bits.length) this.ones -= this.bits[this.next]!;
    else this.count++;
    this.bits[this.next] = bit;
    this.ones += bit;
    this.next = (this.next + 1) % this.bits.length;
  }

  get ratio(): number {
    return this.count === 0 ? Number.NaN : this.ones / this.count;
  }
}

/** One accepted connection. For TLS, the raw socket and the TLSSocket share it. */
interface Connection {
  /** performance.now() at TCP accept. */
  readonly acceptedAt: number;
  requests: number;
  /** Key in the pending-handshake map while the handshake runs. */
  handshakeKey: string | undefined;
}

/** One server's section of the snapshot. */
interface ServerSnapshot {
  tls: boolean;
  level: Level;
  open: number;
  capacity: number | null;
  opened: number;
  rejected: number;
  handshakes: number;
  handshakeFailures: number;
  reuseRatio: number | null;
  sessionReuseRatio: number | null;
}

/**
 * The `connections` signal of one monitor: the instruments every
 * instrumented server records into, and the servers. Levels are judged on
 * connection events (no tick); thresholds: `connections` (defaults of the
 * per-server saturation options). Snapshot section `connections`, by server.
 */
class ConnectionsSignal implements Signal {
  readonly name = SIGNAL;
  readonly byName = new Map<string, ServerTracker>();
  readonly opened: CounterRecorder;
  readonly rejected: CounterRecorder;
  readonly requests: HistogramRecorder;
  readonly handshakeDuration: HistogramRecorder;
  readonly handshakeFailures: CounterRecorder;
  private readonly gauges: Record<'open' | 'capacity' | 'reuse' | 'sessionReuse', Gauge>;

  constructor(readonly ctx: SignalContext) {
    this.opened = ctx.counter(METRICS.connectionsOpened);
    this.rejected = ctx.counter(METRICS.connectionsRejected);
    this.requests = ctx.histogram(METRICS.connectionsRequests);
    this.handshakeDuration = ctx.histogram(METRICS.tlsHandshakeDuration);
    this.handshakeFailures = ctx.counter(METRICS.tlsHandshakeFailures);
    this.gauges = {
      open: ctx.gauge(METRICS.connectionsOpen),
      capacity: ctx.gauge(METRICS.connectionsCapacity),
      reuse: ctx.gauge(METRICS.connectionsReuseRatio),
      sessionReuse: ctx.gauge(METRICS.tlsSessionReuseRatio),
    };
  }

  observe(observer: GaugeObserver): void {
    const g = this.gauges;
    for (const tracker of this.byName.values()) {
      observer.observe(g.open, tracker.open, tracker.attributes);
      const capacity = tracker.capacity;
      if (capacity !== undefined) observer.observe(g.capacity, capacity, tracker.attributes);
      const reuse = tracker.reuseRatio;
      if (!Number.isNaN(reuse)) observer.observe(g.reuse, reuse, tracker.attributes);
      const session = tracker.sessionReuseRatio;
      if (!Number.isNaN(session)) observer.observe(g.sessionReuse, session, tracker.attributes);
    }
  }

  snapshot(): Record<string, ServerSnapshot> | undefined {
    if (this.byName.size === 0) return undefined;
    const out: Record<string, ServerSnapshot> = {};
    for (const [name, t] of this.byName) {
      out[name] = {
        tls: t.tls,
        level: t.level,
        open: t.open,
        capacity: t.capacity ?? null,
        opened: t.opened,
        rejected: t.rejected,
        handshakes: t.handshakes,
        handshakeFailures: t.handshakeFailures,
        reuseRatio: Number.isNaN(t.reuseRatio) ? null : t.reuseRatio,
        sessionReuseRatio: Number.isNaN(t.sessionReuseRatio) ? null : t.sessionReuseRatio,
      };
    }
    return out;
  }

  /** The monitor closes: listeners off every server, without announcing recoveries to a closing monitor. */
  close(): void {
    for (const tracker of [...this.byName.values()]) tracker.detach();
  }
}

const signals = new WeakMap<Monitor, ConnectionsSignal>();
const trackers = new WeakMap<object, ServerTracker>();

function signalOf(monitor: Monitor): ConnectionsSignal {
  let signal = signals.get(monitor);
  if (signal === undefined) {
    signal = monitor.register((ctx) => new ConnectionsSignal(ctx));
    signals.set(monitor, signal);
  }
  return signal;
}

function ratioOption(
  options: InstrumentServerOptions,
  key: 'saturationWarn' | 'saturationCritical',
  fallback: number,
): number {
  const value = options[key];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value)) {
    throw new InferSignalConfigError(
      `options.${key}`,
      `must be a number > 0 (a share of capacity), got ${describeValue(value)}`,
    );
  }
  return value;
}

class ServerTracker implements ServerInstrumentation {
  readonly tls: boolean;
  open = 0;
  opened = 0;
  rejected = 0;
  handshakes = 0;
  handshakeFailures = 0;
  private reported: Level = 'ok';
  private stopped = false;
  private readonly configuredCapacity: number | undefined;
  private readonly warn: number;
  private readonly critical: number;
  private readonly detector: ThresholdDetector;
  private readonly reuse: ShareWindow;
  private readonly sessionReuse: ShareWindow;
  /** Raw socket and TLSSocket → their connection. A WeakMap rather than a property, so Node's socket shapes stay as they are. */
  private readonly connections = new WeakMap<Socket, Connection>();
  /** remoteAddress|remotePort → connection whose handshake is running (the TLSSocket is a new object; the peer is what they share). */
  private readonly pending = new Map<string, Connection>();
  readonly attributes: Attributes;
  private readonly errorAttributes = new Map<string, Attributes>();
  private readonly labels: Record<string, string>;
  private readonly ctx: SignalContext;

  constructor(
    private readonly signal: ConnectionsSignal,
    private readonly server: InstrumentableServer,
    readonly name: string,
    options: InstrumentServerOptions,
  ) {
    const ctx = (this.ctx = signal.ctx);
    this.tls = server instanceof TlsServer;
    this.configuredCapacity =
      options.capacity === undefined
        ? undefined
        : fieldOrDefault('options.capacity', options.capacity, { type: 'integer', min: 1 }, 1);
    // Defaults from the monitor's thresholds (one source: the rules generator reads the same).
    this.warn = ratioOption(options, 'saturationWarn', ctx.thresholds.connections.saturationWarn);
    this.critical = ratioOption(options, 'saturationCritical', ctx.thresholds.connections.saturationCritical);
    if (this.critical < this.warn)
      throw new InferSignalConfigError(
        'options.saturationCritical',
        `must be >= saturationWarn (${this.warn}), got ${this.critical}`,
      );
    const window = fieldOrDefault('options.reuseWindow', options.reuseWindow, { type: 'integer', min: 1 }, 1000);
    this.reuse = new ShareWindow(window);
    this.sessionReuse = new ShareWindow(window);
    this.detector = new ThresholdDetector({ warn: this.warn, critical: this.critical, hysteresis: 0.1 });
    this.attributes = { [ATTR.server]: name };
    this.labels = { server: name };
    // Rejections at 0 from the moment the server is instrumented: the rules' increase() sees the first one.
    ctx.counterSeries(signal.rejected, this.attributes, true);
    const tracker = this;
    this.onSocketClose = function (this: Socket) {
      tracker.socketClosed(this);
    };
    server.on('connection', this.onConnection);
    server.on('request', this.onRequest);
    server.on('drop', this.onDrop);
    server.on('close', this.onServerClose);
    if (this.tls) {
      server.on('secureConnection', this.onSecureConnection);
      server.on('tlsClientError', this.onTlsClientError);
    }
  }

  get capacity(): number | undefined {
    if (this.configuredCapacity !== undefined) return this.configuredCapacity;
    const max = this.server.maxConnections;
    return typeof max === 'number' && max > 0 && Number.isFinite(max) ? max : undefined;
  }

  get level(): Level {
    return this.reported;
  }

  get reuseRatio(): number {
    return this.reuse.ratio;
  }

  get sessionReuseRatio(): number {
    return this.sessionReuse.ratio;
  }

  // Listeners are arrow properties: one function per server, none per connection.

  private readonly onConnection = (socket: Socket): void => {
    try {
      const connection: Connection = { acceptedAt: performance.now(), requests: 0, handshakeKey: undefined };
      this.connections.set(socket, connection);
      this.open++;
      this.opened++;
      this.signal.opened.add(1, this.attributes);
      if (this.tls && this.pending.size < MAX_PENDING_HANDSHAKES && socket.remoteAddress !== undefined) {
        connection.handshakeKey = `${socket.remoteAddress}|${socket.remotePort}`;
        this.pending.set(connection.handshakeKey, connection);
      }
      socket.on('close', this.onSocketClose);
      this.evaluate();
    } catch (error) {
      this.ctx.internalError('connections', error);
    }
  };

  /** Socket `close` listener: Node calls it with the socket as `this` (its argument is hadError). Made once per server. */
  private readonly onSocketClose: (this: Socket) => void;

  private socketClosed(socket: Socket): void {
    try {
      const connection = this.connections.get(socket);
      if (!connection) return;
      this.connections.delete(socket);
      this.open--;
      this.endHandshake(connection);
      if (connection.requests > 0) this.signal.requests.record(connection.requests, this.attributes);
      this.evaluate();
    } catch (error) {
      this.ctx.internalError('connections', error);
    }
  }

  /** Per request: the only hot-path work of this file. */
  private readonly onRequest = (request: IncomingMessage): void => {
    const connection = this.connections.get(request.socket);
    if (connection === undefined) return; // accepted before instrumentServer() was called
    this.reuse.push(connection.requests > 0);
    connection.requests++;
  };

  private readonly onDrop = (): void => {
    try {
      this.rejected++;
      this.signal.rejected.add(1, this.attributes);
      this.evaluate();
    } catch (error) {
      this.ctx.internalError('connections', error);
    }
  };

  private readonly onSecureConnection = (socket: TLSSocket): void => {
    try {
      const connection = this.pending.get(`${socket.remoteAddress}|${socket.remotePort}`);
      if (connection === undefined) return;
      this.endHandshake(connection);
      this.connections.set(socket, connection);
      this.handshakes++;
      const seconds = (performance.now() - connection.acceptedAt) / 1000;
      if (seconds >= 0) this.signal.handshakeDuration.record(seconds, this.attributes);
      this.sessionReuse.push(socket.isSessionReused());
    } catch (error) {
      this.ctx.internalError('connections.tls', error);
    }
  };

  private readonly onTlsClientError = (error: Error & { code?: unknown }, socket: TLSSocket): void => {
    try {
      const connection = this.pending.get(`${socket.remoteAddress}|${socket.remotePort}`);
      if (connection !== undefined) this.endHandshake(connection);
      this.handshakeFailures++;
      this.signal.handshakeFailures.add(
        1,
        this.errorAttributesOf(typeof error?.code === 'string' ? error.code : (error?.name ?? 'unknown')),
      );
    } catch (caught) {
      this.ctx.internalError('connections.tls', caught);
    }
  };

  private readonly onServerClose = (): void => {
    this.stop();
  };

  private endHandshake(connection: Connection): void {
    const key = connection.handshakeKey;
    if (key === undefined) return;
    connection.handshakeKey = undefined;
    // The peer's port may already be in use by a newer connection's handshake: delete only our own entry.
    if (this.pending.get(key) === connection) this.pending.delete(key);
  }

  private errorAttributesOf(type: string): Attributes {
    let attributes = this.errorAttributes.get(type);
    if (attributes) return attributes;
    const capped = this.errorAttributes.size >= MAX_ERROR_TYPES;
    const key = capped ? '_other' : type;
    attributes = this.errorAttributes.get(key) ?? { [ATTR.server]: this.name, [ATTR.errorType]: key };
    // '_other' may take the one slot past the cap; nothing else is added.
    this.errorAttributes.set(key, attributes);
    return attributes;
  }

  /** Saturation: open / capacity through a threshold detector with 10 % hysteresis; an alert only on a level change. */
  private evaluate(): void {
    if (this.stopped) return;
    const capacity = this.capacity;
    if (capacity === undefined) return;
    const ratio = this.open / capacity;
    const level = this.detector.update(ratio, performance.now());
    if (level === this.reported) return;
    this.reported = level;
    this.ctx.report({
      signal: SIGNAL,
      level,
      value: ratio,
      threshold: level === 'critical' ? this.critical : this.warn,
      labels: this.labels,
      message:
        level === 'ok'
          ? undefined
          : `server ${this.name}: ${this.open} of ${capacity} connections open (${Math.round(ratio * 100)} %), ${this.rejected} rejected at the limit so far`,
    });
  }

  stop(): void {
    if (this.stopped) return;
    this.detach();
    // A stopped server must not leave its alert active for ever.
    if (this.reported !== 'ok') {
      this.reported = 'ok';
      this.ctx.report({ signal: SIGNAL, level: 'ok', value: 0, threshold: this.warn, labels: this.labels });
    }
  }

  /** Listeners off, out of the signal; the name is free again. */
  detach(): void {
    if (this.stopped) return;
    this.stopped = true;
    const server = this.server;
    server.off('connection', this.onConnection);
    server.off('request', this.onRequest);
    server.off('drop', this.onDrop);
    server.off('close', this.onServerClose);
    server.off('secureConnection', this.onSecureConnection);
    server.off('tlsClientError', this.onTlsClientError);
    this.pending.clear();
    if (this.signal.byName.get(this.name) === this) this.signal.byName.delete(this.name);
    trackers.delete(server);
  }
}

/**
 * Instruments an `http.Server` or `https.Server`: open connections against
 * capacity (`server.maxConnections` or `options.capacity`), connections
 * accepted and rejected at the limit, requests per connection, keep-alive
 * reuse share and, on TLS servers, handshake duration, failures by error
 * code and session reuse share. Saturation above `saturationWarn` /
 * `saturationCritical` raises the `connections` signal (label `server`)
 * like every other signal. Connections accepted before the call are not
 * counted. Calling it again for the same server returns the same handle.
 * Invalid options throw an InferSignalConfigError naming the field.
 */
export function instrumentServer(
  monitor: Monitor,
  server: HttpServer,
  options: InstrumentServerOptions = {},
): ServerInstrumentation {
  if (typeof monitor?.register !== 'function')
    throw new InferSignalConfigError('monitor', 'must be a monitor from createMonitor()');
  if (typeof server?.on !== 'function' || typeof server.address !== 'function' || typeof server.off !== 'function') {
    throw new InferSignalConfigError('server', 'must be an http.Server or https.Server');
  }
  checkOptionKeys(options, OPTION_KEYS);
  const existing = trackers.get(server);
  if (existing) return existing;
  const name = fieldOrDefault(
    'options.name',
    options.name,
    { type: 'string', maxLength: 128 },
    server instanceof TlsServer ? 'https' : 'http',
  );
  if (name.length > 64)
    throw new InferSignalConfigError('options.name', `must be at most 64 characters, got ${describeValue(name)}`);
  const signal = signalOf(monitor);
  if (signal.byName.has(name))
    throw new InferSignalConfigError(
      'options.name',
      `"${name}" already names another instrumented server of this monitor; pass a distinct name`,
    );
  if (signal.byName.size >= MAX_SERVERS)
    throw new InferSignalConfigError('server', `more than ${MAX_SERVERS} instrumented servers`);
  const tracker = new ServerTracker(signal, server, name, options);
  signal.byName.set(name, tracker);
  trackers.set(server, tracker);
  return tracker;
}
