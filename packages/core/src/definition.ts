/**
 * A signal's definition: everything InferSignal says about one signal, in
 * one plain object. Its metric names, units and attributes; its thresholds
 * with their schema and defaults (checked by the one validator); its alerts
 * (name, severity, runbook anchor, docs row); the templates of its
 * Prometheus rules and dashboard panels; and how to build its in-process
 * detector. The monitor, the threshold validator, the rules, the
 * dashboard, docs/metrics.md and docs/rules.md all read the definitions,
 * so none of them can disagree with another.
 *
 * As OpenTelemetry's instrumentation packages keep one config and a list,
 * and prom-client one object per metric: data, plus a few small functions
 * that render it. The rule and panel templates get their tools from the
 * generator (`RuleKit`, `PanelKit`), so core never depends on it.
 */
import type { SignalContext, Signal } from './contract';
import type { InstrumentSpec } from './attributes';
import type { FieldSpec } from './validate';

/** One threshold: the default and what the one validator accepts. */
export interface ThresholdField {
  readonly default: number | boolean | Readonly<Record<string, number>>;
  /** `map`: an object of positive numbers by name (e.g. a baseline per model). */
  readonly accepts: FieldSpec | 'map';
}

/** The signal's threshold group, `thresholds.<group>` in every config. */
export interface ThresholdGroup {
  readonly group: string;
  readonly fields: Readonly<Record<string, ThresholdField>>;
  /**
   * Relations between the fields, after each passed its own check: throws
   * an InferSignalConfigError naming the field (`${prefix}.${group}.<key>`).
   */
  check?(values: Readonly<Record<string, unknown>>, prefix: string): void;
}

type AlertSeverity = 'warning' | 'critical';

/** One Prometheus alert of the signal. The template gives its expression and text. */
export interface AlertDefinition {
  /** `InferSignal…`, the Alertmanager alertname. */
  readonly name: string;
  /** The `infersignal_signal` label: the level the alert stands for (`ctx.report`'s `signal`). */
  readonly signal: string;
  readonly severity: AlertSeverity;
  /** Its section in docs/runbook.md. */
  readonly runbook: string;
  /** Its docs/rules.md row: the expression as a reader scans it (every number in it is checked against the rule). */
  readonly doc: string;
  /**
   * The pages it stands for: while it fires, the generated rules hold back the other InferSignal
   * alerts of these `signals` (their `infersignal_signal` label) with the same `job` and the same
   * labels of the attributes `on` (`unless on (…)` this alert firing), so Prometheus resolves a page
   * that went out before it.
   */
  readonly inhibits?: { readonly signals: readonly string[]; readonly on: readonly string[] };
}

/** A recording rule, as Prometheus reads it. */
export interface RecordingRuleDef {
  record: string;
  expr: string;
}

/** An alerting rule, as Prometheus reads it. */
export interface AlertingRuleDef {
  alert: string;
  expr: string;
  for?: string;
  keep_firing_for?: string;
  labels: { severity: AlertSeverity; [label: string]: string };
  annotations: { summary: string; description: string; runbook_url: string };
}

export interface RuleGroupDef {
  name: string;
  rules: (RecordingRuleDef | AlertingRuleDef)[];
}

/**
 * What a rule template is written with, given by the rules generator for
 * one generation (its thresholds, naming and windows).
 */
export interface RuleKit {
  /** The validated thresholds, every group. */
  readonly thresholds: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** The Prometheus name of an instrument in this generation's naming (counters end in `_total`). */
  metric(spec: InstrumentSpec): string;
  /** A histogram's `_bucket` series. */
  bucket(spec: InstrumentSpec): string;
  /** Base name for recording rules (`level:base:operation`): the Collector-style name without `_total`. */
  recordBase(spec: InstrumentSpec): string;
  /** `level:base:operation`; the level labels are shortened (`queue`, `model`, `source`). */
  recordName(levelLabels: readonly string[], base: string, operation: string): string;
  /** The Prometheus label of an attribute. */
  label(attribute: string): string;
  /** Grouping keys: the replica (`job`, `instance`, `namespace`, `pod`), which every alert keeps. */
  readonly replicaKeys: readonly string[];
  /** `{{ $labels.instance }}`: the replica in an annotation. */
  readonly replica: string;
  by(...labels: string[]): string;
  /** The level core's detector announced for `signal` on a subject, per replica. */
  signalLevel(signal: string, subject: readonly string[]): string;
  /** `on (job, instance, …subject)`. */
  onReplica(...subject: string[]): string;
  /** An event counter's "something happened within `window`", new series included. */
  eventExpr(series: string, keys: readonly string[], window: string): string;
  /** `for:` of a level alert whose threshold holds for `seconds` (0: the generator's default hold). */
  hold(seconds: number): string;
  /** `for:` of a rule that reads a level the detector already held: none, unless the `for` option says so. */
  readonly levelHold: string | undefined;
  /** This generation's value of one of the definition's `ruleOptions` (its default unless the generator was given one). */
  option(name: string): number;
  /** The generator's windows (Prometheus durations) and their options. */
  readonly options: Readonly<{
    rateWindow: string;
    streamWindow: string;
    eventWindow: string;
    driftWindow: string;
    driftWindowSeconds: number;
  }>;
  /**
   * An alerting rule of the signal's alert `name` (severity, signal label and runbook anchor from its
   * AlertDefinition).
   */
  alert(
    name: string,
    expr: string,
    hold: string | undefined,
    summary: string,
    description: string,
    keepFiring?: string,
  ): AlertingRuleDef;
  formatDuration(seconds: number): string;
  humanSeconds(seconds: number): string;
  humanPercent(ratio: number): string;
  percentileName(quantile: number): string;
  /** `p95` of 0.95: the operation part of a recorded quantile's name. */
  quantileSuffix(quantile: number): string;
}

