/**
 * Span attribute keys this package adds to the load and request spans.
 * They live here rather than in core's names file because they are
 * per-runtime details, never metric attributes, so they cannot grow a
 * metric's cardinality.
 */
export const TRANSFORMERS_ATTR = {
  /** The runtime (`transformers.js`). */
  runtime: 'infersignal.model.runtime',
  /** The pipeline's task (`feature-extraction`, `text-generation` …). */
  task: 'infersignal.transformers.task',
  /** Device the ONNX sessions resolved to, comma-separated per session when they differ. */
  device: 'infersignal.transformers.device',
  /** Data type the ONNX sessions resolved to, comma-separated per session when they differ. */
  dtype: 'infersignal.transformers.dtype',
  /** Request span: rows of the call's tokenized input. */
  batchSize: 'infersignal.batch.size',
  /** OTel GenAI semconv, request span: tokens of the call's input, padding excluded. */
  inputTokens: 'gen_ai.usage.input_tokens',
  /** OTel GenAI semconv, request span: tokens generated, summed over the batch's rows. */
  outputTokens: 'gen_ai.usage.output_tokens',
} as const;
