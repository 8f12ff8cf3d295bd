/**
 * A pull MetricReader that serves the Prometheus text format, on its own
 * loopback server or through a handler the app mounts.
 *
 * Not `PrometheusExporter` itself: its constructor reads `port || 9464`, so
 * port 0 (an OS-chosen port) is impossible; it binds every interface unless told
 * otherwise; a port already in use surfaces only through `diag`; its
 * serializer cannot be swapped for the Collector-style names; and the
 * package pins exact SDK versions (prometheus-exposition.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AggregationTemporality,
  MetricReader,
  type InstrumentType,
  type MetricProducer,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import { gaugeTemporality } from './export-guard';
import { ChunkPool, expositionChunks, releaseSeries, type LiveValues } from './prometheus-exposition';
import { CollectorNames } from './prometheus-naming';
import type { ResolvedPrometheus } from './options';
import type { MetricsHandler, PrometheusAddress, PrometheusEndpoint, StartLogger } from './types';

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Prometheus wants cumulative series; gauges as DELTA so a vanished series is not re-exported stale. */
export const prometheusTemporality = (type: InstrumentType): AggregationTemporality =>
  gaugeTemporality(type) ?? AggregationTemporality.CUMULATIVE;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

function fail(res: ServerResponse, what: string, err: unknown): void {
  const message = `# infersignal: ${what}: ${err instanceof Error ? err.message : String(err)}\n`;
  if (res.headersSent) {
    // Part of the body is out: cut the response off rather than let a truncated one parse as complete.
    res.destroy(err instanceof Error ? err : new Error(message));
    return;
  }
  res.statusCode = 500;
  res.setHeader('content-type', 'text/plain; charset=utf-8');
  res.end(message);
}

/** Resolves when `res` can take more (or is gone). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Streams `chunks` to `res`, from the turn after the collection ended: each
 * chunk is made and written in its own turn of the event loop, and the next
 * waits while the socket's buffer is full. A stopped client stops the
 * serialization.
 */
async function writeExposition(res: ServerResponse, chunks: Generator<Buffer, void>, pool: ChunkPool): Promise<void> {
  try {
    // The collection's last step (core's copy of its series) ran in this turn: the text starts in the next.
    await nextTurn();
    let chunk = chunks.next();
    res.statusCode = 200;
    res.setHeader('content-type', CONTENT_TYPE);
    for (;;) {
      const next = chunks.next();
      if (next.done) {
        if (chunk.done) res.end();
        else {
          const last = chunk.value;
          // A small exposition is this one chunk: its buffer, too, serves the next scrape once sent.
          res.end(last, () => pool.give(last));
        }
        return;
      }
      if (res.destroyed) return;
      if (!chunk.done) {
        const written = chunk.value;
        // The buffer goes back to the pool once the socket is done with it (or the write failed).
        if (!res.write(written, () => pool.give(written)) && !res.destroyed) await drained(res);
      }
      await nextTurn();
      chunk = next;
    }
  } catch (err) {
    fail(res, 'metrics exposition failed', err);
  }
}

export class PrometheusReader extends MetricReader {
  private readonly names = new CollectorNames();
  private readonly pool = new ChunkPool();

  constructor(
    cardinalityLimit: number,
    metricProducers: MetricProducer[] | undefined,
    /** Leave the `otel_scope_*` labels off (`prometheus.withoutScopeInfo`). */
    private readonly withoutScopeInfo = false,
  ) {
    super({
      aggregationTemporalitySelector: prometheusTemporality,
      cardinalitySelector: () => cardinalityLimit,
      metricProducers,
    });
  }

  /**
   * Writes the current exposition to `res`; a failed collection answers 500,
   * never throws. A large exposition is written chunk by chunk, one chunk
   * per turn of the event loop (a small one is one `end()`, as before).
   */
  readonly handler: MetricsHandler = (_req: IncomingMessage, res: ServerResponse) => {
    this.collect().then(
      ({ resourceMetrics }) =>
        writeExposition(
          res,
          expositionChunks(resourceMetrics, (metric) => this.names.of(metric), this.pool, this.withoutScopeInfo),
          this.pool,
          // Written or abandoned, the series copies are read no more: core may reuse their arrays.
        ).finally(() => releaseSeries(resourceMetrics)),
      (err: unknown) => fail(res, 'metrics collection failed', err),
    );
  };

  /** The exposition of a collection in chunks, recording where `live`'s values sit (the worker-thread endpoint). */
  chunks(resourceMetrics: ResourceMetrics, live: LiveValues): Generator<Buffer, void> {
    return expositionChunks(resourceMetrics, (metric) => this.names.of(metric), this.pool, this.withoutScopeInfo, live);
  }

  /** A chunk from `chunks()` is read no more: its buffer may take a later chunk. */
  release(chunk: Buffer): void {
    this.pool.give(chunk);
  }

  protected override async onForceFlush(): Promise<void> {
    // Pull reader: nothing buffered.
  }

  protected override async onShutdown(): Promise<void> {
    // The server (if any) is closed by its owner.
  }
}

/** The loopback scrape server. A failure to listen is logged once and never thrown. */
export class PrometheusServer implements PrometheusEndpoint {
  readonly ready: Promise<PrometheusAddress | null>;
  private bound: PrometheusAddress | null = null;
  private readonly server: Server;

  constructor(reader: PrometheusReader, config: ResolvedPrometheus, logger: StartLogger) {
    this.server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?', 1)[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.statusCode = 405;
        res.end();
      } else if (path === config.path) {
        reader.handler(req, res);
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    // The scrape endpoint must never be what keeps the process alive.
    this.server.unref();
    this.ready = new Promise((resolve) => {
      const onError = (err: NodeJS.ErrnoException) => {
        const why = err.code === 'EADDRINUSE' ? `port ${config.port} is already in use` : err.message;
        const message =
          `infersignal: the Prometheus endpoint could not listen on ${config.host}:${config.port} (${why}); ` +
          'the app keeps running and metrics are still recorded, but nothing serves them on that port';
        (logger.error ?? logger.warn).call(logger, message);
        resolve(null);
      };
      this.server.once('error', onError);
      this.server.listen({ host: config.host, port: config.port }, () => {
        this.server.off('error', onError);
        // Later socket errors go nowhere near the app.
        this.server.on('error', () => {});
        const address = this.server.address() as AddressInfo;
        const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
        this.bound = { host: address.address, port: address.port, url: `http://${host}:${address.port}${config.path}` };
        resolve(this.bound);
      });
    });
  }

  get address(): PrometheusAddress | null {
    return this.bound;
  }

  /** Stops listening and drops idle keep-alive connections (a scraper's would hold close() open). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.server.listening) return resolve();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