/** A dashboard panel before layout. */
export interface PanelDef {
  type?: string;
  title: string;
  description?: string;
  w: number;
  h?: number;
  unit?: string;
  /** Threshold lines (warning, critical) drawn on the panel. */
  lines?: number[];
  /** The value is bad below the (single) line. */
  lowIsBad?: boolean;
  targets: { expr: string; legend: string; format?: 'time_series' | 'heatmap' | 'table'; instant?: boolean }[];
  fieldConfig?: Record<string, unknown>;
  options?: Record<string, unknown>;
}

/** What a panel template is written with, given by the dashboard generator. */
export interface PanelKit extends RuleKit {
  /** Starts a dashboard row. */
  row(title: string): void;
  /** Adds a panel to the current row (laid out left to right, top to bottom). */
  add(panel: PanelDef): void;
  /** The template variables' selector bodies: `job`, `queue`, `queue` + `model`, `model`. */
  readonly select: Readonly<{ job: string; queue: string; queueModel: string; model: string }>;
  /** `rate(series{selector}[$__rate_interval])`. */
  rate(series: string, selector: string): string;
}

/**
 * One signal, described once. Every field but `name` is optional: a signal
 * may have no threshold of its own, no alert, or no in-process detector
 * (its rules read a counter another part records).
 */
export interface SignalDefinition<S extends Signal = Signal> {
  /** Unique among the definitions; the rule group is `infersignal.<name>`. */
  readonly name: string;
  /** The instruments it records, keyed as in `METRICS`. */
  readonly metrics?: Readonly<Record<string, InstrumentSpec>>;
  /** Bucket boundaries of its histograms, by metric name. */
  readonly buckets?: Readonly<Record<string, readonly number[]>>;
  /** Its threshold group (or groups, for a definition of several related signals). */
  readonly thresholds?: ThresholdGroup | readonly ThresholdGroup[];
  /**
   * Options of its rule templates that are not thresholds (how Prometheus looks across replicas or
   * time, not when the in-process detector fires): each is a generator option of that name, with its
   * default and what the one validator accepts; the templates read it with `kit.option(name)`.
   */
  readonly ruleOptions?: Readonly<Record<string, { readonly default: number; readonly accepts: FieldSpec }>>;
  /** Its alerts, in the order of the rule group (and the docs/rules.md table). */
  readonly alerts?: readonly AlertDefinition[];
  /** The Prometheus rule group, from the thresholds of one generation. */
  rules?(kit: RuleKit): RuleGroupDef;
  /** The dashboard row(s). */
  panels?(kit: PanelKit): void;
  /**
   * The in-process detector, for a definition given to `createMonitor({ signals })`: built once with
   * the signal's context (its thresholds are validated with the rest).
   */
  create?(ctx: SignalContext): S;
}

/**
 * Identity, for typing a definition where it is written
 * (`export const queue = defineSignal({ … })`); its literal types stay, so
 * the signal's code reads `queue.metrics.queueWait`.
 */
export function defineSignal<const D extends SignalDefinition>(definition: D): D {
  return definition;
}

/** The defaults of a threshold group, as `DEFAULT_THRESHOLDS.<group>`. */
export function thresholdDefaults(group: ThresholdGroup): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(group.fields)) out[key] = field.default;
  return out;
}

/** The threshold groups of a definition, none, one or several. */
export function thresholdGroups(definition: SignalDefinition): readonly ThresholdGroup[] {
  const t = definition.thresholds;
  return t === undefined ? [] : 'group' in t ? [t] : t;
}
