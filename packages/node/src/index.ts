export { start } from './start';
export { InferSignalInstrumentation } from './instrumentation';
export type { InferSignalInstrumentationConfig } from './instrumentation';
export { sdkMetricProducer } from './producer';
export type { TemporalitySource } from './producer';
export { collectorPrometheusName } from './prometheus-naming';
export type { PrometheusKind } from './prometheus-naming';
export { resolveStartOptions } from './options';
export type {
  StartOptions,
  PrometheusOptions,
  OtlpOptions,
  OtlpProtocol,
  OtlpTemporality,
  PassThroughMonitorOptions,
  StartLogger,
  InferSignal,
  PrometheusEndpoint,
  PrometheusAddress,
  MetricsHandler,
  ExportStats,
} from './types';
export type { ResolvedStart, ResolvedOtlp, ResolvedPrometheus, OtlpTarget } from './options';
