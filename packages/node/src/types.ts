import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Monitor, MonitorOptions } from '@infersignal/core';
import type { MeterProvider, MetricProducer, MetricReader } from '@opentelemetry/sdk-metrics';
import type { SpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

export type OtlpProtocol = 'http/protobuf' | 'grpc';
/** The OTLP exporters' temporality preference (`OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`). */
export type OtlpTemporality = 'cumulative' | 'delta' | 'lowmemory';

interface PrometheusOptions {
  /** Interface to bind. Default `127.0.0.1` (or `OTEL_EXPORTER_PROMETHEUS_HOST`); set `0.0.0.0` deliberately to expose it. */
  host?: string;
  /** Port (default 9464 or `OTEL_EXPORTER_PROMETHEUS_PORT`); 0: the OS picks a free one, `prometheus.ready` tells which. */
  port?: number;
  /** Path of the scrape endpoint (default `/metrics`). */
  path?: string;
  /**
   * Serve `/metrics` from the app's own server instead of a second port:
   * no server is started and `start()` returns `metricsHandler`.
   */
  mount?: boolean;
  /**
   * Leave the `otel_scope_name` / `otel_scope_version` labels off every
   * series (default true). The OpenTelemetry Prometheus exporter spec adds
   * them unless `without_scope_info` is set, and allows that setting. They
   * tell which library wrote a series, which no rule or panel asks, and
   * they were ~27 % of a scrape's bytes: set false to have them. Without
   * them a family two scopes write is still exported once.
   */
  withoutScopeInfo?: boolean;
  /**
   * Where the endpoint on its own port runs (default `'worker'`): a worker
   * thread answers scrapes and `/healthz/ready` while the main thread is
   * busy or blocked, the queue gauges read live from shared memory then;
   * `'main'` serves it from the main thread. Ignored with `mount`.
   */
  thread?: 'worker' | 'main';
  /**
   * With the worker thread: how long (ms) a scrape waits for the main
   * thread's exposition before the worker answers from the last one, the
   * queue gauges read live (default 40). Longer: counters fresher on a busy
   * server; shorter: answers faster while it is busy.
   */
  mainWaitMs?: number;
  /**
   * With the worker thread: a scrape within this many ms of the last
   * collection, with nothing recorded since (no request, no record into
   * InferSignal's counters and histograms, no alert),
   * is answered from that collection without waking the main thread, the
   * queue gauges read live (default 1000). Counters and histograms are then
   * exact; other gauges at most this old. 0: every scrape collects. Only
   * with the producer export, and while InferSignal's are the only series.
   */
  reuseMs?: number;
}

interface OtlpOptions {
  /**
   * Base URL of the collector, for both signals (default: `OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT` as given,
   * else `OTEL_EXPORTER_OTLP_ENDPOINT`, else localhost:4318 / :4317).
   */
  endpoint?: string;
  /** Default `OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf`. */
  protocol?: OtlpProtocol;
  /** Sent with every export (merged over `OTEL_EXPORTER_OTLP_HEADERS` and `…_<SIGNAL>_HEADERS`). */
  headers?: Record<string, string>;
  /** Metric export period (default `OTEL_METRIC_EXPORT_INTERVAL`, else 15 000 ms). */
  intervalMs?: number;
  /** Timeout of one export, and the bound on `shutdown()` (default the `OTEL_*_TIMEOUT` variables, else 10 000 ms). */
  timeoutMs?: number;
  /**
   * Temporality of the exported metrics (default `OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`,
   * else cumulative); InferSignal's producer follows it.
   */
  temporality?: OtlpTemporality;
}

/** Monitor options `start()` passes through to core's `createMonitor`. */
export type PassThroughMonitorOptions = Pick<
  MonitorOptions,
  | 'thresholds'
  | 'onAlert'
  | 'maxModels'
  | 'maxQueues'
  | 'detectorIntervalMs'
  | 'clock'
  | 'logger'
  | 'exportMode'
  | 'eventLoop'
  | 'heap'
  | 'runtimeMetrics'
  | 'optInMetrics'
>;

export interface StartOptions extends PassThroughMonitorOptions {
  /** `service.name` of the resource (default `OTEL_SERVICE_NAME`, else `unknown_service:node`). */
  serviceName?: string;
  /**
   * Prometheus scrape endpoint (on by default, loopback only; off when `OTEL_METRICS_EXPORTER` is set without
   * `prometheus`); `false` turns it off.
   */
  prometheus?: PrometheusOptions | false;
  /**
   * OTLP export; on when given, when `OTEL_METRICS_EXPORTER` / `OTEL_TRACES_EXPORTER` name `otlp`, or (with
   * those unset) when an `OTEL_EXPORTER_OTLP_*ENDPOINT` is set; `false` turns it off. Needs the exporter
   * package of its protocol (`@opentelemetry/exporter-metrics-otlp-proto`, …; optional peers).
   */
  otlp?: OtlpOptions | false;
  /**
   * Create and export spans (default: on when OTLP is on or span processors are given). On, `true` is
   * `'outliers'`: a request span for each slow, failed, cancelled or shed request and 1 % of the rest;
   * `'all'` one per request; an object tunes it (core's `RequestTraceOptions`).
   */
  traces?: MonitorOptions['traces'];
  /** Distinct attribute sets kept per instrument before new ones fold into the overflow series (default 2000). */
  cardinalityLimit?: number;
  /** Register the providers and the propagators as the OTel globals (default true). */
  registerGlobals?: boolean;
  /**
   * Also register an AsyncLocalStorage context manager as the global one (default false). InferSignal's spans
   * need none: each is made when its request ends, its parent read from the request's `traceparent`. Turn it on
   * when the app makes spans of its own through start()'s tracer provider and wants them nested; on Node 20 and
   * 22 it costs every async resource an async hook (packages/node/README.md).
   */
  contextManager?: boolean;
  /** Extra readers (e.g. an in-memory reader in tests) added to the MeterProvider. */
  metricReaders?: MetricReader[];
  /** Extra metric sources read at collection time by every reader (e.g. an aggregate-reading producer). */
  metricProducers?: MetricProducer[];
  /** Extra span processors (e.g. an in-memory exporter in tests). */
  spanProcessors?: SpanProcessor[];
  /** Where start-up errors, ignored `OTEL_*` values and rate-limited export warnings go (default `console`). */
  logger?: StartLogger;
}

export interface StartLogger {
  warn(message: string): void;
  error?(message: string): void;
}

export interface PrometheusAddress {
  host: string;
  port: number;
  /** Full scrape URL, e.g. `http://127.0.0.1:9464/metrics`. */
  url: string;
}

export interface PrometheusEndpoint {
  /** Resolves once the server listens (its address) or failed to (null, after one logged error). Never rejects. */
  readonly ready: Promise<PrometheusAddress | null>;
  /** The bound address, null before `ready` or after a failure. */
  readonly address: PrometheusAddress | null;
}

export type MetricsHandler = (req: IncomingMessage, res: ServerResponse) => void;

interface ExportStats {
  /** Metric exports that failed (collector down, timed out, rejected). */
  metricsDropped: number;
  /** Span export batches that failed. */
  tracesDropped: number;
}

export interface InferSignal {
  readonly monitor: Monitor;
  readonly meterProvider: MeterProvider;
  /** Undefined when traces are off. */
  readonly tracerProvider: TracerProvider | undefined;
  /** Present when `prometheus.mount` is set: mount it on the app's `/metrics` route. */
  readonly metricsHandler: MetricsHandler | undefined;
  /** Present when the Prometheus server is started. */
  readonly prometheus: PrometheusEndpoint | undefined;
  exportStats(): ExportStats;
  /**
   * Closes the monitor, flushes the last export and stops the server.
   * Resolves within the OTLP export timeout even when the collector is down; never rejects.
   */
  shutdown(): Promise<void>;
}
