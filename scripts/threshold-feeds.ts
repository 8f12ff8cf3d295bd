/**
 * The "Which threshold feeds which rule" table of docs/rules.md, derived from the code so it cannot
 * disagree with it. What each threshold feeds is found by changing it: every field of every threshold
 * group is set, one at a time, to other values the validator accepts, and the generated rules, dashboard
 * and Kubernetes manifests are compared with those of the defaults; whatever changed is what the field
 * feeds. What each field is comes from its doc comment in packages/core/src/thresholds.ts (the groups'
 * shapes), and the few sentences with no home in the code from NOTES below.
 *
 * The table fails to render (and so the docs test fails) when a field feeds nothing generated and is not
 * in IN_PROCESS_ONLY, when one listed there does feed something, when a field has neither a doc comment
 * nor a note, when no other value of it passes the validator, or when NOTES or IN_PROCESS_ONLY names a
 * field that does not exist.
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { resolveThresholds } from '../packages/core/src/index';
import type { SignalDefinition } from '../packages/core/src/signals';
import { buildDashboard, buildKubernetesManifests, buildRules } from '../packages/rules/src/index';
import type { GeneratorOptions } from '../packages/rules/src/options';

/**
 * What a field also means that neither its doc comment nor the generated output says, by `group.field`:
 * the sentence is added to its row.
 */
export const NOTES: Readonly<Record<string, string>> = {
  'queue.waitQuantile': 'the quantile names the recorded series: 0.9 → `…:p90`',
  'queue.forSeconds': '0 → the 5m default hold',
  'queue.keepFiringSeconds':
    'a missed scrape does not resolve the page either, and the CRITICAL page keeps for the same time, so one episode is one page',
  'queue.waitWindowSeconds': 'the `rate()` window of the rules is max(waitWindowSeconds, 1m)',
  'capacity.forSeconds': 'the rules add no `for:` of their own: the level they read was held already',
  'capacity.keepFiringSeconds':
    'Prometheus keeps an alert while fewer than that many seconds have passed since the first evaluation that found it false, so at a 15 s evaluation interval 10 s bridges one evaluation: a one-scrape dip of ρ or of the level does not resolve the page (promtool cases in `promtool-unit.test.ts`); to bridge more, set it above your interval',
  'heap.exhaustionWarnSeconds':
    'the hold is 30 s: core already asks for a trend over several major GCs, and a small heap leaking fast lives for seconds',
};

/**
 * Fields no generated rule, panel or manifest reads, by `group.field`, and why: the in-process detectors
 * judge with them; Prometheus sees their result (a level, a gauge) instead.
 */
export const IN_PROCESS_ONLY: Readonly<Record<string, string>> = {
  'capacity.rateWindowSeconds': 'the arrival and completion rates behind the utilization gauge',
  'capacity.rateHalfLifeSeconds': 'the arrival-rate EWMA behind the utilization gauge',
  'capacity.serviceWindowSeconds': 'the service time behind the utilization gauge',
  'capacity.backpressure': 'admission',
  'eventLoop.backpressure': 'admission',
  'heap.majorGcs': 'the hold of the heap level; Prometheus sees the ratio of the last major GC at each scrape',
  'modelLoad.baselineSamples': 'the learnt baseline the spike counter compares with',
  'modelLoad.baselineSeconds': 'the fixed baseline the spike counter compares with',
  'deviceMemory.driftWindowSamples': 'the in-process drift fit; Prometheus fits over the drift window',
  'deviceMemory.driftMinR2': 'the in-process drift fit',
  'glitch.windowSeconds': 'the in-process glitch detector',
  'glitch.deltaSeconds': 'the in-process glitch detector',
  'glitch.minSamples': 'the in-process glitch detector',
  'anomaly.window': 'the in-process anomaly detector',
  'anomaly.zScore': 'the in-process anomaly detector',
  'anomaly.floorRatio': 'the in-process anomaly detector',
  'anomaly.forSeconds': 'the in-process anomaly detector',
  'anomaly.hysteresis': 'the in-process anomaly detector',
  'anomaly.keepFiringSeconds': 'the in-process anomaly detector',
  'anomaly.bothDirections': 'the in-process anomaly detector',
};

