/**
 * The attribute keys InferSignal records and the shape of an instrument's
 * spec: what every signal definition is written with.
 */

export type InstrumentType = 'histogram' | 'counter' | 'updowncounter' | 'gauge';

export interface InstrumentSpec {
  readonly name: string;
  readonly type: InstrumentType;
  readonly unit: string;
  readonly description: string;
  /** Attribute keys the instrument carries. */
  readonly attributes: readonly string[];
  /** Threshold path in the config this instrument feeds (for docs and rules). */
  readonly feeds?: string;
}

export const ATTR = {
  /** OTel GenAI semconv: the model a request targets (`UNKNOWN_MODEL` when nothing names it). */
  model: 'gen_ai.request.model',
  /** OTel GenAI semconv, required on gen_ai.server.*: `chat`, `text_completion`, `embeddings`, … (monitor option `genAi.operationName`). */
  operationName: 'gen_ai.operation.name',
  /** OTel GenAI semconv, required on gen_ai.server.*: who serves the model (monitor option `genAi.providerName`). */
  providerName: 'gen_ai.provider.name',
  queue: 'infersignal.queue.name',
  outcome: 'infersignal.outcome',
  /** Span attribute: seconds between arrival and the start of inference (the metric's value for this request). */
  queueWait: 'infersignal.queue.wait.duration',
  /** Span attribute: why a request's span was kept (slow, failed, cancelled, shed, baseline, all). */
  traceReason: 'infersignal.trace.reason',
  loadKind: 'infersignal.model.load.kind',
  signal: 'infersignal.signal',
  level: 'infersignal.level',
  /** Set only when an operation failed: a low-cardinality class of the failure (see `errorTypeOf` per metric). */
  errorType: 'error.type',
  errorSource: 'infersignal.error.source',
  exportSignal: 'infersignal.export.signal',
  memorySource: 'infersignal.memory.source',
  deviceIndex: 'infersignal.device.index',
  deviceUuid: 'infersignal.device.uuid',
  httpRoute: 'http.route',
  breakerName: 'infersignal.breaker.name',
  breakerTo: 'infersignal.breaker.to',
  breakerResult: 'infersignal.breaker.result',
  /** RPC semconv: `grpc`. */
  rpcSystemName: 'rpc.system.name',
  /** RPC semconv: the fully-qualified method, `pkg.Service/Method` (the older conventions: the method name only). */
  rpcMethod: 'rpc.method',
  /** RPC semconv: the status code's name, `OK`, `CANCELLED`, … */
  rpcResponseStatusCode: 'rpc.response.status_code',
  /** Older RPC conventions (semantic-conventions v1.37), emitted only with OTEL_SEMCONV_STABILITY_OPT_IN=rpc/dup. */
  rpcSystem: 'rpc.system',
  /** Older RPC conventions: the fully-qualified service. */
  rpcService: 'rpc.service',
  /** Older RPC conventions: the status code as an integer. */
  rpcGrpcStatusCode: 'rpc.grpc.status_code',
  /** The name given to an instrumented HTTP(S) server (`instrumentServer`, default `http` / `https`). */
  server: 'infersignal.server.name',
  /** OTel GenAI semconv (as on gen_ai.client.token.usage): `input` (prompt) or `output` tokens. */
  tokenType: 'gen_ai.token.type',
  /** V8JS semconv: the heap space of `v8js.memory.heap.used` (`old_space`, `new_space`, `code_space`, …). */
  heapSpace: 'v8js.heap.space.name',
} as const;

/** The attributes the GenAI conventions require (and `gen_ai.request.model`) on every gen_ai.server.* metric. */
export const GEN_AI_ATTRIBUTES = [ATTR.operationName, ATTR.providerName, ATTR.model] as const;

/** `gen_ai.request.model` of a request nothing named (no adapter `model` option, no model argument). */
export const UNKNOWN_MODEL = '_unknown';
