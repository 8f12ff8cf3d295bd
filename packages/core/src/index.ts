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
