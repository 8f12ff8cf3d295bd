export {
  buildRules,
  renderRules,
  alertingRules,
  queueWaitQuantileRecord,
  memoryGapRecord,
  streamRecords,
  RUNBOOK_ANCHORS,
  GENERATED_HEADER,
} from './rules';
export type { RuleFile, RuleGroup, AlertingRule, RecordingRule, Severity } from './rules';
export { buildDashboard, renderDashboard, panelQueries } from './dashboard';
export type { Dashboard, DashboardPanel, DashboardTarget } from './dashboard';
export {
  buildAlertmanagerConfig,
  renderAlertmanagerConfig,
  ALERTMANAGER_RECEIVER,
  PLACEHOLDER_WEBHOOK_URL,
} from './alertmanager';
export type { AlertmanagerOptions } from './alertmanager';
export { ENGINE_TYPE_LABEL, buildKubernetesManifests, engineConfig } from './kubernetes';
export type { KubernetesOptions } from './kubernetes';
export { runRulesCli, USAGE } from './cli';
export type { CliIo } from './cli';
export { resolveOptions, DEFAULT_RUNBOOK_URL, DEFAULT_FOR_SECONDS } from './options';
export type { GeneratorOptions } from './options';
export { RULE_METRICS, LABEL, NAMINGS, prometheusNameFor, metricNames } from './names';
export type { Naming, MetricNames } from './names';
export { parseDuration, formatDuration } from './duration';
