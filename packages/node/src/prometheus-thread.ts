/**
 * The Prometheus endpoint served from a worker thread, so that a scrape or
 * a readiness probe is answered while the main thread runs a model, drowns
 * in requests or is blocked. Each scrape asks the main thread for a fresh
 * exposition, as the main-thread server does. If none comes within
 * `prometheus.mainWaitMs`, the worker answers with the last exposition, its live
 * values (queue depth, in flight, occupancy, backpressure, oldest and
 * pending waits) rewritten from the monitor's live board, which the request
 * path keeps in shared memory; later scrapes answer at once until the main
 * thread answers again. A scrape that finds nothing changed since the last
 * exposition (the board's change count: records into core's aggregates and
 * queue updates), within `prometheus.reuseMs` of it, is answered from it
 * without waking the main thread: its counters and histograms are exact,
 * its live values rewritten, its other gauges at most that old. Only under
 * the producer export, and while core's scope is the only one with series
 * (another's records are not counted). `/healthz/ready` on the same port
 * answers from the board alone: 503 at CRITICAL (the last tick's level, or
 * a queue's live backpressure) or while the main thread has not turned for
 * longer than the board's bound.
 */
import { Worker } from 'node:worker_threads';
import { ATTR, METRICS, type Monitor } from '@infersignal/core';
import { releaseSeries, type LiveValues } from './prometheus-exposition';
import type { ResolvedPrometheus } from './options';
import type { PrometheusReader } from './prometheus-reader';
import type { PrometheusAddress, PrometheusEndpoint, StartLogger } from './types';

/** The readiness route on the metrics port. */
const READINESS_PATH = '/healthz/ready';

/** The live value each of core's queue gauges carries (the worker's `liveValue` reads the same codes). */
const LIVE_FIELDS: Record<string, number> = {
  [METRICS.queueWaiting.name]: 0,
  [METRICS.queueInFlight.name]: 1,
  [METRICS.queueOccupancy.name]: 2,
  [METRICS.backpressureLevel.name]: 3,
  [METRICS.queueWaitOldest.name]: 4,
  [METRICS.queueWaitPending.name]: 5,
};

type ToWorker =
  | { type: 'chunk'; chunk: Uint8Array }
  /**
   * The last chunk (none for an empty exposition), the live values' offsets,
   * and the board's change count before the collection (-1: the exposition
   * holds series the count does not cover).
   */
  | { type: 'end'; chunk?: Uint8Array; holes: number[]; changes: number }
  | { type: 'failed'; message: string }
  | { type: 'queue'; name: string; slot: number }
  | { type: 'close' };

