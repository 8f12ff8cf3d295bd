/**
 * Span attribute keys this package adds to the load and request spans.
 * They live here rather than in core's names file because they are
 * per-runtime details, never metric attributes, so they cannot grow a
 * metric's cardinality.
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
