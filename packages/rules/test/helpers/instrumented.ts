/**
 * A tiny instrumented inference server for the tests, in one of the two
 * ways an app exports InferSignal's metrics:
 * - `start`: `@infersignal/node`'s `start()` (real OTel MeterProvider and
 *   Prometheus exporter with the Collector-style names) on a free loopback
 *   port, and an HTTP API whose `/infer` runs a fixed-time "inference"
 *   through core's queue with concurrency 1, so a few concurrent clients
 *   overload it;
 * - `node-sdk`: the app's own NodeSDK with the stock PrometheusExporter
 *   and instrumentation-runtime-node, InferSignal plugged in — the recipe
 *   app of examples/node-sdk (names without unit suffixes), `/metrics` on
 *   the API's own port.
 * The API server is instrumented with `instrumentServer` (connection
 * capacity `connectionCapacity`), so the connection gauges exist too.
 */
import { createServer, type Server } from 'node:http';
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import type { Monitor, ThresholdsInput } from '@infersignal/core';
import { instrumentServer } from '@infersignal/http';
import { start } from '@infersignal/node';
import { metricNames, type Naming } from '../../src/names';
import type { MetricNames } from '../../src/names';
import { startApp } from '../../../../examples/node-sdk/src/app';

export interface InstrumentedServer {
  readonly monitor: Monitor;
  /** The Prometheus names its scrape uses. */
  readonly naming: Naming;
  readonly names: MetricNames;
  /** `http://127.0.0.1:PORT` of the API. */
  readonly url: string;
  /** `host:port` of the Prometheus exporter. */
  readonly metricsTarget: string;
  readonly metricsUrl: string;
  close(): Promise<void>;
}

export interface InstrumentedServerOptions {
  /** Service time of `/infer`; read per request (the `start` way), so a test may change it to slow a replica down. */
  serviceTimeMs: number;
  /** Queue capacity of the `default` queue. */
  capacity: number;
  /** Detector tick period (default 250 ms; 0: the test calls monitor.tick()). */
  detectorIntervalMs?: number;
  /** Merged over the helper's own thresholds, group by group. */
  thresholds?: ThresholdsInput;
  /** Connections the API server is sized for (instrumentServer's capacity, default 64). */
  connectionCapacity?: number;
  /** How the metrics are exported (default `start`). */
  via?: 'start' | 'node-sdk';
  /** Core's export path with `node-sdk` (the instrumentation's default: producer). */
  exportMode?: 'api' | 'producer';
}

/**
 * The helper's thresholds: the first load sets no baseline (a fixed one, and no floor, make the test's 20 ms
 * load a spike).
 */
function thresholdsOf(options: InstrumentedServerOptions): ThresholdsInput {
  return {
    ...options.thresholds,
    modelLoad: { ...options.thresholds?.modelLoad, baselineSeconds: { llama: 0.001 }, minSpikeSeconds: 0 },
  };
}

export async function startInstrumentedServer(options: InstrumentedServerOptions): Promise<InstrumentedServer> {
  return options.via === 'node-sdk' ? startNodeSdkServer(options) : startWithStart(options);
}

async function startNodeSdkServer(options: InstrumentedServerOptions): Promise<InstrumentedServer> {
  // No trace or log backend here: without these NodeSDK exports both over OTLP to localhost.
  const saved = { traces: process.env.OTEL_TRACES_EXPORTER, logs: process.env.OTEL_LOGS_EXPORTER };
  process.env.OTEL_TRACES_EXPORTER = 'none';
  process.env.OTEL_LOGS_EXPORTER = 'none';
  const restore = () => {
    for (const [key, value] of [
      ['OTEL_TRACES_EXPORTER', saved.traces],
      ['OTEL_LOGS_EXPORTER', saved.logs],
    ] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
  const app = await startApp({
    serviceTimeMs: options.serviceTimeMs,
    capacity: options.capacity,
    connectionCapacity: options.connectionCapacity,
    detectorIntervalMs: options.detectorIntervalMs ?? 250,
    thresholds: thresholdsOf(options),
    exportMode: options.exportMode,
  }).finally(restore);
  const target = app.url.replace(/^http:\/\//, '');
  return {
    monitor: app.monitor,
    naming: 'otel-js',
    names: metricNames('otel-js'),
    url: app.url,
    metricsTarget: target,
    metricsUrl: `${app.url}/metrics`,
    close: async () => {
      await app.close();
      // NodeSDK registers the OTel globals and never removes them.
      metrics.disable();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

async function startWithStart(options: InstrumentedServerOptions): Promise<InstrumentedServer> {
  const signal = start({
    serviceName: 'inference-server',
    prometheus: { host: '127.0.0.1', port: 0 },
    otlp: false,
    traces: false,
    registerGlobals: false,
    detectorIntervalMs: options.detectorIntervalMs ?? 250,
    logger: { warn: () => {} },
    thresholds: thresholdsOf(options),
  });
  const address = await signal.prometheus?.ready;
  if (!address) throw new Error('the Prometheus exporter did not start');
  const queue = signal.monitor.queue('default', { capacity: options.capacity, concurrency: 1 });
  const server: Server = createServer((req, res) => {
    if (req.url === '/infer') {
      queue
        .run(() => new Promise((resolve) => setTimeout(resolve, options.serviceTimeMs)), { model: 'llama' })
        .then(
          () => res.end('ok'),
          () => {
            res.statusCode = 503;
            res.end('busy');
          },
        );
      return;
    }
    res.statusCode = 404;
    res.end();
  });
  instrumentServer(signal.monitor, server, { capacity: options.connectionCapacity ?? 64, name: 'api' });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    monitor: signal.monitor,
    naming: 'collector',
    names: metricNames('collector'),
    url: `http://127.0.0.1:${port}`,
    metricsTarget: `${address.host}:${address.port}`,
    metricsUrl: address.url,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await signal.shutdown();
    },
  };
}