/** One field's doc comment per `group.field`, from the interfaces of packages/core/src/thresholds.ts. */
export function thresholdDocs(
  path = new URL('../packages/core/src/thresholds.ts', import.meta.url),
): Map<string, string> {
  const source = ts.createSourceFile('thresholds.ts', readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const text = source.getFullText();
  const interfaces = new Map<string, ts.InterfaceDeclaration>();
  source.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node)) interfaces.set(node.name.text, node);
  });
  const docOf = (member: ts.TypeElement) =>
    (ts.getLeadingCommentRanges(text, member.getFullStart()) ?? [])
      .map((range) => text.slice(range.pos, range.end))
      .filter((comment) => comment.startsWith('/**'))
      .map((comment) =>
        comment
          .replace(/^\/\*\*|\*\/$/g, '')
          .split('\n')
          .map((line) => line.replace(/^\s*\*\s?/, '').trim())
          .join(' ')
          .replace(/\s+/g, ' ')
          .trim(),
      )
      .join(' ');
  const docs = new Map<string, string>();
  for (const group of interfaces.get('Thresholds')?.members ?? []) {
    if (!ts.isPropertySignature(group) || !group.type || !ts.isTypeReferenceNode(group.type)) continue;
    const shape = interfaces.get(group.type.typeName.getText(source));
    for (const member of shape?.members ?? [])
      if (ts.isPropertySignature(member))
        docs.set(`${group.name.getText(source)}.${member.name.getText(source)}`, docOf(member));
  }
  return docs;
}

/** Other values to try for a field, in order; those the validator rejects are passed over. */
function candidates(value: unknown): unknown[] {
  if (typeof value === 'boolean') return [!value];
  if (typeof value === 'number') {
    const scaled = [10, 0.1, 1.1, 0.9].map((f) => value * f);
    const shifted = [value + 1, value - 1, value === 0 ? 30 : value];
    const all = [...scaled, ...shifted].map((v) => (Number.isInteger(value) ? Math.round(v) : v));
    return [...new Set(all)].filter((v) => v !== value);
  }
  if (value && typeof value === 'object') return [{ 'some-model': 7 }];
  return [];
}

/** What one generation writes, split into the parts a change is reported by. */
function generated(options: GeneratorOptions): Map<string, string> {
  const parts = new Map<string, string>();
  for (const group of buildRules(options).groups)
    for (const rule of group.rules) {
      if ('record' in rule) {
        parts.set(`record ${group.name} ${group.rules.indexOf(rule)}`, JSON.stringify(rule));
        continue;
      }
      const name = rule.alert.replace(/^InferSignal/, '');
      parts.set(`alert ${name}\0expression`, rule.expr);
      parts.set(`alert ${name}\0\`for:\``, rule.for ?? '');
      parts.set(`alert ${name}\0\`keep_firing_for:\``, rule.keep_firing_for ?? '');
      parts.set(`alert ${name}\0description`, JSON.stringify(rule.annotations));
    }
  // By position: a threshold may change a panel's title (the wait quantile names its line).
  buildDashboard(options).panels.forEach((panel, index) => {
    if (panel.type !== 'row') parts.set(`panel ${index}`, JSON.stringify(panel));
  });
  for (const [file, text] of Object.entries(buildKubernetesManifests(options))) {
    // The rule file is in the manifests too; the rules are reported above.
    if (!file.startsWith('prometheus-rule')) parts.set(`manifest ${file}`, text);
  }
  return parts;
}

interface Feeds {
  /** Alert name (without `InferSignal`) → what of it changes: expression, `for:`, … */
  alerts: Map<string, Set<string>>;
  recorded: boolean;
  panels: Set<string>;
  manifests: Set<string>;
  /** How many other values were tried (0: none the validator accepts, so its effect is unknown). */
  tried: number;
}

let coreFeeds: Map<string, Feeds> | undefined;

/** What each threshold field feeds in the generated output, by `group.field`, in the groups' order. */
export function thresholdFeeds(signals?: readonly SignalDefinition[]): Map<string, Feeds> {
  if (signals === undefined) coreFeeds ??= feedsOf(undefined);
  return signals === undefined ? (coreFeeds as Map<string, Feeds>) : feedsOf(signals);
}

function feedsOf(signals: readonly SignalDefinition[] | undefined): Map<string, Feeds> {
  const defaults = resolveThresholds({}, 'thresholds', signals ?? []) as unknown as Record<
    string,
    Record<string, unknown>
  >;
  // In the order of the groups' shapes, then any group only a definition passed in has.
  const order = [...thresholdDocs().keys()];
  const rank = (key: string) => (order.includes(key) ? order.indexOf(key) : order.length);
  const fields = Object.entries(defaults)
    .flatMap(([group, values]) => Object.entries(values).map(([field, value]) => ({ group, field, value })))
    .sort((a, b) => rank(`${a.group}.${a.field}`) - rank(`${b.group}.${b.field}`));
  const base = generated({ signals });
  const titles = buildDashboard({ signals }).panels.map((panel) => panel.title);
  const feeds = new Map<string, Feeds>();
  const note = (found: Feeds, key: string) => {
    const [kind, ...rest] = key.split(' ');
    const name = rest.join(' ');
    if (kind === 'alert') {
      const [alert, part] = name.split('\0');
      if (!found.alerts.has(alert)) found.alerts.set(alert, new Set());
      found.alerts.get(alert)?.add(part);
    } else if (kind === 'record') found.recorded = true;
    else if (kind === 'panel') found.panels.add(titles[Number(name)]);
    else found.manifests.add(name);
  };
  for (const { group, field, value } of fields) {
    const found: Feeds = { alerts: new Map(), recorded: false, panels: new Set(), manifests: new Set(), tried: 0 };
    // What names the field without showing its value (`over thresholds.capacity.trendWindowSeconds`).
    const named = new RegExp(`thresholds\\.${group}\\.${field}\\b`);
    for (const [key, text] of base) if (named.test(text)) note(found, key);
    // Two accepted values, a large step first: a window floored at 1m shows only past its floor.
    for (const candidate of candidates(value)) {
      if (found.tried === 2) break;
      const thresholds = { [group]: { [field]: candidate } };
      try {
        resolveThresholds(thresholds, 'thresholds', signals ?? []);
      } catch {
        continue;
      }
      found.tried++;
      const changed = generated({ signals, thresholds });
      for (const key of new Set([...base.keys(), ...changed.keys()])) {
        if (base.get(key) !== changed.get(key)) note(found, key);
      }
    }
    feeds.set(`${group}.${field}`, found);
  }
  return feeds;
}

