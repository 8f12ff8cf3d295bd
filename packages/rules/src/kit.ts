/**
 * The tools a signal definition's rule and panel templates are written
 * with (core's RuleKit and PanelKit), for one generation: its thresholds,
 * naming, windows and runbook location.
 */
import { prometheusLabel } from '@infersignal/core';
import type { SignalDefinition } from '@infersignal/core/signals';

type RuleKit = Parameters<NonNullable<SignalDefinition['rules']>>[0];
type PanelKit = Parameters<NonNullable<SignalDefinition['panels']>>[0];
import { SEL, type Layout } from './dashboard-layout';
import { formatDuration, humanPercent, humanSeconds, percentileName, quantileSuffix } from './duration';
import { prometheusNameFor, specRecordBase } from './names';
import { holdFor, levelHold, type ResolvedOptions } from './options';
import { REPLICA, REPLICA_KEYS, alertRule, by, eventExpr, onReplica, recordName, signalLevel } from './rule-parts';

/** The kit for the templates of `signal`: its alerts take their severity, label and runbook anchor from it. */
export function ruleKit(o: ResolvedOptions, signal: SignalDefinition): RuleKit {
  return {
    thresholds: o.thresholds as unknown as RuleKit['thresholds'],
    metric: (spec) => prometheusNameFor(spec, o.naming),
    bucket: (spec) => `${prometheusNameFor(spec, o.naming)}_bucket`,
    recordBase: specRecordBase,
    recordName: (levelLabels, base, operation) => recordName([...levelLabels], base, operation),
    label: prometheusLabel,
    replicaKeys: REPLICA_KEYS,
    replica: REPLICA,
    by,
    signalLevel: (name, subject) => signalLevel(o, name, [...subject]),
    onReplica,
    eventExpr: (series, keys, window) => eventExpr(series, [...keys], window),
    hold: (seconds) => holdFor(o, seconds),
    levelHold: levelHold(o),
    option: (name) => {
      if (signal.ruleOptions?.[name] === undefined)
        throw new Error(`infersignal-rules: signal ${signal.name} reads option ${name}, which its definition lacks`);
      return o.ruleOptions[name] as number;
    },
    options: {
      rateWindow: o.rateWindow,
      streamWindow: o.streamWindow,
      eventWindow: o.eventWindow,
      driftWindow: o.driftWindow,
      driftWindowSeconds: o.driftWindowSeconds,
    },
    alert: (name, expr, hold, summary, description, keepFiring) => {
      const defined = signal.alerts?.find((a) => a.name === name);
      if (defined === undefined)
        throw new Error(`infersignal-rules: signal ${signal.name} makes alert ${name}, which its definition lacks`);
      return alertRule(o, defined, expr, hold, summary, description, keepFiring);
    },
    formatDuration,
    humanSeconds,
    humanPercent,
    percentileName,
    quantileSuffix,
  };
}

/** A dashboard kit: the rule kit, and the layout the panels go into. */
export function panelKit(o: ResolvedOptions, signal: SignalDefinition, layout: Layout): PanelKit {
  return {
    ...ruleKit(o, signal),
    row: (title) => layout.row(title),
    add: (panel) => layout.add(panel),
    select: SEL,
    rate: (series, selector) => `rate(${series}{${selector}}[$__rate_interval])`,
  };
}
