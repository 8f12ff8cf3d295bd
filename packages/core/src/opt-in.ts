/**
 * Instruments exported only when asked for (`optInMetrics`): every series
 * InferSignal exports by default has a reader (a generated rule, a
 * dashboard panel or variable, or a runbook step; docs/metrics.md lists
 * them), and these have none. Each would cost every replica its series at
 * every scrape for a figure nothing reads. The signals still measure and
 * judge what they feed.
 */
import { METRICS } from './names';

export const OPT_IN_METRICS: Readonly<Record<string, string>> = {
  // End-to-end latency by the GenAI conventions: queue wait (exported) plus inference (the service-time gauges).
  [METRICS.requestDuration.name]: 'the GenAI conventions’ end-to-end latency histogram (queue wait + inference)',
  [METRICS.inferenceDuration.name]:
    'the distribution of inference times (their mean is `infersignal.queue.service.time`)',
  [METRICS.queueServiceTimeP90.name]: 'the service-time P90 the capacity model judges with',
  [METRICS.eventLoopDelayP50.name]: 'the event-loop delay median (the P99 and maximum are exported)',
  // The rules, the dashboard and the runbook read their quotient, infersignal.heap.live.ratio.
  [METRICS.heapLive.name]: 'the live set in bytes (its share of the limit is exported)',
  [METRICS.heapLiveLimit.name]: 'the old-generation limit the live set is judged against (a constant of the process)',
};

export const OPT_IN_NAMES: readonly string[] = Object.keys(OPT_IN_METRICS);

/**
 * Instruments a convention's own switch turns on, not `optInMetrics`: the older RPC conventions' duration
 * is emitted beside the current one only where the app asks for both.
 */
export const OPT_IN_BY_CONVENTION: Readonly<Record<string, string>> = {
  [METRICS.rpcCallDurationOld.name]:
    '`OTEL_SEMCONV_STABILITY_OPT_IN=rpc/dup` (or `@infersignal/grpc`’s `semconvStabilityOptIn`)',
};
