/**
 * Grafana dashboard (JSON model, schemaVersion 39) with one row per
 * signal. Queries use the same names as the rules, and the threshold lines
 * drawn on the panels are the thresholds the rules alert on.
 */
import { LABEL } from './names';
import { DS, Layout, SEL, type Dashboard } from './dashboard-layout';
import { panelKit } from './kit';
import { addCapacityRow } from './dashboard-runtime';
import { percentileName } from './duration';
import { alertingRules, buildRules } from './rules';
import { resolveOptions, type GeneratorOptions, type ResolvedOptions } from './options';

export type { Dashboard } from './dashboard-layout';

function variable(name: string, label: string, query: string, multi: boolean): Record<string, unknown> {
  return {
    name,
    label,
    type: 'query',
    datasource: DS,
    // The query object alone: Grafana's schema has no `definition` (an older editor's display copy).
    query: { query, refId: `${name}-variable` },
    refresh: 2,
    includeAll: true,
    multi,
    allValue: '.*',
    current: { selected: true, text: ['All'], value: ['$__all'] },
    sort: 1,
    hide: 0,
  };
}

const rate = (series: string, selector: string) => `rate(${series}{${selector}}[$__rate_interval])`;

function addQueueRows(l: Layout, o: ResolvedOptions): void {
  const { metric, bucket } = o.names;
  const t = o.thresholds;
  const quantile = (q: number, key: 'queueWait', keys: string, selector: string) =>
    `histogram_quantile(${q}, sum by (le, ${keys}) (${rate(bucket(key), selector)}))`;
  const quantiles = [...new Set([0.5, t.queue.waitQuantile, 0.99])].sort((a, b) => a - b);
  l.row('Queue wait');
  l.add({
    type: 'heatmap',
    title: 'Queue wait distribution',
    description: 'Time between arrival and the start of inference, per histogram bucket.',
    w: 12,
    unit: 's',
    targets: [
      { expr: `sum by (le) (${rate(bucket('queueWait'), SEL.queueModel)})`, legend: '{{le}}', format: 'heatmap' },
    ],
    options: { calculate: false, yAxis: { unit: 's' }, cellGap: 1, color: { scheme: 'Oranges', mode: 'scheme' } },
  });
  l.add({
    title: `Queue wait ${quantiles.map(percentileName).join(' / ')}`,
    description: `Lines: ${percentileName(t.queue.waitQuantile)} warning (thresholds.queue.waitWarnSeconds) and critical (waitCriticalSeconds).`,
    w: 12,
    unit: 's',
    lines: [t.queue.waitWarnSeconds, t.queue.waitCriticalSeconds],
    targets: quantiles.map((q) => ({
      expr: quantile(q, 'queueWait', `${LABEL.queue}, ${LABEL.model}`, SEL.queueModel),
      legend: `${percentileName(q)} {{${LABEL.queue}}} {{${LABEL.model}}}`,
    })),
  });

  l.add({
    title: 'Oldest waiting request',
    description:
      'Age of the oldest request still waiting, worst replica per queue: it rises while a queue is stuck, which the wait histogram shows only once requests leave it. Lines: thresholds.queue.ageWarnSeconds and ageCriticalSeconds.',
    w: 12,
    unit: 's',
    lines: [t.queue.ageWarnSeconds, t.queue.ageCriticalSeconds],
    targets: [
      {
        expr: `max by (${LABEL.queue}) (${metric('queueWaitOldest')}{${SEL.queue}})`,
        legend: `oldest {{${LABEL.queue}}}`,
      },
    ],
  });
  l.add({
    title: 'Waits still accruing, per slot',
    description:
      'Worst replica per queue: the time the requests still waiting have already waited, summed, over the requests in flight (while requests wait, every slot is busy: the slots). Lines: thresholds.queue.pendingWaitWarnSeconds and pendingWaitCriticalSeconds.',
    w: 12,
    unit: 's',
    lines: [t.queue.pendingWaitWarnSeconds, t.queue.pendingWaitCriticalSeconds],
    targets: [
      {
        expr: `max by (${LABEL.queue}) (${metric('queueWaitPending')}{${SEL.queue}} / clamp_min(${metric('queueInFlight')}{${SEL.queue}}, 1))`,
        legend: `waited so far per slot {{${LABEL.queue}}}`,
      },
    ],
  });
  l.add({
    title: 'LLM token backlog',
    description:
      'Per LLM queue, summed over replicas: prompt tokens of the requests still waiting (input) and output tokens still owed to the running ones, their max_tokens less what they produced (output).',
    w: 12,
    unit: 'short',
    targets: [
      {
        expr: `sum by (${LABEL.queue}, ${LABEL.tokenType}) (${metric('queueTokensPending')}{${SEL.queue}})`,
        legend: `{{${LABEL.tokenType}}} {{${LABEL.queue}}}`,
      },
    ],
  });
  l.add({
    title: 'LLM token backlog drain time',
    description:
      'Worst replica per queue: (output tokens owed + max_tokens of the waiting requests) / the output rate the queue has been serving at; 0 when none waits. Lines: thresholds.queue.tokenDrainWarnSeconds and tokenDrainCriticalSeconds.',
    w: 12,
    unit: 's',
    lines: [t.queue.tokenDrainWarnSeconds, t.queue.tokenDrainCriticalSeconds],
    targets: [
      {
        expr: `max by (${LABEL.queue}) (${metric('queueTokensDrainTime')}{${SEL.queue}})`,
        legend: `{{${LABEL.queue}}}`,
      },
    ],
  });

  l.row('Queue occupancy and backpressure');
  l.add({
    title: 'Occupancy (waiting + in flight) / capacity',
    description: 'Worst replica per queue. Lines: thresholds.queue.occupancyWarn and occupancyCritical.',
    w: 8,
    unit: 'percentunit',
    lines: [t.queue.occupancyWarn, t.queue.occupancyCritical],
    targets: [
      { expr: `max by (${LABEL.queue}) (${metric('queueOccupancy')}{${SEL.queue}})`, legend: `{{${LABEL.queue}}}` },
    ],
    fieldConfig: { defaults: { min: 0, max: 1 } },
  });
  l.add({
    title: 'Backpressure level',
    description:
      "0 OK, 1 WARN, 2 CRITICAL (a shedding episode: admit() turns away the requests past the queue's targets, until it has turned none away for thresholds.queue.shedHoldSeconds and its levels cleared by their hysteresis).",
    w: 8,
    lines: [1, 2],
    targets: [
      { expr: `max by (${LABEL.queue}) (${metric('backpressureLevel')}{${SEL.queue}})`, legend: `{{${LABEL.queue}}}` },
    ],
    fieldConfig: {
      defaults: {
        min: 0,
        max: 2,
        mappings: [
          {
            type: 'value',
            options: {
              '0': { text: 'OK', color: 'green' },
              '1': { text: 'WARN', color: 'orange' },
              '2': { text: 'CRITICAL', color: 'red' },
            },
          },
        ],
        custom: { drawStyle: 'line', lineInterpolation: 'stepAfter' },
      },
    },
  });
  l.add({
    title: 'Requests by outcome',
    w: 8,
    unit: 'reqps',
    targets: [
      {
        expr: `sum by (${LABEL.outcome}) (${rate(metric('requests'), SEL.queueModel)})`,
        legend: `{{${LABEL.outcome}}}`,
      },
      {
        expr: `sum by (${LABEL.queue}) (${metric('queueWaiting')}{${SEL.queue}})`,
        legend: `waiting {{${LABEL.queue}}}`,
      },
      {
        expr: `sum by (${LABEL.queue}) (${metric('queueInFlight')}{${SEL.queue}})`,
        legend: `in flight {{${LABEL.queue}}}`,
      },
    ],
  });
}

