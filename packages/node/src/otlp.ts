/**
 * OTLP export for the chosen protocol, behind the failure guard. The
 * exporter packages are optional peers (optional-peer.ts): the reader and
 * the span processor are built at once around an exporter that is imported
 * in the background and waited for by the first export.
 */
import {
  AggregationTemporality,
  InstrumentType,
  PeriodicExportingMetricReader,
  type MetricProducer,
  type PushMetricExporter,
} from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { guardMetricExporter, guardSpanExporter, type ExportFailures } from './export-guard';
import type { OtlpTarget, ResolvedOtlp } from './options';
import type { TemporalitySource } from './producer';
import type { OtlpTemporality } from './types';

/**
 * The OTLP exporters' own temporality selectors (exporter-metrics-otlp-http):
 * delta for counters and histograms (and, with `delta`, gauges and
 * observable counters); up-down counters stay cumulative.
 */
function otlpTemporality(preference: OtlpTemporality): (type: InstrumentType) => AggregationTemporality {
  if (preference === 'cumulative') return () => AggregationTemporality.CUMULATIVE;
  const delta =
    preference === 'delta'
      ? new Set<InstrumentType>([
          InstrumentType.COUNTER,
          InstrumentType.OBSERVABLE_COUNTER,
          InstrumentType.HISTOGRAM,
          InstrumentType.GAUGE,
          InstrumentType.OBSERVABLE_GAUGE,
        ])
      : new Set<InstrumentType>([InstrumentType.COUNTER, InstrumentType.HISTOGRAM]);
  return (type) => (delta.has(type) ? AggregationTemporality.DELTA : AggregationTemporality.CUMULATIVE);
}

/** The value the exporters' `temporalityPreference` option takes (their AggregationTemporalityPreference). */
const PREFERENCE = { delta: 0, cumulative: 1, lowmemory: 2 } as const;

/**
 * The gRPC exporters take headers as grpc-js `Metadata`. They only ever
 * `clone()` it and read `getMap()` (merging it over the env metadata), so a
 * two-method stand-in avoids a direct dependency on `@grpc/grpc-js`.
 */
function grpcMetadata(headers: Record<string, string>): unknown {
  const map = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const metadata = { clone: () => metadata, getMap: () => map };
  return metadata;
}

type ExporterClass<T> = new (config: Record<string, unknown>) => T;

async function metricExporter(target: OtlpTarget, temporality: OtlpTemporality): Promise<PushMetricExporter> {
  const common = { url: target.url, timeoutMillis: target.timeoutMs, temporalityPreference: PREFERENCE[temporality] };
  if (target.protocol === 'grpc') {
    const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-grpc');
    const Exporter = OTLPMetricExporter as unknown as ExporterClass<PushMetricExporter>;
    return new Exporter({ ...common, metadata: grpcMetadata(target.headers) });
  }
  const { OTLPMetricExporter } = await import('@opentelemetry/exporter-metrics-otlp-proto');
  const Exporter = OTLPMetricExporter as unknown as ExporterClass<PushMetricExporter>;
  return new Exporter({ ...common, headers: target.headers });
}

async function spanExporter(target: OtlpTarget): Promise<SpanExporter> {
  const common = { url: target.url, timeoutMillis: target.timeoutMs };
  if (target.protocol === 'grpc') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-grpc');
    const Exporter = OTLPTraceExporter as unknown as ExporterClass<SpanExporter>;
    return new Exporter({ ...common, metadata: grpcMetadata(target.headers) });
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  const Exporter = OTLPTraceExporter as unknown as ExporterClass<SpanExporter>;
  return new Exporter({ ...common, headers: target.headers });
}

export function otlpMetricReader(
  config: ResolvedOtlp,
  target: OtlpTarget,
  failures: ExportFailures,
  cardinalityLimit: number,
  metricProducers: (source: TemporalitySource) => MetricProducer[] | undefined,
): PeriodicExportingMetricReader {
  const temporality = otlpTemporality(config.temporality);
  const exporter = guardMetricExporter(metricExporter(target, config.temporality), failures, temporality);
  return new PeriodicExportingMetricReader({
    exporter,
    exportIntervalMillis: config.intervalMs,
    exportTimeoutMillis: target.timeoutMs,
    cardinalityLimits: { default: cardinalityLimit },
    metricProducers: metricProducers(exporter),
  });
}

export function otlpSpanProcessor(target: OtlpTarget, failures: ExportFailures): SpanProcessor {
  return new BatchSpanProcessor({
    exporter: guardSpanExporter(spanExporter(target), failures),
    // Bounded: past 2048 waiting spans new ones are dropped, not buffered.
    maxQueueSize: 2048,
    exportTimeoutMillis: target.timeoutMs,
  });
}
