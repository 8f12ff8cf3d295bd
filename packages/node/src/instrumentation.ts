/**
 * InferSignal for an app that already runs the OpenTelemetry NodeSDK:
 * an `Instrumentation` for `new NodeSDK({ instrumentations: [...] })` (or
 * `registerInstrumentations`), matched structurally so this package needs no
 * `@opentelemetry/instrumentation`.
 *
 * The monitor exists from the constructor on, so an app can make its queues
 * at module load. NodeSDK hands its provider to every instrumentation when
 * it starts (`setMeterProvider`), and the monitor makes its OTel instruments
 * again there (`monitor.setMeterProvider`), as an OTel instrumentation does
 * in `_updateMetricInstruments`; made after `sdk.start()`, it binds to the
 * registered provider at once. The per-request histograms and counters come
 * out through `metricProducer`, which goes in the reader's
 * `metricProducers` (the user's exporter, the user's port: nothing here
 * listens anywhere).
 */
import { createMonitor, InferSignalConfigError, type Monitor, type MonitorOptions } from '@infersignal/core';
import {
  createNoopMeter,
  metrics,
  type BatchObservableCallback,
  type Meter,
  type MeterProvider,
  type TracerProvider,
} from '@opentelemetry/api';
import type { MetricProducer } from '@opentelemetry/sdk-metrics';
import { sdkMetricProducer, type TemporalitySource } from './producer';
import type { PassThroughMonitorOptions, StartLogger } from './types';
import { SCOPE } from './version';

export interface InferSignalInstrumentationConfig extends PassThroughMonitorOptions {
  /** The OTel `InstrumentationConfig` flag (default true). */
  enabled?: boolean;
  /** The monitor's service name (alerts, webhooks); the SDK's resource names the service in the exported data. */
  serviceName?: string;
  /**
   * Create `infersignal.request` / `infersignal.model.load` spans through the global tracer provider
   * (default true: `'outliers'`, the slow, failed, cancelled and shed requests and 1 % of the rest; `'all'`).
   */
  traces?: MonitorOptions['traces'];
  /**
   * Export `nodejs.eventloop.*` and `v8js.gc.duration` (default false: an app
   * with its own SDK usually runs `@opentelemetry/instrumentation-runtime-node`,
   * which exports the same names). Set true without it. The event-loop
   * signal samples, judges and alerts either way.
   */
  runtimeMetrics?: boolean;
}

/** Collections of the meter with no read of the producer before the "producer not registered" warning. */
const UNWIRED_AFTER_COLLECTIONS = 3;

export class InferSignalInstrumentation {
  readonly instrumentationName: string = SCOPE.name;
  readonly instrumentationVersion: string = SCOPE.version;
  readonly monitor: Monitor;
  private provider: MeterProvider | undefined;
  private config: InferSignalInstrumentationConfig;
  private readonly logger: StartLogger;
  private producerReads = 0;
  private meterReads = 0;
  private cumulative: MetricProducer | undefined;

  constructor(config: InferSignalInstrumentationConfig = {}) {
    if (typeof config !== 'object' || config === null) throw new InferSignalConfigError('config', 'must be an object');
    const { enabled, runtimeMetrics, ...monitorOptions } = config;
    if (enabled !== undefined && typeof enabled !== 'boolean')
      throw new InferSignalConfigError('enabled', 'must be a boolean');
    this.config = { ...config, enabled: enabled ?? true };
    this.logger = config.logger ?? console;
    const global = metrics.getMeterProvider();
    this.monitor = createMonitor({
      ...monitorOptions,
      // Not the no-op meter itself, though it records nowhere until NodeSDK binds: no "no provider" warning.
      meterProvider: this.reading(global),
      exportMode: config.exportMode ?? 'producer',
      // Through the meter: its collections tell when the producer was left off the reader.
      gaugesOnMeter: true,
      runtimeMetrics: runtimeMetrics ?? false,
    });
    // Made after sdk.start() (or beside a registered provider): bound now; before it, NodeSDK binds at start.
    if (!isNoop(global)) this.provider = global;
  }

