/**
 * `start()`: the OTel SDK (metrics, and traces when exported), Prometheus
 * and OTLP exporters, inference Views, the OTel globals, and a monitor
 * recording through them — in one call.
 *
 * Built on sdk-metrics + sdk-trace rather than sdk-node: the app gets
 * exactly these readers and processors and no auto-instrumentation it did
 * not ask for. An app that already runs NodeSDK uses
 * `InferSignalInstrumentation` instead.
 */
import { ATTR, createMonitor, InferSignalConfigError, METRICS, type Monitor } from '@infersignal/core';
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
  type Resource,
} from '@opentelemetry/resources';
import { MeterProvider, type IMetricReader, type MetricProducer } from '@opentelemetry/sdk-metrics';
import { TracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { ExportFailures, type ExportSignal } from './export-guard';
import { isInstalled, missingPeerMessage, OTLP_PACKAGES } from './optional-peer';
import { resolveStartOptions, type ResolvedOtlp, type ResolvedPrometheus, type ResolvedStart } from './options';
import { otlpMetricReader, otlpSpanProcessor } from './otlp';
import { sdkMetricProducer, type TemporalitySource } from './producer';
import { PrometheusReader, PrometheusServer, prometheusTemporality } from './prometheus-reader';
import { PrometheusThread } from './prometheus-thread';
import type { InferSignal, MetricsHandler, PrometheusEndpoint, StartLogger, StartOptions } from './types';
import { SCOPE } from './version';
import { inferenceViews } from './views';

function buildResource(serviceName: string): Resource {
  // Defaults < OTEL_RESOURCE_ATTRIBUTES < the resolved service name.
  return defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ 'service.name': serviceName }));
}

/**
 * The OTel globals are first come, first served; a second SDK's registration fails with a diag message only.
 * No context manager unless asked for: InferSignal's spans are made when a request ends, their parent taken
 * from the context captured at arrival or the request's `traceparent`, so they need none, and on Node 20 and
 * 22 one costs every async resource an async hook.
 */
function registerGlobals(
  meterProvider: MeterProvider,
  tracerProvider: TracerProvider | undefined,
  withContextManager: boolean,
  logger: StartLogger,
): () => void {
  const undo: Array<() => void> = [];
  const refused: string[] = [];
  if (metrics.setGlobalMeterProvider(meterProvider)) undo.push(() => metrics.disable());
  else refused.push('MeterProvider');
  if (withContextManager) {
    const contextManager = new AsyncLocalStorageContextManager().enable();
    if (context.setGlobalContextManager(contextManager)) undo.push(() => context.disable());
    else {
      contextManager.disable();
      refused.push('ContextManager');
    }
  }
  if (tracerProvider) {
    if (trace.setGlobalTracerProvider(tracerProvider)) undo.push(() => trace.disable());
    else refused.push('TracerProvider');
    const propagator = new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
    });
    if (propagation.setGlobalPropagator(propagator)) undo.push(() => propagation.disable());
    else refused.push('propagator');
  }
  if (refused.length > 0) {
    logger.warn(
      `infersignal: a global OTel ${refused.join(', ')} was already registered, so start() left it in place; ` +
        'InferSignal still records through its own providers, but other libraries keep using the existing ones',
    );
  }
  return () => {
    for (const fn of undo.reverse()) fn();
  };
}

function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    work.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });
}

/**
 * Drops an OTLP signal whose exporter package is missing: an error naming
 * the package when `otlp` was asked for explicitly, one warning when only the
 * environment asked for it (an app must not fail to boot over a variable).
 */
function checkOtlpPackages(otlp: ResolvedOtlp | undefined, logger: StartLogger): ResolvedOtlp | undefined {
  if (!otlp) return undefined;
  const checked = { ...otlp };
  for (const signal of ['metrics', 'traces'] as const) {
    const target = checked[signal];
    if (!target) continue;
    const name = OTLP_PACKAGES[signal][target.protocol];
    if (isInstalled(name)) continue;
    const message = missingPeerMessage(name, `OTLP ${signal} export (${target.protocol})`);
    if (otlp.explicit) throw new InferSignalConfigError('otlp', message);
    logger.warn(`infersignal: ${message}; ${signal} are not exported over OTLP`);
    checked[signal] = undefined;
  }
  return checked.metrics || checked.traces ? checked : undefined;
}

type ClosableEndpoint = PrometheusEndpoint & { close(): Promise<void> };

/**
 * The endpoint on its own port: from a worker thread (`prometheus.thread`,
 * the default), or from the main thread where asked or where no worker can
 * start.
 */
function prometheusServer(
  reader: PrometheusReader,
  config: ResolvedPrometheus,
  monitor: Monitor,
  logger: StartLogger,
): ClosableEndpoint {
  if (config.thread === 'worker') {
    try {
      return new PrometheusThread(reader, config, monitor, logger);
    } catch (error) {
      logger.warn(
        `infersignal: the Prometheus endpoint's worker thread could not start (${error instanceof Error ? error.message : String(error)}); it is served from the main thread`,
      );
    }
  }
  return new PrometheusServer(reader, config, logger);
}

/**
 * Starts telemetry and returns the monitor. Options are validated first;
 * a bad option throws an `InferSignalConfigError` naming it, before anything
 * is started.
 */
