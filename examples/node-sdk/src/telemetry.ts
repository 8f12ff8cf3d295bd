/**
 * The recipe: InferSignal in an app that already runs the OpenTelemetry
 * NodeSDK with its own instrumentations and exporter (packages/node/README.md,
 * "Your own NodeSDK"). The same code runs on SDK 2.x (Node 20) and 3.x
 * (Node 22.15+); test/otel-sdk3 runs it on Node 24.
 *
 * Three points: InferSignal is one of NodeSDK's instrumentations, so its
 * monitor works before `sdk.start()`; its `metricProducer` goes on the app's
 * reader (the per-request histograms and counters come out there); and
 * nothing of InferSignal listens anywhere — `/metrics` is the app's own
 * exporter, here served on the app's own port.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { InferSignalInstrumentation, type InferSignalInstrumentationConfig } from '@infersignal/node';

export type Telemetry = ReturnType<typeof startTelemetry>;

export function startTelemetry(serviceName: string, config: InferSignalInstrumentationConfig = {}) {
  // InferSignal first: its monitor (queues, streams, model loads) can be used from here on.
  // runtimeMetrics stays false: instrumentation-runtime-node exports nodejs.eventloop.* and v8js.gc.duration.
  const infersignal = new InferSignalInstrumentation({ serviceName, ...config });

  // The app's own exporter, with InferSignal's producer on it. This one writes names without unit
  // suffixes: generate the rules with `infersignal-rules rules --naming otel-js`.
  const prometheus = new PrometheusExporter({
    preventServerStart: true,
    metricProducers: [infersignal.metricProducer],
  });

  const sdk = new NodeSDK({
    serviceName,
    metricReaders: [prometheus],
    instrumentations: [new HttpInstrumentation(), new RuntimeNodeInstrumentation(), infersignal],
  });
  sdk.start();

  return {
    sdk,
    monitor: infersignal.monitor,
    /** Mount on the app's `/metrics` route. */
    metricsHandler: (req: IncomingMessage, res: ServerResponse) => prometheus.getMetricsRequestHandler(req, res),
  };
}