type FromWorker =
  | { type: 'listening'; address: PrometheusAddress }
  | { type: 'listen-failed'; message: string }
  | { type: 'collect' }
  | { type: 'closed' };

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class PrometheusThread implements PrometheusEndpoint {
  readonly ready: Promise<PrometheusAddress | null>;
  private bound: PrometheusAddress | null = null;
  private readonly worker: Worker;
  private readonly slots = new Map<string, number>();
  private exited = false;
  private readonly board: Monitor['liveBoard'];

  constructor(
    private readonly reader: PrometheusReader,
    config: ResolvedPrometheus,
    monitor: Monitor,
    logger: StartLogger,
  ) {
    const board = monitor.liveBoard;
    this.board = board;
    for (const [slot, name] of board.queueNames.entries()) this.slots.set(name, slot);
    this.worker = new Worker(WORKER_SOURCE(), {
      eval: true,
      workerData: {
        host: config.host,
        port: config.port,
        path: config.path,
        readinessPath: READINESS_PATH,
        board: board.buffer,
        layout: board.layout,
        names: [...board.queueNames],
        waitMs: config.mainWaitMs,
        // Under the api export core's histograms are the SDK's: their records are not counted.
        reuseMs: monitor.exportMode === 'producer' ? config.reuseMs : 0,
      },
      // Its own stdout would hold the process open on some platforms; it writes nothing anyway.
      stdout: false,
      stderr: false,
    });
    board.onQueue = (name, slot) => {
      this.slots.set(name, slot);
      this.post({ type: 'queue', name, slot });
    };
    this.ready = new Promise((resolve) => {
      const failed = (why: string) => {
        (logger.error ?? logger.warn).call(
          logger,
          `infersignal: the Prometheus endpoint could not listen on ${config.host}:${config.port} (${why}); ` +
            'the app keeps running and metrics are still recorded, but nothing serves them on that port',
        );
        resolve(null);
      };
      // Held until the server listens or fails (a process awaiting `ready` must not exit for want of a
      // handle); from then on the endpoint never keeps the process alive.
      this.worker.on('message', (message: FromWorker) => {
        if (message.type === 'collect') void this.collect();
        else if (message.type === 'listening') {
          this.bound = message.address;
          this.worker.unref();
          resolve(message.address);
        } else if (message.type === 'listen-failed') {
          this.worker.unref();
          failed(message.message);
        }
      });
      this.worker.on('error', (error) => {
        if (this.bound === null) failed(error.message);
        else
          logger.warn(
            `infersignal: the Prometheus endpoint's thread failed (${error.message}); nothing serves metrics`,
          );
      });
      this.worker.on('exit', () => {
        this.exited = true;
        resolve(null);
      });
    });
  }

  get address(): PrometheusAddress | null {
    return this.bound;
  }

  private post(message: ToWorker, transfer?: ArrayBuffer[]): void {
    if (!this.exited) this.worker.postMessage(message, transfer);
  }

  /** One exposition for the worker, chunk by chunk (one per turn of the event loop, as the main-thread server writes them). */
  private async collect(): Promise<void> {
    try {
      // Read before: a record during the collection makes the next scrape collect again.
      let changes = this.board.changes[0];
      const { resourceMetrics } = await this.reader.collect();
      const counted = resourceMetrics.scopeMetrics.every(
        ({ scope, metrics }) =>
          scope.name === this.board.changesCover || metrics.every((m) => m.dataPoints.length === 0),
      );
      if (!counted) changes = -1;
      const live: LiveValues = {
        field: (name) => LIVE_FIELDS[name],
        slot: (attributes) => this.slots.get(attributes[ATTR.queue] as string),
        holes: [],
      };
      try {
        const chunks = this.reader.chunks(resourceMetrics, live);
        for (let next = chunks.next(); !next.done; ) {
          const chunk = next.value;
          // A compact copy, handed over (Buffer's own slice() is a view): the chunk's buffer goes back to the pool.
          const copy = Uint8Array.prototype.slice.call(chunk);
          this.reader.release(chunk);
          next = chunks.next();
          const transfer = [copy.buffer as ArrayBuffer];
          // A small exposition (one chunk) is one message, made in the collection's turn; a large one a chunk per turn.
          if (next.done) {
            this.post({ type: 'end', chunk: copy, holes: live.holes, changes }, transfer);
            return;
          }
          this.post({ type: 'chunk', chunk: copy }, transfer);
          await nextTurn();
        }
      } finally {
        // Written or abandoned, the series copies are read no more: core may reuse their arrays.
        releaseSeries(resourceMetrics);
      }
      this.post({ type: 'end', holes: live.holes, changes });
    } catch (error) {
      this.post({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    }
  }

  /** Stops listening, drops idle keep-alive connections, ends the thread. */
  close(): Promise<void> {
    if (this.exited) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => void this.worker.terminate(), 1000);
      timer.unref();
      this.worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.worker.on('message', (message: FromWorker) => {
        if (message.type === 'closed') void this.worker.terminate();
      });
      // An app awaiting shutdown() with nothing else to do must not exit before the thread has.
      this.worker.ref();
      this.post({ type: 'close' });
    });
  }
}

/**
 * The worker's code, run from its source text (no file to resolve, whatever
 * bundles the app): self-contained, its modules from the `require` it is
 * given (a parameter, which a bundler leaves alone, where it rewrites a free
 * `require`). A transpiler that keeps function names (esbuild's keepNames,
 * as tsx runs it) wraps inner functions in a `__name` helper that lives
 * outside this function: the source defines one that does nothing.
 */
const WORKER_SOURCE = () => `var __name = (target) => target;\n(${workerMain.toString()})(require);`;

