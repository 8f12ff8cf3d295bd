export * from './types';
export { METRICS, ATTR, SPANS, BUCKETS, HISTOGRAM_BUCKETS, prometheusName, prometheusLabel } from './names';
export type { InstrumentSpec, InstrumentType, MetricKey } from './names';
export { DEFAULT_THRESHOLDS, InferSignalConfigError, resolveThresholds } from './config';
export type { Thresholds, ThresholdsInput, QueueThresholds, ModelLoadThresholds, StreamThresholds, DeviceMemoryThresholds, GlitchThresholds, AnomalyThresholds } from './config';
