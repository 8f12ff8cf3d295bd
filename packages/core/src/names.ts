/**
 * Every metric and attribute name InferSignal emits, with its unit and
 * description. docs/metrics.md and the rules generator read these
 * constants, so a name is written once.
 *
 * OpenTelemetry names (dots, UCUM units). The Prometheus exporter and the
 * Collector translate them the same way: dots become underscores, the unit
 * becomes a suffix (`s` → `_seconds`, `By` → `_bytes`), counters get
 * `_total`. `prometheusName()` below applies that translation.
 *
 * Conventions followed: GenAI model-server metrics from OpenTelemetry's
 * semantic-conventions-genai (`gen-ai-metrics.md`, status Development; its
 * stable references pinned to semantic-conventions v1.42.0), RPC from
 * semantic-conventions (`rpc-metrics.md` after the v1.37 → current
 * migration). `infersignal.*` names cover what the conventions do not.
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

const m = ATTR.model;
/** The attributes the GenAI conventions require (and `gen_ai.request.model`) on every gen_ai.server.* metric. */
const genAi = [ATTR.operationName, ATTR.providerName, m] as const;

/** `gen_ai.request.model` of a request nothing named (no adapter `model` option, no model argument). */
export const UNKNOWN_MODEL = '_unknown';

export const METRICS = {
  queueWait: {
    name: 'infersignal.queue.wait.duration',
    type: 'histogram',
    unit: 's',
    description: 'Time a request waited between arrival and the start of inference.',
    attributes: [ATTR.queue, m],
    feeds: 'queue.waitWarnSeconds / queue.waitCriticalSeconds',
  },
  inferenceDuration: {
    name: 'infersignal.inference.duration',
    type: 'histogram',
    unit: 's',
    description: 'Time from the start of inference to the end of the request.',
    attributes: [ATTR.queue, m, ATTR.outcome],
    feeds: 'glitch.deltaSeconds',
  },
  requestDuration: {
    name: 'gen_ai.server.request.duration',
    type: 'histogram',
    unit: 's',
    description:
      'Time from arrival to the end of the request (queue wait included), every outcome. `error.type` on every outcome but completed: the outcome (cancelled, rejected, timeout, unavailable, deadline_exceeded), `_OTHER` for error.',
    attributes: [...genAi, ATTR.errorType, ATTR.queue, ATTR.outcome],
  },
  requests: {
    name: 'infersignal.requests',
    type: 'counter',
    unit: '{request}',
    description: 'Requests that ended, by outcome (completed, cancelled, error, rejected, timeout, …).',
    attributes: [ATTR.queue, m, ATTR.outcome],
  },
  queueWaiting: {
    name: 'infersignal.queue.waiting',
    type: 'gauge',
    unit: '{request}',
    description: 'Requests that arrived and have not started inference.',
    attributes: [ATTR.queue],
  },
  queueInFlight: {
    name: 'infersignal.queue.in_flight',
    type: 'gauge',
    unit: '{request}',
    description: 'Requests that started inference and have not ended.',
    attributes: [ATTR.queue],
  },
  queueCapacity: {
    name: 'infersignal.queue.capacity',
    type: 'gauge',
    unit: '{request}',
    description: 'Configured capacity of the queue (waiting + in flight).',
    attributes: [ATTR.queue],
  },
  queueOccupancy: {
    name: 'infersignal.queue.occupancy',
    type: 'gauge',
    unit: '1',
    description: '(waiting + in flight) / capacity.',
    attributes: [ATTR.queue],
    feeds: 'queue.occupancyWarn / queue.occupancyCritical',
  },
  queueWaitOldest: {
    name: 'infersignal.queue.wait.oldest',
    type: 'gauge',
    unit: 's',
    description:
      'Age of the oldest request still waiting (arrival → now), read at collection; 0 when none waits. Unlike the wait histogram, which records a request when it leaves the queue, it rises while a queue is stuck.',
    attributes: [ATTR.queue],
    feeds: 'queue.ageWarnSeconds / queue.ageCriticalSeconds',
  },
  queueWaitPending: {
    name: 'infersignal.queue.wait.pending',
    type: 'gauge',
    unit: 's',
    description:
      'Time the requests still waiting have already waited, summed (Σ now − arrival), read at collection; 0 when none waits.',
    attributes: [ATTR.queue],
  },
  queueTokensPending: {
    name: 'infersignal.queue.tokens.pending',
    type: 'gauge',
    unit: '{token}',
    description:
      "Token backlog of an LLM queue, read at collection: `gen_ai.token.type` `input`, the prompt tokens of the requests still waiting; `output`, the output tokens still owed to the running requests (their max_tokens less the tokens produced so far; a request without max_tokens owes none). Present at 0 from the queue's creation on a queue made with `tokens: true`.",
    attributes: [ATTR.queue, ATTR.tokenType],
  },
  queueTokensDrainTime: {
    name: 'infersignal.queue.tokens.drain.time',
    type: 'gauge',
    unit: 's',
    description:
      "Time an LLM queue's known output work takes at the output rate it has been serving at: the max_tokens of the running and waiting requests, scaled by the share of max_tokens its recent completed requests produced (1 until 8 completed), less the tokens the running ones produced, over output tokens per second while requests ran (over capacity.rateWindowSeconds). 0 when none waits; not observed while no token was produced in the window.",
    attributes: [ATTR.queue],
    feeds: 'queue.tokenDrainWarnSeconds / queue.tokenDrainCriticalSeconds',
  },
  backpressureLevel: {
    name: 'infersignal.queue.backpressure.level',
    type: 'gauge',
    unit: '{level}',
    description:
      'Backpressure level of the queue: 0 ok, 1 warn, 2 critical (admission sheds; held for queue.shedHoldSeconds and until its levels cleared by their hysteresis).',
    attributes: [ATTR.queue],
  },
  queueArrivalRate: {
    name: 'infersignal.queue.arrival.rate',
    type: 'gauge',
    unit: '{request}/s',
    description: 'Arrival rate λ of the queue (EWMA, half-life capacity.rateHalfLifeSeconds).',
    attributes: [ATTR.queue],
  },
  queueCompletionRate: {
    name: 'infersignal.queue.completion.rate',
    type: 'gauge',
    unit: '{request}/s',
    description: 'Completion rate of the queue over capacity.rateWindowSeconds.',
    attributes: [ATTR.queue],
  },
  queueServiceTime: {
    name: 'infersignal.queue.service.time',
    type: 'gauge',
    unit: 's',
    description:
      "Mean service time S over capacity.serviceWindowSeconds, or over its last sixth (2–5 s) when that is confidently higher (a sudden slowdown): start of inference → end, or → the slot's release when `queue.run()` holds it (the response may still be written after).",
    attributes: [ATTR.queue],
  },
  queueServiceTimeP90: {
    name: 'infersignal.queue.service.time.p90',
    type: 'gauge',
    unit: 's',
    description: 'P90 service time over capacity.serviceWindowSeconds.',
    attributes: [ATTR.queue],
  },
  queueUtilization: {
    name: 'infersignal.queue.utilization',
    type: 'gauge',
    unit: '1',
    description: 'Utilization ρ = λ·S / c (c = the queue concurrency).',
    attributes: [ATTR.queue],
    feeds: 'capacity.utilizationWarn / capacity.utilizationCritical',
  },
  queueHeadroom: {
    name: 'infersignal.queue.headroom',
    type: 'gauge',
    unit: '{request}/s',
    description: 'Sustainable rate c / S minus the arrival rate λ; negative when overloaded.',
    attributes: [ATTR.queue],
  },
  queueWaitPredicted: {
    name: 'infersignal.queue.wait.predicted',
    type: 'gauge',
    unit: 's',
    description: 'Expected queue wait of an M/M/c queue (Erlang C) at the measured λ, S and c; not observed at ρ ≥ 1.',
    attributes: [ATTR.queue],
  },
  queueTimeToSaturation: {
    name: 'infersignal.queue.saturation.time',
    type: 'gauge',
    unit: 's',
    description:
      'Seconds until ρ reaches 1 at its least-squares trend over capacity.trendWindowSeconds; observed only while ρ rises.',
    attributes: [ATTR.queue],
    feeds: 'capacity.saturationWarnSeconds',
  },
  eventLoopDelayP50: {
    name: 'nodejs.eventloop.delay.p50',
    type: 'gauge',
    unit: 's',
    description: 'Event-loop delay median over the last sample period (the lateness of a probe timer due every 20 ms).',
    attributes: [],
  },
  eventLoopDelayP99: {
    name: 'nodejs.eventloop.delay.p99',
    type: 'gauge',
    unit: 's',
    description: 'Event-loop delay P99 over the last sample period.',
    attributes: [],
    feeds: 'eventLoop.delayWarnSeconds / eventLoop.delayCriticalSeconds',
  },
  eventLoopDelayMax: {
    name: 'nodejs.eventloop.delay.max',
    type: 'gauge',
    unit: 's',
    description: 'Event-loop delay maximum over the last sample period.',
    attributes: [],
  },
  eventLoopUtilization: {
    name: 'nodejs.eventloop.utilization',
    type: 'gauge',
    unit: '1',
    description: 'Share of the last sample period the event loop was busy (performance.eventLoopUtilization).',
    attributes: [],
  },
  gcDuration: {
    name: 'v8js.gc.duration',
    type: 'histogram',
    unit: 's',
    description: 'Garbage-collection pause durations (PerformanceObserver gc entries).',
    attributes: ['v8js.gc.type'],
  },
  heapUsed: {
    name: 'v8js.memory.heap.used',
    type: 'gauge',
    unit: 'By',
    description:
      'Bytes in use per V8 heap space (space_used_size of v8.getHeapSpaceStatistics()), read at collection. The V8JS conventions make it an UpDownCounter; observed here as a gauge (the same Prometheus gauge).',
    attributes: [ATTR.heapSpace],
  },
  heapLive: {
    name: 'infersignal.heap.live',
    type: 'gauge',
    unit: 'By',
    description:
      'Old-generation bytes in use right after the last major GC (mark-compact): the live set the collector could not free. ' +
      "From half the WARN share of the limit up, V8's own figures at the collection's end (a v8.GCProfiler); below it, read in the GC observer's callback, which counts what the process allocated since (a profiler writes every scavenge's statistics inside its pause, so it runs only where a few points matter). " +
      'Every space but the young generation and read-only space.',
    attributes: [],
  },
  heapLiveLimit: {
    name: 'infersignal.heap.live.limit',
    type: 'gauge',
    unit: 'By',
    description:
      "The old-generation limit the live set is judged against: --max-old-space-size where the process was given it, else V8's heap_size_limit less its young-generation reserve.",
    attributes: [],
  },
  heapLiveRatio: {
    name: 'infersignal.heap.live.ratio',
    type: 'gauge',
    unit: '1',
    description:
      'infersignal.heap.live / infersignal.heap.live.limit: how full the heap stays after the collector did its best. The process dies of heap exhaustion at 1, a busy one sooner (V8 gives up when mark-compacts free too little).',
    attributes: [],
    feeds: 'heap.liveWarn / heap.liveCritical',
  },
  heapExhaustionTime: {
    name: 'infersignal.heap.exhaustion.time',
    type: 'gauge',
    unit: 's',
    description:
      'Seconds until the live set reaches 80 % of infersignal.heap.live.limit (where V8 may abort with "ineffective mark-compacts near heap limit") at the least-squares trend of the live set over heap.trendWindowSeconds, carried forward between major GCs. Absent unless the live set rises: a line (R² ≥ 0.8) through at least two major GCs 3 s or more apart that rises by 10 % of the limit, the live set past half of heap.liveWarn.',
    attributes: [],
    feeds: 'heap.exhaustionWarnSeconds / heap.exhaustionCriticalSeconds',
  },
  modelLoadDuration: {
    name: 'infersignal.model.load.duration',
    type: 'histogram',
    unit: 's',
    description: 'Duration of a model load or reload, by outcome (success, error).',
    attributes: [m, ATTR.loadKind, ATTR.outcome],
    feeds: 'modelLoad.spikeFactor',
  },
  modelLoadBaseline: {
    name: 'infersignal.model.load.baseline',
    type: 'gauge',
    unit: 's',
    description:
      'Current baseline load duration of the model: the healthy median learnt from its first loads (lower if recent loads are faster), or the configured one.',
    attributes: [m],
  },
  modelLoadSpikes: {
    name: 'infersignal.model.load.spikes',
    type: 'counter',
    unit: '{load}',
    description: 'Loads that took more than spikeFactor × the baseline and at least minSpikeSeconds.',
    attributes: [m, ATTR.loadKind],
    feeds: 'modelLoad.spikeFactor / modelLoad.minSpikeSeconds',
  },
  timeToFirstToken: {
    name: 'gen_ai.server.time_to_first_token',
    type: 'histogram',
    unit: 's',
    description:
      'Time from arrival of a streaming request to its first output token; successful responses only (recorded when the stream ends completed).',
    attributes: genAi,
  },
  timePerOutputToken: {
    name: 'gen_ai.server.time_per_output_token',
    type: 'histogram',
    unit: 's',
    description:
      'Mean time between output tokens after the first, one sample per completed stream of at least two tokens.',
    attributes: genAi,
  },
  streams: {
    name: 'infersignal.streams',
    type: 'counter',
    unit: '{stream}',
    description:
      'Streams that ended, by outcome (completed, cancelled, error, unavailable, deadline_exceeded). `error.type` only when the writer ended the stream itself: `write_stall` (the peer accepted nothing for the write-stall timeout; outcome cancelled).',
    attributes: [m, ATTR.outcome, ATTR.errorType],
    feeds: 'stream.interruptedRatio',
  },
  streamTokens: {
    name: 'infersignal.stream.tokens',
    type: 'counter',
    unit: '{token}',
    description: 'Output tokens (or events) sent on streams.',
    attributes: [m],
  },
  streamInterruptedRatio: {
    name: 'infersignal.stream.interrupted.ratio',
    type: 'gauge',
    unit: '1',
    description: 'Share of interrupted streams over the sliding window (0 until minSamples streams ended).',
    attributes: [m],
    feeds: 'stream.interruptedRatio',
  },
  kvCacheUtilization: {
    name: 'infersignal.kv_cache.utilization',
    type: 'gauge',
    unit: '1',
    description:
      'Share of the KV cache held by running requests: their tokens / the tokens the serving context can hold, 0 when none runs (present from start). Tokens an idle sequence keeps for prefix reuse are not counted: the next prompt takes them over, as vLLM counts cached but unreferenced blocks free. The KV-cache utilization gauge of the model-server protocol.',
    attributes: [m],
    feeds: 'saturation.kvCacheUtilThreshold',
  },
  memoryAllocated: {
    name: 'infersignal.device.memory.allocated',
    type: 'gauge',
    unit: 'By',
    description: 'Device memory in live allocations (tensors) of this process.',
    attributes: [ATTR.memorySource],
  },
  memoryReserved: {
    name: 'infersignal.device.memory.reserved',
    type: 'gauge',
    unit: 'By',
    description: 'Device memory held by this process (allocator pools included).',
    attributes: [ATTR.memorySource],
  },
  memoryFragmentation: {
    name: 'infersignal.device.memory.fragmentation',
    type: 'gauge',
    unit: '1',
    description: '1 − allocated / reserved.',
    attributes: [ATTR.memorySource],
    feeds: 'deviceMemory.fragmentation',
  },
  memoryGapGrowth: {
    name: 'infersignal.device.memory.gap.growth',
    type: 'gauge',
    unit: 'By/s',
    description: 'Least-squares slope of (reserved − allocated) over the drift window.',
    attributes: [ATTR.memorySource],
    feeds: 'deviceMemory.driftMinGrowth',
  },
  gpuMemoryUsed: {
    name: 'infersignal.gpu.memory.used',
    type: 'gauge',
    unit: 'By',
    description: 'Device memory in use on the GPU (all processes), from NVML or nvidia-smi.',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  gpuMemoryFree: {
    name: 'infersignal.gpu.memory.free',
    type: 'gauge',
    unit: 'By',
    description: 'Free device memory on the GPU.',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  gpuMemoryTotal: {
    name: 'infersignal.gpu.memory.total',
    type: 'gauge',
    unit: 'By',
    description: 'Total device memory of the GPU.',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  gpuMemoryReservedDriver: {
    name: 'infersignal.gpu.memory.driver_reserved',
    type: 'gauge',
    unit: 'By',
    description: 'Device memory reserved by the driver and firmware (NVML v2 only).',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  gpuMemoryProcess: {
    name: 'infersignal.gpu.memory.process',
    type: 'gauge',
    unit: 'By',
    description: 'Device memory used by this process on the GPU (NVML per-process accounting).',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  gpuUtilization: {
    name: 'infersignal.gpu.utilization',
    type: 'gauge',
    unit: '1',
    description: 'GPU compute utilization over the last sample period (0–1).',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  rpcCallDuration: {
    name: 'rpc.server.call.duration',
    type: 'histogram',
    unit: 's',
    description:
      "Duration of a gRPC server call, by final status. `error.type` is the status name for UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE and DATA_LOSS (the gRPC conventions' server errors).",
    attributes: [ATTR.rpcSystemName, ATTR.rpcMethod, ATTR.rpcResponseStatusCode, ATTR.errorType],
  },
  rpcCallDurationOld: {
    name: 'rpc.server.duration',
    type: 'histogram',
    unit: 'ms',
    description:
      'Duration of a gRPC server call in the older RPC conventions (semantic-conventions v1.37), emitted beside rpc.server.call.duration only with OTEL_SEMCONV_STABILITY_OPT_IN=rpc/dup.',
    attributes: [ATTR.rpcSystem, ATTR.rpcService, ATTR.rpcMethod, ATTR.rpcGrpcStatusCode],
  },
  breakerState: {
    name: 'infersignal.breaker.state',
    type: 'gauge',
    unit: '{state}',
    description: 'Circuit breaker state: 0 closed, 1 half-open, 2 open (@infersignal/bench createBreaker).',
    attributes: [ATTR.breakerName],
  },
  breakerTransitions: {
    name: 'infersignal.breaker.transitions',
    type: 'counter',
    unit: '{transition}',
    description: 'Circuit breaker state changes, by the state entered.',
    attributes: [ATTR.breakerName, ATTR.breakerTo],
  },
  breakerCalls: {
    name: 'infersignal.breaker.calls',
    type: 'counter',
    unit: '{call}',
    description: 'Calls through the circuit breaker, by result (success, failure, timeout, reject).',
    attributes: [ATTR.breakerName, ATTR.breakerResult],
  },
  connectionsOpen: {
    name: 'infersignal.connections.open',
    type: 'gauge',
    unit: '{connection}',
    description: 'Open TCP connections of an instrumented HTTP(S) server (accepted since it was instrumented).',
    attributes: [ATTR.server],
  },
  connectionsCapacity: {
    name: 'infersignal.connections.capacity',
    type: 'gauge',
    unit: '{connection}',
    description:
      'Connections the server is sized for: the configured capacity, else server.maxConnections; not observed when neither is set.',
    attributes: [ATTR.server],
  },
  connectionsOpened: {
    name: 'infersignal.connections.opened',
    type: 'counter',
    unit: '{connection}',
    description: 'Connections accepted (its rate is the connection churn).',
    attributes: [ATTR.server],
  },
  connectionsRejected: {
    name: 'infersignal.connections.rejected',
    type: 'counter',
    unit: '{connection}',
    description:
      'Connections the server closed at accept because server.maxConnections was reached (net.Server `drop`).',
    attributes: [ATTR.server],
  },
  connectionsRequests: {
    name: 'infersignal.connections.requests',
    type: 'histogram',
    unit: '{request}',
    description: 'Requests served per connection, recorded when a connection that served at least one request closes.',
    attributes: [ATTR.server],
  },
  connectionsReuseRatio: {
    name: 'infersignal.connections.reuse.ratio',
    type: 'gauge',
    unit: '1',
    description:
      'Keep-alive reuse: share of the last reuseWindow requests that arrived on a connection which had already served one.',
    attributes: [ATTR.server],
  },
  tlsHandshakeDuration: {
    name: 'infersignal.tls.handshake.duration',
    type: 'histogram',
    unit: 's',
    description:
      'TLS handshake time, from TCP accept (`connection`) to `secureConnection`; successful handshakes only.',
    attributes: [ATTR.server],
  },
  tlsHandshakeFailures: {
    name: 'infersignal.tls.handshake.failures',
    type: 'counter',
    unit: '{handshake}',
    description:
      'TLS handshakes that failed (`tlsClientError`), by error code (e.g. ERR_SSL_HTTP_REQUEST, ERR_TLS_HANDSHAKE_TIMEOUT, ECONNRESET).',
    attributes: [ATTR.server, ATTR.errorType],
  },
  tlsSessionReuseRatio: {
    name: 'infersignal.tls.session.reuse.ratio',
    type: 'gauge',
    unit: '1',
    description:
      'Share of the last reuseWindow successful TLS handshakes that resumed a session (tlsSocket.isSessionReused()).',
    attributes: [ATTR.server],
  },
  signalLevel: {
    name: 'infersignal.signal.level',
    type: 'gauge',
    unit: '{level}',
    description: 'Current level of each signal: 0 ok, 1 warn, 2 critical.',
    attributes: [ATTR.signal, ATTR.queue, m],
  },
  alerts: {
    name: 'infersignal.alerts',
    type: 'counter',
    unit: '{alert}',
    description: 'Alert events emitted (level changes), by signal and level.',
    attributes: [ATTR.signal, ATTR.level],
  },
  internalErrors: {
    name: 'infersignal.internal.errors',
    type: 'counter',
    unit: '{error}',
    description: 'Errors caught inside InferSignal (its own or a user callback), never thrown into the request path.',
    attributes: [ATTR.errorSource],
  },
  exportDropped: {
    name: 'infersignal.export.dropped',
    type: 'counter',
    unit: '{export}',
    description:
      'OTLP exports that failed (collector down, timed out or refusing) and were dropped, by signal (metrics, traces); counted by @infersignal/node.',
    attributes: [ATTR.exportSignal],
  },
  webhookDropped: {
    name: 'infersignal.webhook.dropped',
    type: 'counter',
    unit: '{alert}',
    description: 'Alert deliveries dropped by the webhook sink (queue full or retries exhausted).',
    attributes: [],
  },
} as const satisfies Record<string, InstrumentSpec>;

export type MetricKey = keyof typeof METRICS;

/** Span names, children of the active span at arrival. */
export const SPANS = {
  /** One per request, arrival → end; the queue wait is its `ATTR.queueWait` attribute. */
  request: 'infersignal.request',
  modelLoad: 'infersignal.model.load',
} as const;

/** Bucket boundaries (seconds) for the histograms. */
export const BUCKETS = {
  /** queue wait: 1 ms to 60 s (the TTFT set, finer around the wait thresholds and extended to 60 s) */
  queueWait: [
    0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 10, 20, 30, 60,
  ],
  /** inference duration: the request-duration set with 5 ms in front */
  duration: [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  /** gen_ai.server.request.duration: the GenAI conventions' boundaries */
  requestDuration: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  /** gen_ai.server.time_to_first_token: the GenAI conventions' boundaries */
  timeToFirstToken: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
  /** gen_ai.server.time_per_output_token: the GenAI conventions' boundaries */
  timePerOutputToken: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5],
  /** rpc.server.call.duration: the RPC conventions' boundaries (as http.server.request.duration) */
  rpcCall: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
  /** rpc.server.duration (older conventions, milliseconds) */
  rpcCallMs: [0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000],
  /** GC pauses: the semantic conventions' advice for v8js.gc.duration, so every exporter of it agrees. */
  gc: [0.01, 0.1, 1, 10],
  /**
   * model load, up to 10 minutes: a few loads a process lifetime, judged against their baseline (not a
   * quantile), and read by their sum and count: a decade a bucket keeps the scrape small.
   */
  modelLoad: [0.1, 1, 10, 60, 600],
  /** TLS handshakes: loopback ~1–5 ms, a slow client or an overloaded server (RSA signing on a blocked loop) seconds. */
  tlsHandshake: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  /** Requests per connection (a count, not seconds). */
  requestsPerConnection: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
} as const;

/** Which bucket set each histogram uses (the node package turns this into Views). */
export const HISTOGRAM_BUCKETS: Record<string, readonly number[]> = {
  [METRICS.queueWait.name]: BUCKETS.queueWait,
  [METRICS.inferenceDuration.name]: BUCKETS.duration,
  [METRICS.requestDuration.name]: BUCKETS.requestDuration,
  [METRICS.timeToFirstToken.name]: BUCKETS.timeToFirstToken,
  [METRICS.timePerOutputToken.name]: BUCKETS.timePerOutputToken,
  [METRICS.modelLoadDuration.name]: BUCKETS.modelLoad,
  [METRICS.rpcCallDuration.name]: BUCKETS.rpcCall,
  [METRICS.rpcCallDurationOld.name]: BUCKETS.rpcCallMs,
  [METRICS.gcDuration.name]: BUCKETS.gc,
  [METRICS.tlsHandshakeDuration.name]: BUCKETS.tlsHandshake,
  [METRICS.connectionsRequests.name]: BUCKETS.requestsPerConnection,
};

const UNIT_SUFFIX: Record<string, string> = { s: 'seconds', ms: 'milliseconds', By: 'bytes', '1': 'ratio' };
const PER_UNIT: Record<string, string> = { s: 'second', m: 'minute', h: 'hour' };

/** The Collector's unit suffix: `s` → seconds, `By/s` → bytes_per_second, `{request}/s` → per_second, `{x}` → none. */
function unitSuffix(spec: InstrumentSpec): string {
  const unit = spec.unit.replace(/\{[^}]*\}/g, '');
  if (unit === '1') return spec.type === 'gauge' ? 'ratio' : '';
  const [main, per] = unit.split('/');
  const parts = [];
  if (main) parts.push(UNIT_SUFFIX[main] ?? main);
  if (per) parts.push(`per_${PER_UNIT[per] ?? per}`);
  return parts.join('_');
}

/**
 * The Prometheus name of an instrument as the OTel Collector (and `@infersignal/node`)
 * writes it (the rules generator and its tests use this).
 */
export function prometheusName(spec: InstrumentSpec): string {
  let name = spec.name.replace(/[^a-zA-Z0-9_:]/g, '_');
  const suffix = unitSuffix(spec);
  if (suffix && !name.endsWith(`_${suffix}`)) name += `_${suffix}`;
  if (spec.type === 'counter') name += '_total';
  return name;
}

/** Prometheus label name of an attribute key. */
export function prometheusLabel(attribute: string): string {
  return attribute.replace(/[^a-zA-Z0-9_]/g, '_');
}
