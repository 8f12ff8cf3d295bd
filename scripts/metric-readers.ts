/**
 * Who reads each instrument: the generated Prometheus rules (alerting and
 * recording), the generated Grafana dashboard (a panel's query or a
 * template variable), the generated Kubernetes manifests (the KEDA and HPA
 * scalers, the endpoint picker's config) and docs/runbook.md (a step
 * naming the series), found by the instrument's Prometheus name in what
 * the generators return and in the runbook's text. docs/metrics.md shows
 * it in its "read by" column, and a test holds every instrument exported
 * by default to having a reader.
 */
import { readFileSync } from 'node:fs';
import { prometheusName, type InstrumentSpec } from '../packages/core/src/index';
import { buildDashboard, buildKubernetesManifests, buildRules } from '../packages/rules/src/index';

export interface Readers {
  rules: string[];
  dashboard: string[];
  kubernetes: string[];
  runbook: string[];
}

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A query or text that names the series of `name` (a histogram's `_bucket`, `_sum`, `_count` too). */
const seriesPattern = (name: string) =>
  new RegExp(`(?<![a-zA-Z0-9_:])${literal(name)}(_bucket|_sum|_count)?(?![a-zA-Z0-9_:])`);

interface Section {
  title: string;
  text: string;
}

/** docs/runbook.md by `## ` section, each with its title (the part before ` — `). */
function runbookSections(): Section[] {
  const text = readFileSync(new URL('../docs/runbook.md', import.meta.url), 'utf8');
  const sections: Section[] = [{ title: 'introduction', text: '' }];
  for (const line of text.split('\n')) {
    if (line.startsWith('## ')) sections.push({ title: line.slice(3).split(' — ')[0]!.trim(), text: '' });
    else sections.at(-1)!.text += `${line}\n`;
  }
  return sections;
}

/** The readers of each of `specs`, by instrument name. */
export function metricReaders(specs: readonly InstrumentSpec[]): Map<string, Readers> {
  const rules = buildRules().groups.flatMap((group) =>
    group.rules.map((rule) => ({ name: 'alert' in rule ? rule.alert : rule.record, expr: rule.expr })),
  );
  const dashboard = buildDashboard();
  const panels = dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ name: panel.title, expr: target.expr })),
  );
  const variables = (
    (dashboard as { templating?: { list?: { name: string; query: { query: string } }[] } }).templating?.list ?? []
  ).map((v) => ({ name: `$${v.name} variable`, expr: v.query.query }));
  // The PrometheusRule manifest holds the rules above; the other manifests read series of their own.
  const manifests = Object.entries(buildKubernetesManifests())
    .filter(([file]) => file !== 'prometheus-rule.yaml')
    .map(([file, text]) => ({ name: file, expr: text }));
  const sections = runbookSections();
  const out = new Map<string, Readers>();
  for (const spec of specs) {
    const pattern = seriesPattern(prometheusName(spec));
    const named = (list: { name: string; expr: string }[]) => [
      ...new Set(list.filter((x) => pattern.test(x.expr)).map((x) => x.name)),
    ];
    out.set(spec.name, {
      rules: named(rules),
      dashboard: named([...panels, ...variables]),
      kubernetes: named(manifests),
      runbook: sections.filter((s) => pattern.test(s.text)).map((s) => s.title),
    });
  }
  return out;
}

/** `readers` as one table cell: each kind with its first two names. */
export function readersText(readers: Readers): string {
  const list = (kind: string, names: string[]) =>
    names.length === 0
      ? []
      : [`${kind}: ${names.slice(0, 2).join(', ')}${names.length > 2 ? ` (+${names.length - 2})` : ''}`];
  const parts = [
    ...list('rules', readers.rules),
    ...list('dashboard', readers.dashboard),
    ...list('kubernetes', readers.kubernetes),
    ...list('runbook', readers.runbook),
  ];
  return parts.length > 0 ? parts.join('; ') : '–';
}