  /**
   * Core's histograms and counters, cumulative: add it to the reader,
   * `new PrometheusExporter({ metricProducers: [infersignal.metricProducer] })`.
   * For a reader with a delta preference use `metricProducerFor(exporter)`.
   * Empty in API export mode (everything then goes through the meter).
   */
  get metricProducer(): MetricProducer {
    this.cumulative ??= sdkMetricProducer(
      () => this.monitor.metricProducer,
      undefined,
      () => this.producerReads++,
    );
    return this.cumulative;
  }

  /** A producer for one reader, in the temporality that reader (or its push exporter) selects. */
  metricProducerFor(source: TemporalitySource): MetricProducer {
    if (typeof source?.selectAggregationTemporality !== 'function')
      throw new InferSignalConfigError('metricProducerFor', 'takes a MetricReader or a push exporter');
    return sdkMetricProducer(
      () => this.monitor.metricProducer,
      source,
      () => this.producerReads++,
    );
  }

  /** Called by NodeSDK (before and after it registers its provider); the no-op provider is ignored. */
  setMeterProvider(meterProvider: MeterProvider): void {
    if (meterProvider === this.provider || isNoop(meterProvider)) return;
    if (this.monitor.setMeterProvider(this.reading(meterProvider))) this.provider = meterProvider;
  }

  /** Spans go through the global tracer provider, which the API proxies until the SDK registers one. */
  setTracerProvider(_tracerProvider: TracerProvider): void {}

  /** True once bound to a real MeterProvider. */
  get bound(): boolean {
    return this.provider !== undefined;
  }

  enable(): void {
    this.config = { ...this.config, enabled: true };
  }

  /** Nothing is patched, so there is nothing to undo; stop the monitor with `monitor.close()`. */
  disable(): void {
    this.config = { ...this.config, enabled: false };
  }

  getConfig(): InferSignalInstrumentationConfig {
    return this.config;
  }

  /** Only `enabled` is read after construction: the monitor's options are fixed when it is made. */
  setConfig(config: InferSignalInstrumentationConfig = {}): void {
    this.config = { ...this.config, enabled: config.enabled ?? this.config.enabled };
  }

  /** `provider`, its meters telling `onMeterRead` each time a reader runs a batch callback made on them. */
  private reading(provider: MeterProvider): MeterProvider {
    return {
      getMeter: (name, version, options) => {
        const meter = provider.getMeter(name, version, options);
        const registered = new Map<BatchObservableCallback, BatchObservableCallback>();
        const reading: Meter = {
          createHistogram: (n, o) => meter.createHistogram(n, o),
          createCounter: (n, o) => meter.createCounter(n, o),
          createUpDownCounter: (n, o) => meter.createUpDownCounter(n, o),
          createGauge: (n, o) => meter.createGauge(n, o),
          createObservableGauge: (n, o) => meter.createObservableGauge(n, o),
          createObservableCounter: (n, o) => meter.createObservableCounter(n, o),
          createObservableUpDownCounter: (n, o) => meter.createObservableUpDownCounter(n, o),
          addBatchObservableCallback: (callback, observables) => {
            const read: BatchObservableCallback = (result) => {
              this.onMeterRead();
              return callback(result);
            };
            registered.set(callback, read);
            meter.addBatchObservableCallback(read, observables);
          },
          removeBatchObservableCallback: (callback, observables) => {
            meter.removeBatchObservableCallback(registered.get(callback) ?? callback, observables);
            registered.delete(callback);
          },
        };
        return reading;
      },
    };
  }

  private onMeterRead(): void {
    if (++this.meterReads !== UNWIRED_AFTER_COLLECTIONS) return;
    if (this.monitor.exportMode !== 'producer' || this.producerReads > 0) return;
    try {
      this.logger.warn(
        `infersignal: the SDK collected InferSignal's gauges ${UNWIRED_AFTER_COLLECTIONS} times but never its metricProducer, so the request histograms and counters are not exported. ` +
          'Add it to your reader: new PrometheusExporter({ metricProducers: [infersignal.metricProducer] }) ' +
          "(a delta OTLP reader: metricProducerFor(exporter)), or create the instrumentation with exportMode: 'api'.",
      );
    } catch {
      // A broken logger must not break a collection.
    }
  }
}

/** The API's no-op provider (by name too: its CommonJS and ESM builds each have their own no-op meter). */
function isNoop(provider: MeterProvider): boolean {
  const probe = provider.getMeter(SCOPE.name);
  return probe === createNoopMeter() || probe.constructor?.name === 'NoopMeter';
}
