/**
 * `start()`: the OTel SDK (metrics, and traces when exported), Prometheus
 * and OTLP exporters, inference Views, the OTel globals, and a monitor
 * recording through them — in one call.
 *
 * Built on sdk-metrics + sdk-trace-base rather than sdk-node: the app gets
 * exactly these readers and processors and no auto-instrumentation it did
 * not ask for.
 */
import { ATTR, METRICS, createMonitor, type Monitor } from '@infersignal/core';
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
import { BasicTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ExportFailures, type ExportSignal } from './export-guard';
import { resolveStartOptions, type ResolvedStart } from './options';
import { otlpMetricReader, otlpSpanProcessor } from './otlp';
import { PrometheusReader, PrometheusServer } from './prometheus-reader';
import type { InferSignal, MetricsHandler, StartLogger, StartOptions } from './types';
import { SCOPE } from './version';
import { inferenceViews } from './views';

function buildResource(serviceName: string): Resource {
  // Defaults < OTEL_RESOURCE_ATTRIBUTES < the resolved service name.
  return defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ 'service.name': serviceName }));
}

/** The OTel globals are first come, first served; a second SDK's registration fails with a diag message only. */
function registerGlobals(
  meterProvider: MeterProvider,
  tracerProvider: BasicTracerProvider | undefined,
  logger: StartLogger,
): () => void {
  const undo: Array<() => void> = [];
  const refused: string[] = [];
  if (metrics.setGlobalMeterProvider(meterProvider)) undo.push(() => metrics.disable());
  else refused.push('MeterProvider');
  if (tracerProvider) {
    const contextManager = new AsyncLocalStorageContextManager().enable();
    if (context.setGlobalContextManager(contextManager)) undo.push(() => context.disable());
    else {
      contextManager.disable();
      refused.push('ContextManager');
    }
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
 * Starts telemetry and returns the monitor. Options are validated first;
 * a bad option throws an `InferSignalConfigError` naming it, before anything
 * is started.
 */
export function start(options: StartOptions = {}): InferSignal {
  const config: ResolvedStart = resolveStartOptions(options);
  const logger: StartLogger = options.logger ?? console;
  const failures = new ExportFailures(logger, {
    metrics: config.otlp?.metricsUrl ?? '',
    traces: config.otlp?.tracesUrl ?? '',
  });
  const resource = buildResource(config.serviceName);

  // Producer mode (the default): requests update core's own aggregates and
  // every reader pulls them at collection time. Readers exist before the
  // monitor, so the producer is bound once the monitor is created.
  // Readers passed in by the application were built without the producer,
  // so with them the default falls back to the API path.
  const exportMode = options.exportMode ?? (options.metricReaders?.length ? 'api' : 'producer');
  const box: { monitor?: Monitor } = {};
  const coreProducer: MetricProducer = {
    collect: async (collectOptions) =>
      ((await box.monitor?.metricProducer?.collect(collectOptions)) as
        | Awaited<ReturnType<MetricProducer['collect']>>
        | undefined) ?? {
        resourceMetrics: { resource: undefined as never, scopeMetrics: [] },
        errors: [],
      },
  };
  const producers =
    exportMode === 'producer' ? [coreProducer, ...(options.metricProducers ?? [])] : options.metricProducers;
  const prometheusReader = config.prometheus ? new PrometheusReader(config.cardinalityLimit, producers) : undefined;
  const readers: IMetricReader[] = [...(options.metricReaders ?? [])];
  if (prometheusReader) readers.push(prometheusReader);
  if (config.otlp) readers.push(otlpMetricReader(config.otlp, failures, config.cardinalityLimit, producers));
  const meterProvider = new MeterProvider({ resource, views: inferenceViews(config.cardinalityLimit), readers });

  let tracerProvider: BasicTracerProvider | undefined;
  if (config.traces) {
    const spanProcessors: SpanProcessor[] = [...(options.spanProcessors ?? [])];
    if (config.otlp) spanProcessors.push(otlpSpanProcessor(config.otlp, failures));
    tracerProvider = new BasicTracerProvider({ resource, spanProcessors });
  }

  let monitor: Monitor;
  try {
    monitor = createMonitor({
      serviceName: config.serviceName,
      meterProvider,
      tracerProvider,
      traces: config.traces,
      thresholds: options.thresholds,
      onAlert: options.onAlert,
      maxModels: options.maxModels,
      maxQueues: options.maxQueues,
      detectorIntervalMs: options.detectorIntervalMs,
      clock: options.clock,
      logger: options.logger,
      exportMode,
      eventLoop: options.eventLoop,
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
  let server: PrometheusServer | undefined;
  if (prometheusReader && config.prometheus) {
    if (config.prometheus.mount) metricsHandler = prometheusReader.handler;
    else server = new PrometheusServer(prometheusReader, config.prometheus, logger);
  }

  const unregister = config.registerGlobals ? registerGlobals(meterProvider, tracerProvider, logger) : () => {};

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
