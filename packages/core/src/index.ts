/**
 * `@infersignal/core`: what applications call. Writing an adapter, a
 * runtime wrapper or a signal of your own: `@infersignal/core/signals`.
 */

// The monitor: queues, streams, model loads, device memory, alerts, snapshot, export.
export { createMonitor, isMonitor } from './monitor';
export type {
  AlertEvent,
  AlertListener,
  DeviceMemoryHandle,
  DeviceMemoryOptions,
  GenAiOptions,
  Level,
  Logger,
  Monitor,
  MonitorOptions,
  Outcome,
  QueueOptions,
  QueueTracker,
  RequestTraceOptions,
  SeriesCopy,
  Snapshot,
  StreamHandle,
  StreamOutcome,
  Ticket,
  WebhookOptions,
  WebhookSink,
} from './types';
/** The `@opentelemetry/sdk-metrics` MetricProducer of `monitor.metricProducer` (producer export), matched structurally. */
export type { CoreMetricProducerLike as MetricProducer } from './types';

// What `queue.run()` rejects with, and what invalid configuration throws (naming the dotted field);
// `instanceof` holds across the ESM and CommonJS builds (a `Symbol.for` brand).
export { InferSignalConfigError, QueueFullError, RequestEndedError } from './errors';

// The thresholds: one validated object for the detectors, the generated rules and the docs.
export { DEFAULT_THRESHOLDS, resolveThresholds } from './config';
export type { Thresholds, ThresholdsInput } from './config';

// Every metric, attribute and span name, with units, descriptions, buckets and the Prometheus translation.
export {
  ATTR,
  BUCKETS,
  HISTOGRAM_BUCKETS,
  METRICS,
  SPANS,
  UNKNOWN_MODEL,
  prometheusLabel,
  prometheusName,
} from './names';
export type { InstrumentSpec, MetricKey } from './names';
