/**
 * Every metric InferSignal emits, gathered from the signal definitions
 * (each written once there, with its unit and description), plus the span
 * names and histogram buckets. docs/metrics.md and the rules generator read
 * these constants.
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
import type { InstrumentSpec } from './attributes';
import { capacitySignal } from './definitions/capacity';
import { circuitBreakerSignal } from './definitions/circuit-breaker';
import { connectionsSignal } from './definitions/connections';
import { internalSignal } from './definitions/internal';
import { deviceMemorySignal } from './definitions/device-memory';
import { modelLoadSignal } from './definitions/model-load';
import { queueSignal } from './definitions/queue';
import { gpuSignal } from './definitions/gpu';
import { rpcSignal } from './definitions/rpc';
import { runtimeSignal } from './definitions/runtime';
import { saturationSignal } from './definitions/saturation';
import { streamSignal } from './definitions/stream';

export const METRICS = {
  ...queueSignal.metrics,
  ...capacitySignal.metrics,
  ...runtimeSignal.metrics,
  ...modelLoadSignal.metrics,
  ...streamSignal.metrics,
  ...saturationSignal.metrics,
  ...deviceMemorySignal.metrics,
  ...gpuSignal.metrics,
  ...rpcSignal.metrics,
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

/** Bucket boundaries of the histograms (in their unit), each set in the definition of its instrument. */
export const BUCKETS = {
  /** queue wait: 1 ms to 60 s, finer around the wait thresholds (the queue definition says why) */
  queueWait: queueSignal.buckets[queueSignal.metrics.queueWait.name],
  /** inference duration: the request-duration set with 5 ms in front */
  duration: queueSignal.buckets[queueSignal.metrics.inferenceDuration.name],
  /** gen_ai.server.request.duration: the GenAI conventions' boundaries */
  requestDuration: queueSignal.buckets[queueSignal.metrics.requestDuration.name],
  /** gen_ai.server.time_to_first_token: the GenAI conventions' boundaries */
  timeToFirstToken: streamSignal.buckets[streamSignal.metrics.timeToFirstToken.name],
  /** gen_ai.server.time_per_output_token: the GenAI conventions' boundaries */
  timePerOutputToken: streamSignal.buckets[streamSignal.metrics.timePerOutputToken.name],
  /** rpc.server.call.duration: the RPC conventions' boundaries (as http.server.request.duration) */
  rpcCall: rpcSignal.buckets[rpcSignal.metrics.rpcCallDuration.name],
  /** rpc.server.duration (older conventions, milliseconds) */
  rpcCallMs: rpcSignal.buckets[rpcSignal.metrics.rpcCallDurationOld.name],
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