/** The rows of the panel templates still kept here, by signal definition name (the others are the definitions' own). */
const TEMPLATES: Record<string, (l: Layout, o: ResolvedOptions) => void> = {
  queue: addQueueRows,
  capacity: addCapacityRow,
};

/** The dashboard for the given thresholds and options: the rows of each signal definition, then the alerts. */
export function buildDashboard(options: GeneratorOptions = {}): Dashboard {
  const o = resolveOptions(options);
  const { metric, bucket } = o.names;
  const l = new Layout();
  for (const signal of o.signals) {
    if (signal.panels) signal.panels(panelKit(o, signal, l));
    else TEMPLATES[signal.name]?.(l, o);
  }

  l.row('Alerts');
  const alertNames = [...new Set(alertingRules(buildRules(options)).map((rule) => rule.alert))].join('|');
  l.add({
    type: 'table',
    title: 'InferSignal alerts firing',
    w: 12,
    targets: [
      {
        expr: `ALERTS{alertstate="firing", alertname=~"${alertNames}", ${SEL.job}}`,
        legend: '{{alertname}}',
        format: 'table',
        instant: true,
      },
    ],
    options: { showHeader: true },
  });
  l.add({
    title: 'In-process signal levels and internal errors',
    description: '0 ok, 1 warn, 2 critical, as core judges them; internal errors caught by InferSignal.',
    w: 12,
    targets: [
      {
        expr: `max by (${LABEL.signal}, ${LABEL.queue}, ${LABEL.model}) (${metric('signalLevel')}{${SEL.job}})`,
        legend: `{{${LABEL.signal}}} {{${LABEL.queue}}} {{${LABEL.model}}}`,
      },
      {
        expr: `sum by (${LABEL.errorSource}) (increase(${metric('internalErrors')}{${SEL.job}}[$__rate_interval]))`,
        legend: `errors {{${LABEL.errorSource}}}`,
      },
    ],
  });

  return {
    uid: 'infersignal-overview',
    title: 'InferSignal early-warning signals',
    description: 'Generated by @infersignal/rules from the InferSignal thresholds; regenerate instead of editing.',
    tags: ['infersignal', 'inference'],
    timezone: 'browser',
    editable: true,
    graphTooltip: 1,
    refresh: '30s',
    time: { from: 'now-1h', to: 'now' },
    schemaVersion: 39,
    version: 1,
    annotations: {
      list: [
        {
          builtIn: 1,
          datasource: { type: 'grafana', uid: '-- Grafana --' },
          enable: true,
          hide: true,
          iconColor: 'rgba(0, 211, 255, 1)',
          name: 'Annotations & Alerts',
          type: 'dashboard',
        },
      ],
    },
    templating: {
      list: [
        {
          name: 'datasource',
          label: 'Data source',
          type: 'datasource',
          query: 'prometheus',
          // No `current`: Grafana selects the default Prometheus data source (an empty one fails the schema).
          hide: 0,
          refresh: 1,
        },
        variable('job', 'Job', `label_values(${metric('queueCapacity')}, job)`, true),
        variable('queue', 'Queue', `label_values(${metric('queueCapacity')}{job=~"$job"}, ${LABEL.queue})`, true),
        variable('model', 'Model', `label_values(${bucket('queueWait')}{job=~"$job"}, ${LABEL.model})`, true),
      ],
    },
    panels: l.panels,
  };
}

/** Every PromQL query of a dashboard, with the title of its panel. */
export function panelQueries(dashboard: Dashboard): { panel: string; expr: string }[] {
  return dashboard.panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
  );
}

/** JSON text of the dashboard (Grafana → Dashboards → Import, or file provisioning). */
export function renderDashboard(options: GeneratorOptions = {}): string {
  return `${JSON.stringify(buildDashboard(options), null, 2)}\n`;
}
