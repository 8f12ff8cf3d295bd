/**
 * The pieces every rule group is built from: the rule file types, the
 * alert shape (labels, annotations, runbook anchor), grouping keys and the
 * event expression. Shared by the request-level groups (rules.ts) and the
 * capacity / runtime / connection groups (rules-runtime.ts).
 */
import { LABEL } from './names';
import type { ResolvedOptions } from './options';

export type Severity = 'warning' | 'critical';

export interface RecordingRule {
  record: string;
  expr: string;
}

export interface AlertingRule {
  alert: string;
  expr: string;
  for?: string;
  keep_firing_for?: string;
  labels: { severity: Severity; [label: string]: string };
  annotations: { summary: string; description: string; runbook_url: string };
}

export interface RuleGroup {
  name: string;
  rules: (RecordingRule | AlertingRule)[];
}

export interface RuleFile {
  groups: RuleGroup[];
}

export const by = (...labels: string[]): string => `by (${labels.join(', ')})`;
export const QUEUE_KEYS = ['job', LABEL.queue];
export const MODEL_KEYS = ['job', LABEL.model];
export const PROCESS_KEYS = ['job', 'instance', LABEL.memorySource];
/** Event-loop and GC gauges carry no attribute: they are per process. */
export const INSTANCE_KEYS = ['job', 'instance'];
/** Connection and TLS instruments are per process and instrumented server. */
export const SERVER_KEYS = ['job', 'instance', LABEL.server];

/** Recording-rule name `level:metric:operations` (Prometheus naming practice). */
export function recordName(levelLabels: string[], base: string, operation: string): string {
  const level = levelLabels.map((label) =>
    label === LABEL.queue ? 'queue' : label === LABEL.model ? 'model' : label === LABEL.memorySource ? 'source' : label,
  );
  return `${level.join('_')}:${base}:${operation}`;
}

/** The anchors in docs/runbook.md the alerts link to, by alert name. */
export const RUNBOOK_ANCHORS: Record<string, string> = {
  InferSignalQueueWaitHigh: 'queue-wait',
  InferSignalQueueWaitCritical: 'queue-wait',
  InferSignalQueueWaitTailHigh: 'queue-wait-tail',
  InferSignalQueueOccupancyHigh: 'queue-occupancy',
  InferSignalQueueOccupancyCritical: 'queue-occupancy',
  InferSignalBackpressureCritical: 'backpressure',
  InferSignalCapacityUtilizationHigh: 'capacity-utilization',
  InferSignalCapacityUtilizationCritical: 'capacity-utilization',
  InferSignalTimeToSaturationLow: 'time-to-saturation',
  InferSignalModelLoadSpike: 'model-load-spike',
  InferSignalStreamInterruptions: 'stream-interruptions',
  InferSignalStreamInterruptionsCritical: 'stream-interruptions',
  InferSignalGpuFragmentation: 'gpu-fragmentation',
  InferSignalMemoryDrift: 'memory-drift',
  InferSignalEventLoopDelayHigh: 'event-loop-delay',
  InferSignalEventLoopDelayCritical: 'event-loop-delay',
  InferSignalHeapLiveHigh: 'heap-headroom',
  InferSignalHeapLiveCritical: 'heap-headroom',
  InferSignalHeapExhaustionSoon: 'heap-exhaustion',
  InferSignalHeapExhaustionCritical: 'heap-exhaustion',
  InferSignalConnectionsSaturated: 'connections-saturated',
  InferSignalConnectionsSaturatedCritical: 'connections-saturated',
  InferSignalConnectionsRejected: 'connections-rejected',
  InferSignalTlsHandshakeFailures: 'tls-handshake-failures',
  InferSignalCircuitBreakerOpen: 'circuit-breaker-open',
  InferSignalInternalErrors: 'internal-errors',
};

export function alert(
  options: ResolvedOptions,
  name: keyof typeof RUNBOOK_ANCHORS,
  signal: string,
  severity: Severity,
  expr: string,
  hold: string | undefined,
  summary: string,
  description: string,
  keepFiring?: string,
): AlertingRule {
  const anchor = RUNBOOK_ANCHORS[name];
  if (anchor === undefined) throw new Error(`infersignal-rules: alert ${name} has no runbook anchor`);
  // Key order is the order people expect to read in the YAML: alert, expr, for, keep_firing_for, labels, annotations.
  return {
    alert: name,
    expr,
    ...(hold !== undefined && hold !== '0s' ? { for: hold } : {}),
    ...(keepFiring !== undefined && keepFiring !== '0s' ? { keep_firing_for: keepFiring } : {}),
    labels: { severity, [LABEL.signal]: signal },
    annotations: { summary, description, runbook_url: `${options.runbookUrl}#${anchor}` },
  };
}

/**
 * `increase() > 0` misses the first event of a series that appears at 1
 * (an OTel counter exists only after its first add), so a series that is
 * new within the window also counts.
 */
export function eventExpr(series: string, keys: string[], window: string): string {
  return `sum ${by(...keys)} (increase(${series}[${window}])) > 0 or sum ${by(...keys)} (${series} unless ${series} offset ${window}) > 0`;
}
