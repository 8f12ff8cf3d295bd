/**
 * OTLP exporters for the chosen protocol, behind the failure guard.
 */
import { OTLPMetricExporter as GrpcMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { PeriodicExportingMetricReader, type MetricProducer } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { guardMetricExporter, guardSpanExporter, type ExportFailures } from './export-guard';
import type { ResolvedOtlp } from './options';

type GrpcConfig = NonNullable<ConstructorParameters<typeof GrpcMetricExporter>[0]>;

/**
 * The gRPC exporters take headers as grpc-js `Metadata`. They only ever
 * `clone()` it and read `getMap()` (merging it over the env metadata), so a
 * two-method stand-in avoids a direct dependency on `@grpc/grpc-js`.
 */
function grpcMetadata(headers: Record<string, string>): GrpcConfig['metadata'] {
  const map = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const metadata = { clone: () => metadata, getMap: () => map };
  return metadata as unknown as GrpcConfig['metadata'];
}

export function otlpMetricReader(
  config: ResolvedOtlp,
  failures: ExportFailures,
  cardinalityLimit: number,
  metricProducers: MetricProducer[] | undefined,
): PeriodicExportingMetricReader {
  const exporter =
    config.protocol === 'grpc'
      ? new GrpcMetricExporter({
          url: config.metricsUrl,
          metadata: grpcMetadata(config.headers),
          timeoutMillis: config.timeoutMs,
        })
      : new ProtoMetricExporter({ url: config.metricsUrl, headers: config.headers, timeoutMillis: config.timeoutMs });
  return new PeriodicExportingMetricReader({
    exporter: guardMetricExporter(exporter, failures),
    exportIntervalMillis: config.intervalMs,
    exportTimeoutMillis: config.timeoutMs,
    cardinalityLimits: { default: cardinalityLimit },
    metricProducers,
  });
}

export function otlpSpanProcessor(config: ResolvedOtlp, failures: ExportFailures): SpanProcessor {
  const exporter =
    config.protocol === 'grpc'
      ? new GrpcTraceExporter({
          url: config.tracesUrl,
          metadata: grpcMetadata(config.headers),
          timeoutMillis: config.timeoutMs,
        })
      : new ProtoTraceExporter({ url: config.tracesUrl, headers: config.headers, timeoutMillis: config.timeoutMs });
  return new BatchSpanProcessor(guardSpanExporter(exporter, failures), {
    // Bounded: past 2048 waiting spans new ones are dropped, not buffered.
    maxQueueSize: 2048,
    exportTimeoutMillis: config.timeoutMs,
  });
}