function workerMain(require: NodeJS.Require): void {
  const { parentPort, workerData } = require('node:worker_threads') as typeof import('node:worker_threads');
  const { createServer } = require('node:http') as typeof import('node:http');
  const { performance } = require('node:perf_hooks') as typeof import('node:perf_hooks');
  const port = parentPort!;
  const { host, path, readinessPath, layout, waitMs, reuseMs } = workerData;
  const H = layout.header;
  const Q = layout.queue;
  const cells = new Float64Array(workerData.board);
  const names: string[] = workerData.names;
  const LEVELS = ['ok', 'warn', 'critical'];
  const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
  const epoch = () => performance.timeOrigin + performance.now();

  type Waiter = { res: import('node:http').ServerResponse; head: boolean; timer?: NodeJS.Timeout };
  /** The last complete exposition, the offsets of its live values, and the change count it was collected at. */
  let latest: { body: Buffer; holes: number[]; at: number; changes: number } | undefined;
  /** The collection asked of the main thread and not answered yet. */
  let pending: { since: number; waiters: Set<Waiter>; chunks: Buffer[] } | undefined;

  const cell = (slot: number, field: number) => cells[H.headerCells + slot * Q.cells + field];
  /** The monitor's clock now, from the heartbeat (NaN before the first). */
  const monitorNow = () => cells[H.beatClock] + (epoch() - cells[H.beatEpoch]);

  function liveValue(slot: number, field: number, now: number): number {
    const waiting = cell(slot, Q.waiting);
    const inFlight = cell(slot, Q.inFlight);
    const stamped = cell(slot, Q.stamped);
    const since = now - cell(slot, Q.origin);
    switch (field) {
      case 0:
        return waiting;
      case 1:
        return inFlight;
      case 2:
        return (waiting + inFlight) / cell(slot, Q.capacity);
      case 3:
        return cell(slot, Q.level);
      case 4:
        return stamped > 0 ? Math.max(0, since - cell(slot, Q.oldest)) / 1000 : 0;
      case 5:
        return stamped > 0 ? Math.max(0, stamped * since - cell(slot, Q.arrivals)) / 1000 : 0;
      default:
        return Number.NaN;
    }
  }

  const text = (value: number) =>
    value === Number.POSITIVE_INFINITY ? '+Inf' : value === Number.NEGATIVE_INFINITY ? '-Inf' : String(value);

  /** The live values of the last exposition's holes as they are now (NaN: keep the exposition's own). */
  function liveValues(): number[] {
    const { holes } = latest!;
    const now = monitorNow();
    const values: number[] = [];
    for (let i = 0; i < holes.length; i += 4) values.push(liveValue(holes[i + 2], holes[i + 3], now));
    return values;
  }

  /** The last exposition with `values` written into its holes, and `tail` after it. */
  function splice(values: number[], tail?: string): Buffer {
    const { body, holes } = latest!;
    const parts: Uint8Array[] = [];
    let from = 0;
    for (let i = 0; i < holes.length; i += 4) {
      const value = values[i / 4];
      if (Number.isNaN(value)) continue;
      parts.push(body.subarray(from, holes[i]), Buffer.from(text(value)));
      from = holes[i + 1];
    }
    if (tail === undefined && from === 0) return body;
    parts.push(body.subarray(from));
    if (tail !== undefined) parts.push(Buffer.from(tail));
    return Buffer.concat(parts);
  }

  /** The last answer made from an exposition and live values, for the next scrape that finds them the same. */
  let reused: { exposition: typeof latest; values: number[]; body: Buffer } | undefined;

  /** The last exposition, nothing recorded since, with its live values as they are now. */
  function unchanged(): Buffer {
    const values = liveValues();
    const last = reused;
    if (last !== undefined && last.exposition === latest && values.every((v, i) => Object.is(v, last.values[i])))
      return last.body;
    const body = splice(values);
    reused = { exposition: latest, values, body };
    return body;
  }

  /** The last exposition while the main thread is busy: its live values as they are now, and how old the rest is. */
  function fromBoard(): Buffer {
    const { at } = latest!;
    const stale = Math.round(epoch() - at);
    const busy = Math.round(epoch() - (pending?.since ?? at));
    return splice(
      liveValues(),
      `# infersignal: the main thread has not answered for ${busy} ms; queue depth, in flight, occupancy, backpressure and waits are read live, the other series as of ${stale} ms ago\n`,
    );
  }

  function answer(waiter: Waiter, body: Buffer): void {
    const { res, head } = waiter;
    if (res.destroyed) return;
    res.writeHead(200, { 'content-type': CONTENT_TYPE, 'content-length': body.length });
    res.end(head ? undefined : body);
  }

  function scrape(waiter: Waiter): void {
    if (
      pending === undefined &&
      latest !== undefined &&
      latest.changes === cells[H.changes] &&
      epoch() - latest.at < reuseMs
    ) {
      answer(waiter, unchanged());
      return;
    }
    if (pending === undefined) {
      pending = { since: epoch(), waiters: new Set(), chunks: [] };
      port.postMessage({ type: 'collect' });
    }
    const waited = epoch() - pending.since;
    if (latest !== undefined && waited >= waitMs) {
      answer(waiter, fromBoard());
      return;
    }
    const current = pending;
    current.waiters.add(waiter);
    if (latest !== undefined)
      waiter.timer = setTimeout(() => {
        if (current.waiters.delete(waiter)) answer(waiter, fromBoard());
      }, waitMs - waited);
  }

  function readiness(res: import('node:http').ServerResponse, head: boolean): void {
    let level = Number.isNaN(cells[H.level]) ? 0 : cells[H.level];
    const queues: Record<string, unknown> = {};
    for (let slot = 0; slot < cells[H.queues]; slot++) {
      const queueLevel = cell(slot, Q.level);
      level = Math.max(level, queueLevel);
      if (names[slot] !== undefined)
        queues[names[slot]] = {
          waiting: cell(slot, Q.waiting),
          inFlight: cell(slot, Q.inFlight),
          occupancy: liveValue(slot, 2, 0),
          level: LEVELS[queueLevel],
        };
    }
    const sinceBeat = epoch() - cells[H.beatEpoch];
    // No heartbeat yet (or none kept): the main thread's state is unknown, not stuck.
    const stuck = sinceBeat > cells[H.stuckAfterMs];
    const body = JSON.stringify({
      level: LEVELS[level],
      mainThread: { sinceHeartbeatMs: Number.isNaN(sinceBeat) ? null : Math.round(sinceBeat), stuck },
      queues,
    });
    res.statusCode = level >= 2 || stuck ? 503 : 200;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    res.end(head ? undefined : body);
  }

  const server = createServer((req, res) => {
    const at = (req.url ?? '/').split('?', 1)[0];
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) {
      res.statusCode = 405;
      res.end();
    } else if (at === path) scrape({ res, head });
    else if (at === readinessPath) readiness(res, head);
    else {
      res.statusCode = 404;
      res.end();
    }
  });

  port.on('message', (message) => {
    switch (message.type) {
      case 'chunk':
        pending?.chunks.push(Buffer.from(message.chunk.buffer, message.chunk.byteOffset, message.chunk.byteLength));
        break;
      case 'end':
      case 'failed': {
        const done = pending;
        pending = undefined;
        if (done === undefined) break;
        if (message.chunk !== undefined)
          done.chunks.push(Buffer.from(message.chunk.buffer, message.chunk.byteOffset, message.chunk.byteLength));
        if (message.type === 'end')
          latest = {
            body: done.chunks.length === 1 ? done.chunks[0] : Buffer.concat(done.chunks),
            holes: message.holes,
            at: done.since,
            changes: message.changes,
          };
        for (const waiter of done.waiters) {
          clearTimeout(waiter.timer);
          if (message.type === 'end') answer(waiter, latest!.body);
          else if (!waiter.res.destroyed) {
            waiter.res.statusCode = 500;
            waiter.res.setHeader('content-type', 'text/plain; charset=utf-8');
            waiter.res.end(`# infersignal: metrics collection failed: ${message.message}\n`);
          }
        }
        break;
      }
      case 'queue':
        names[message.slot] = message.name;
        break;
      case 'close':
        server.close(() => port.postMessage({ type: 'closed' }));
        server.closeAllConnections();
        break;
    }
  });

  server.once('error', (error: NodeJS.ErrnoException) => {
    const why = error.code === 'EADDRINUSE' ? `port ${workerData.port} is already in use` : error.message;
    port.postMessage({ type: 'listen-failed', message: why });
    port.close();
  });
  server.listen({ host, port: workerData.port }, () => {
    server.removeAllListeners('error');
    // Later socket errors go nowhere near the app.
    server.on('error', () => {});
    const address = server.address() as import('node:net').AddressInfo;
    const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    port.postMessage({
      type: 'listening',
      address: { host: address.address, port: address.port, url: `http://${shown}:${address.port}${path}` },
    });
  });
}
