/**
 * `@infersignal/rules`: the Prometheus rules, Grafana dashboard, Alertmanager configuration and Kubernetes
 * manifests generated from core's signal definitions, as objects (`build*`) or text (`render*`), and the
 * `infersignal-rules` command (`runRulesCli`, which `infersignal rules` loads).
 */
import { runRulesCli as runCommand } from './cli';

export { buildRules, renderRules } from './rules';
export type { RuleFile } from './rules';
export { buildDashboard, renderDashboard } from './dashboard';
export type { Dashboard } from './dashboard';
export { buildAlertmanagerConfig, renderAlertmanagerConfig } from './alertmanager';
export type { AlertmanagerOptions } from './alertmanager';
export { buildKubernetesManifests } from './kubernetes';
export type { KubernetesOptions } from './kubernetes';
export type { GeneratorOptions } from './options';

/**
 * The `infersignal-rules` command on its arguments (`['rules', '--out', 'rules.yml']`), writing to stdout and
 * stderr; resolves to the exit code.
 */
export function runRulesCli(argv: readonly string[]): Promise<number> {
  return runCommand(argv);
}