export function start(options: StartOptions = {}): InferSignal {
  const resolved: ResolvedStart = resolveStartOptions(options);
  const logger: StartLogger = options.logger ?? console;
  const config = { ...resolved, otlp: checkOtlpPackages(resolved.otlp, logger) };
  if (config.disabled)
    logger.warn(
      'infersignal: OTEL_SDK_DISABLED=true: nothing is exported and no OTel global is registered; the monitor still runs its detectors and alerts',
    );
  const failures = new ExportFailures(logger, {
    metrics: config.otlp?.metrics?.url ?? '',
    traces: config.otlp?.traces?.url ?? '',
  });
  const resource = buildResource(config.serviceName);

  // Producer mode (the default): requests update core's own aggregates and
  // every reader pulls them at collection time, each in its own temporality.
  // Readers exist before the monitor, so the producers read it once it is made.
  // Readers passed in by the application were built without the producer,
  // so with them the default falls back to the API path.
  const exportMode = options.exportMode ?? (options.metricReaders?.length ? 'api' : 'producer');
  const box: { monitor?: Monitor } = {};
  const producersFor = (reader: TemporalitySource, series = false): MetricProducer[] | undefined =>
    exportMode === 'producer'
      ? [
          sdkMetricProducer(() => box.monitor?.metricProducer, reader, undefined, series),
          ...(options.metricProducers ?? []),
        ]
      : options.metricProducers;
  // The Prometheus writer reads core's series from their copy (cumulative, as Prometheus wants them), no data points.
  const prometheusReader = config.prometheus
    ? new PrometheusReader(
        config.cardinalityLimit,
        producersFor({ selectAggregationTemporality: prometheusTemporality }, true),
        config.prometheus.withoutScopeInfo,
      )
    : undefined;
  const readers: IMetricReader[] = [...(options.metricReaders ?? [])];
  if (prometheusReader) readers.push(prometheusReader);
  if (config.otlp?.metrics)
    readers.push(otlpMetricReader(config.otlp, config.otlp.metrics, failures, config.cardinalityLimit, producersFor));
  const meterProvider = new MeterProvider({ resource, views: inferenceViews(config.cardinalityLimit), readers });

  let tracerProvider: TracerProvider | undefined;
  if (config.traces) {
    const spanProcessors: SpanProcessor[] = [...(options.spanProcessors ?? [])];
    if (config.otlp?.traces) spanProcessors.push(otlpSpanProcessor(config.otlp.traces, failures));
    tracerProvider = new TracerProvider({ resource, spanProcessors });
  }

  let monitor: Monitor;
  try {
    monitor = createMonitor({
      serviceName: config.serviceName,
      meterProvider,
      tracerProvider,
      // Which requests get a span (core validates the details, naming `traces.<field>`).
      traces: config.traces ? (options.traces ?? true) : false,
      thresholds: options.thresholds,
      onAlert: options.onAlert,
      maxModels: options.maxModels,
      maxQueues: options.maxQueues,
      detectorIntervalMs: options.detectorIntervalMs,
      clock: options.clock,
      logger: options.logger,
      exportMode,
      eventLoop: options.eventLoop,
      heap: options.heap,
      runtimeMetrics: config.runtimeMetrics,
      optInMetrics: options.optInMetrics,
    });
    box.monitor = monitor;
  } catch (err) {
    // Nothing may outlive a failed start: the periodic reader already armed its timer.
    void meterProvider.shutdown().catch(() => {});
    void tracerProvider?.shutdown().catch(() => {});
    throw err;
  }

  if (config.otlp) {
    meterProvider
      .getMeter(SCOPE.name, SCOPE.version)
      .createObservableCounter(METRICS.exportDropped.name, {
        unit: METRICS.exportDropped.unit,
        description: METRICS.exportDropped.description,
      })
      .addCallback((result) => {
        for (const signal of ['metrics', 'traces'] as ExportSignal[]) {
          result.observe(failures.dropped[signal], { [ATTR.exportSignal]: signal });
        }
      });
  }

  let metricsHandler: MetricsHandler | undefined;
  let server: ClosableEndpoint | undefined;
  if (prometheusReader && config.prometheus) {
    if (config.prometheus.mount) metricsHandler = prometheusReader.handler;
    else server = prometheusServer(prometheusReader, config.prometheus, monitor, logger);
  }

  const unregister = config.registerGlobals
    ? registerGlobals(meterProvider, tracerProvider, config.contextManager, logger)
    : () => {};

  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      // The monitor's pending webhooks and the final export run side by side,
      // both bounded by the shutdown timeout (the monitor aborts its deliveries then).
      const flush = Promise.allSettled([
        monitor.close({ timeoutMs: config.shutdownTimeoutMs }),
        meterProvider.shutdown(),
        tracerProvider?.shutdown(),
      ]);
      // A black-holed collector would hold the final export for its own
      // timeout and retries; the app's shutdown waits for one timeout at most.
      await settleWithin(flush, config.shutdownTimeoutMs);
      await server?.close();
      unregister();
    })();
    return stopping;
  };

  return {
    monitor,
    meterProvider,
    tracerProvider,
    metricsHandler,
    prometheus: server,
    exportStats: () => ({ metricsDropped: failures.dropped.metrics, tracesDropped: failures.dropped.traces }),
    shutdown,
  };
}