/** The header of the table in docs/rules.md; the table runs to the first blank line. */
export const THRESHOLD_TABLE_HEADER =
  '| threshold (default) | what it is | alerts it feeds (what of them) | also sets |\n|---|---|---|---|\n';

const PART_ORDER = ['expression', '`for:`', '`keep_firing_for:`', 'description'];

/** The table: a row per field that feeds generated output, then the fields only the detectors read. */
export function renderThresholdTable(signals?: readonly SignalDefinition[]): string {
  const defaults = resolveThresholds({}, 'thresholds', signals ?? []) as unknown as Record<
    string,
    Record<string, unknown>
  >;
  const docs = thresholdDocs();
  const feeds = thresholdFeeds(signals);
  const problems: string[] = [];
  for (const key of [...Object.keys(NOTES), ...Object.keys(IN_PROCESS_ONLY)])
    if (!feeds.has(key)) problems.push(`${key}: named in scripts/threshold-feeds.ts but no threshold field`);
  const rows: string[] = [];
  const inProcess: string[] = [];
  for (const [key, found] of feeds) {
    const doc = docs.get(key);
    if (!doc && !NOTES[key])
      problems.push(`${key}: no doc comment in packages/core/src/thresholds.ts, nor a note in NOTES`);
    if (found.tried === 0) problems.push(`${key}: no other value the validator accepts was found to try`);
    const feedsNothing =
      found.alerts.size === 0 && !found.recorded && found.panels.size === 0 && found.manifests.size === 0;
    if (feedsNothing && !(key in IN_PROCESS_ONLY))
      problems.push(`${key}: feeds no rule, panel or manifest; add it to IN_PROCESS_ONLY with the reason, or use it`);
    if (!feedsNothing && key in IN_PROCESS_ONLY)
      problems.push(`${key}: listed in IN_PROCESS_ONLY but feeds the generated output`);
    if (feedsNothing) {
      inProcess.push(`\`${key}\` (${IN_PROCESS_ONLY[key]})`);
      continue;
    }
    const [group, field] = key.split('.');
    const value = defaults[group]?.[field];
    const shown = typeof value === 'object' ? '' : ` (${value})`;
    const alerts = [...found.alerts]
      .map(([alert, parts]) => `${alert} (${PART_ORDER.filter((p) => parts.has(p)).join(', ')})`)
      .join(', ');
    const also = [
      found.recorded ? 'recording rules' : '',
      found.panels.size ? `dashboard: ${[...found.panels].map((p) => `*${p}*`).join(', ')}` : '',
      found.manifests.size ? `Kubernetes: ${[...found.manifests].map((m) => `\`${m}\``).join(', ')}` : '',
    ].filter(Boolean);
    const note = NOTES[key] ? `${NOTES[key].replace(/^./, (c) => c.toUpperCase())}.` : '';
    rows.push(
      `| \`${key}\`${shown} | ${[doc, note].filter(Boolean).join(' ')} | ${alerts || '–'} | ${also.join('; ') || '–'} |`,
    );
  }
  if (problems.length) throw new Error(`the threshold table of docs/rules.md:\n${problems.join('\n')}`);
  return `${THRESHOLD_TABLE_HEADER}${rows.join('\n')}\n| in process only | ${inProcess.join(', ')} | – | – |\n`;
}

/** `text` (docs/rules.md) with its threshold table replaced by `table`. */
export function withThresholdTable(text: string, table: string): string {
  const start = text.indexOf(THRESHOLD_TABLE_HEADER);
  if (start === -1) throw new Error('docs/rules.md: the threshold table header is missing');
  const end = text.indexOf('\n\n', start);
  return `${text.slice(0, start)}${table}${text.slice(end + 1)}`;
}
