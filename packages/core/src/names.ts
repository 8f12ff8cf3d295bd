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

export { ATTR, UNKNOWN_MODEL } from './attributes';
export type { InstrumentSpec, InstrumentType } from './attributes';
import { ATTR, GEN_AI_ATTRIBUTES, type InstrumentSpec } from './attributes';
import { circuitBreakerSignal } from './definitions/circuit-breaker';
import { connectionsSignal } from './definitions/connections';
import { internalSignal } from './definitions/internal';
import { deviceMemorySignal } from './definitions/device-memory';
import { modelLoadSignal } from './definitions/model-load';
import { runtimeSignal } from './definitions/runtime';
import { streamSignal } from './definitions/stream';

const m = ATTR.model;
const genAi = GEN_AI_ATTRIBUTES;

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
    feeds: 'queue.pendingWaitWarnSeconds / queue.pendingWaitCriticalSeconds (per slot)',
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
      'Backpressure level of the queue: 0 ok, 1 warn, 2 critical (a shedding episode: admission turns away the excess, until none for queue.shedHoldSeconds and its levels cleared by their hysteresis).',
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
  ...runtimeSignal.metrics,
  ...modelLoadSignal.metrics,
  ...streamSignal.metrics,
  kvCacheUtilization: {
    name: 'infersignal.kv_cache.utilization',
    type: 'gauge',
    unit: '1',
    description:
      'Share of the KV cache held by running requests: their tokens / the tokens the serving context can hold, 0 when none runs (present from start). Tokens an idle sequence keeps for prefix reuse are not counted: the next prompt takes them over, as vLLM counts cached but unreferenced blocks free. The KV-cache utilization gauge of the model-server protocol.',
    attributes: [m],
    feeds: 'saturation.kvCacheUtilThreshold',
  },
  ...deviceMemorySignal.metrics,
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
  ...circuitBreakerSignal.metrics,
  ...connectionsSignal.metrics,
  ...internalSignal.metrics,
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
  timeToFirstToken: streamSignal.buckets[streamSignal.metrics.timeToFirstToken.name],
  /** gen_ai.server.time_per_output_token: the GenAI conventions' boundaries */
  timePerOutputToken: streamSignal.buckets[streamSignal.metrics.timePerOutputToken.name],
  /** rpc.server.call.duration: the RPC conventions' boundaries (as http.server.request.duration) */
  rpcCall: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
  /** rpc.server.duration (older conventions, milliseconds) */
  rpcCallMs: [0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000],
  /** GC pauses: the semantic conventions' advice for v8js.gc.duration, so every exporter of it agrees. */
  gc: runtimeSignal.buckets[runtimeSignal.metrics.gcDuration.name],
  /** model load: up to 10 minutes */
  modelLoad: modelLoadSignal.buckets[modelLoadSignal.metrics.modelLoadDuration.name],
  /** TLS handshakes: loopback ~1–5 ms, a slow client or an overloaded server (RSA signing on a blocked loop) seconds. */
  tlsHandshake: connectionsSignal.buckets[connectionsSignal.metrics.tlsHandshakeDuration.name],
  /** Requests per connection (a count, not seconds). */
  requestsPerConnection: connectionsSignal.buckets[connectionsSignal.metrics.connectionsRequests.name],
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
