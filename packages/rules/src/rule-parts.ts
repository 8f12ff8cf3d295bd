/**
 * The pieces every rule group is built from: the rule file types, the
 * alert shape (labels, annotations, runbook anchor), grouping keys and the
 * event expression, for the rule kit the signal definitions' templates are
 * written with (kit.ts).
 */
import { SIGNALS } from '@infersignal/core/signals';
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
/**
 * The replica a series comes from: the scrape target, and the namespace and
 * pod that Kubernetes service discovery adds. A label a series lacks drops
 * out of a `by`, so the same keys serve a plain scrape config. Every alert
 * about a queue, model or process keeps them: the page names the replica.
 */
export const REPLICA_KEYS = ['job', 'instance', 'namespace', 'pod'];

/**
 * Recording-rule levels: the names the dashboard and the KEDA trigger read.
 * The recorded series are per replica (they keep REPLICA_KEYS); the level in
 * the name lists the labels that tell a series' subject.
 */
export const QUEUE_RECORD_LEVEL = ['job', LABEL.queue];

/** `{{ $labels.instance }}` in an annotation: the replica, as the alert names it. */
export const REPLICA = '{{ $labels.instance }}';

/**
 * The level core's detector announced for a signal on a subject
 * (`infersignal.signal.level`: 0 ok, 1 warn, 2 critical), per replica. Its
 * hold, hysteresis, gates and keep are the detector's own, so a rule that
 * reads it pages exactly when the in-process alert is raised.
 */
export function signalLevel(o: ResolvedOptions, signal: string, subject: string[]): string {
  return `max ${by(...REPLICA_KEYS, ...subject)} (${o.names.metric('signalLevel')}{${LABEL.signal}="${signal}"})`;
}

/** `on (…)` matching a per-replica series with a signal level of the same subject. */
export function onReplica(...subject: string[]): string {
  return `on (${['job', 'instance', ...subject].join(', ')})`;
}

/** Recording-rule name `level:metric:operations` (Prometheus naming practice). */
export function recordName(levelLabels: string[], base: string, operation: string): string {
  const level = levelLabels.map((label) =>
    label === LABEL.queue ? 'queue' : label === LABEL.model ? 'model' : label === LABEL.memorySource ? 'source' : label,
  );
  return `${level.join('_')}:${base}:${operation}`;
}

/** The anchors in docs/runbook.md the alerts link to, by alert name (from core's signal definitions). */
export const RUNBOOK_ANCHORS: Record<string, string> = Object.fromEntries(
  SIGNALS.flatMap((signal) => (signal.alerts ?? []).map((a) => [a.name, a.runbook] as const)),
);

/** An alerting rule from its definition (name, severity, signal, anchor) and the template's expression and text. */
export function alertRule(
  o: ResolvedOptions,
  defined: { name: string; signal: string; severity: Severity; runbook: string },
  expr: string,
  hold: string | undefined,
  summary: string,
  description: string,
  keepFiring?: string,
): AlertingRule {
  // Key order is the order people expect to read in the YAML: alert, expr, for, keep_firing_for, labels, annotations.
  return {
    alert: defined.name,
    expr,
    ...(hold !== undefined && hold !== '0s' ? { for: hold } : {}),
    ...(keepFiring !== undefined && keepFiring !== '0s' ? { keep_firing_for: keepFiring } : {}),
    labels: { severity: defined.severity, [LABEL.signal]: defined.signal },
    annotations: { summary, description, runbook_url: `${o.runbookUrl}#${defined.runbook}` },
  };
}

/**
 * `increase() > 0` misses the first event of a series that appears at 1
 * (a counter labelled by what happened, such as an error source, exists
 * only after its first add), so a series that is new within the window
 * also counts.
 */
export function eventExpr(series: string, keys: string[], window: string): string {
  return `sum ${by(...keys)} (increase(${series}[${window}])) > 0 or sum ${by(...keys)} (${series} unless ${series} offset ${window}) > 0`;
}
