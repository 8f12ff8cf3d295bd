/**
 * Span attribute keys this package adds to the load and request spans.
 * Core's names file has no entry for them yet (they are per-runtime
 * details, never metric attributes, so they cannot grow a metric's
 * cardinality); the lead may move them to core's `ATTR`.
 */
export const ONNX_ATTR = {
  /** Bytes of the model file or buffer. */
  fileSize: 'infersignal.model.file.size',
  /** Execution providers asked for, comma-separated (`cuda,cpu`). */
  providersRequested: 'infersignal.model.providers.requested',
  /** Execution providers the session was built with (requested ones that loaded, plus the CPU fallback). */
  providersUsed: 'infersignal.model.providers.used',
  /** Where the model came from: `path`, `buffer` or `loader`. */
  sourceKind: 'infersignal.model.source',
  /** The runtime (`onnxruntime-node`). */
  runtime: 'infersignal.model.runtime',
} as const;
