/**
 * `@infersignal/core`: what applications call. Writing an adapter, a
 * runtime wrapper or a signal of your own: `@infersignal/core/signals`.
 */

// The monitor: queues, streams, model loads, device memory, alerts, snapshot, export.
export { createMonitor } from './monitor';
export type {
  AlertEvent,
  AlertListener,
  DeviceMemoryHandle,
  Level,
  Monitor,
  MonitorOptions,
  Outcome,
  QueueOptions,
  QueueTracker,
  SeriesCopy,
  Snapshot,
  StreamHandle,
  StreamOutcome,
  Ticket,
} from './types';

// What `queue.run()` rejects with, and what invalid configuration throws (naming the dotted field);
// `instanceof` holds across the ESM and CommonJS builds (a `Symbol.for` brand).
export { InferSignalConfigError, QueueFullError, RequestEndedError } from './errors';
// What a runtime wrapper (onnx, tfjs, llama, transformers) throws when a load or reload fails, and for a call
// after release(): one pair for every runtime, `runtime` and `reason` saying which and why.
export { ModelLoadError, ModelReleasedError } from './model-host';
export type { ModelLoadErrorInit } from './model-host';

// The thresholds: one validated object for the detectors, the generated rules and the docs.
export { resolveThresholds } from './config';
export type { Thresholds, ThresholdsInput } from './thresholds';

// Every metric, attribute and span name, with units, descriptions, buckets and the Prometheus translation.
export { ATTR, HISTOGRAM_BUCKETS, METRICS, SPANS, prometheusLabel, prometheusName } from './names';
export type { InstrumentSpec } from './names';
