export { createMonitor } from './monitor';
export { QueueFullError, RequestEndedError } from './errors';
export * from './types';
export type { CoreMetricProducerLike as MetricProducer } from './types';
export { METRICS, ATTR, SPANS, BUCKETS, HISTOGRAM_BUCKETS, prometheusName, prometheusLabel } from './names';
export type { InstrumentSpec, InstrumentType, MetricKey } from './names';
export { DEFAULT_THRESHOLDS, InferSignalConfigError, resolveThresholds } from './config';
export type {
  Thresholds,
  ThresholdsInput,
  ConnectionThresholds,
  CapacityThresholds,
  EventLoopThresholds,
  QueueThresholds,
  ModelLoadThresholds,
  StreamThresholds,
  DeviceMemoryThresholds,
  GlitchThresholds,
  AnomalyThresholds,
} from './config';
export { SlidingWindow } from './detectors/sliding-window';
export { ZScoreDetector } from './detectors/zscore';
export { P99GlitchDetector } from './detectors/p99-glitch';
export { ThresholdDetector, worstLevel } from './detectors/threshold';
export { DriftDetector, linearFit } from './detectors/drift';
export type { LinearFit } from './detectors/drift';
export type { ThresholdLevels } from './detectors/threshold';
export { FixedHistogram } from './aggregates/histogram';
export { HotSwap, type HotSwapOptions } from './model-swap';
export { slackBody } from './alerts/webhook';
export { instrumentServer } from './signals/connections';
export type { InstrumentServerOptions, ServerInstrumentation, InstrumentableServer } from './signals/connections';
// The HTTP request lifecycle shared by the Express and Fastify adapters (outcome decided once, auto-start at the
// response head, SSE, shedding, readiness); each adapter keeps only its framework's glue.
export { createSseStream } from './http/sse';
export type { SseEvent, SseOptions, SseStream } from './http/sse';
export { trackedRequestOf } from './http/request';
export type { HttpReplyOwner, HttpRequestSignal, TrackedHttpRequest } from './http/request';
export { HTTP_SHED_BODY, createHttpTracking, validateHttpTrackingOptions } from './http/tracking';
export type { HttpTracking, HttpTrackingOptions } from './http/tracking';
export { readinessAnswer } from './http/readiness';
export type { ReadinessAnswer } from './http/readiness';
