export { start } from './start';
export { collectorPrometheusName } from './prometheus-naming';
export type { PrometheusKind } from './prometheus-naming';
export { resolveStartOptions } from './options';
export type {
  StartOptions,
  PrometheusOptions,
  OtlpOptions,
  OtlpProtocol,
  PassThroughMonitorOptions,
  StartLogger,
  InferSignal,
  PrometheusEndpoint,
  PrometheusAddress,
  MetricsHandler,
  ExportStats,
} from './types';
export type { ResolvedStart, ResolvedOtlp, ResolvedPrometheus } from './options';
