/**
 * Grafana dashboard (JSON model, schemaVersion 39) with one row per
 * signal. Queries use the same names as the rules, and the threshold lines
 * drawn on the panels are the thresholds the rules alert on.
 */
import { LABEL } from './names';
import { DS, Layout, SEL, type Dashboard } from './dashboard-layout';
import { addCapacityRow, addConnectionsRow, addRuntimeRow } from './dashboard-runtime';
import { percentileName } from './duration';
import { alertingRules, buildRules, memoryGapRecord, streamRecords } from './rules';
import { resolveOptions, type GeneratorOptions } from './options';

export type { Dashboard, DashboardPanel, DashboardTarget } from './dashboard-layout';

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

/** The dashboard for the given thresholds and options. */
export function buildDashboard(options: GeneratorOptions = {}): Dashboard {
  const o = resolveOptions(options);
  const { metric, bucket } = o.names;
  const t = o.thresholds;
  const rate = (series: string, selector: string) => `rate(${series}{${selector}}[$__rate_interval])`;
  const quantile = (
    q: number,
    key: 'queueWait' | 'timeToFirstToken' | 'timePerOutputToken',
    keys: string,
    selector: string,
  ) => `histogram_quantile(${q}, sum by (le, ${keys}) (${rate(bucket(key), selector)}))`;
  const quantiles = [...new Set([0.5, t.queue.waitQuantile, 0.99])].sort((a, b) => a - b);
  const l = new Layout();

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
    title: 'Oldest waiting request and waits still accruing',
    description:
      'Age of the oldest request still waiting (worst replica per queue) and the time the waiting requests have already spent, summed over replicas: they rise while a queue is stuck, which the wait histogram shows only once requests leave it. Lines: thresholds.queue.ageWarnSeconds and ageCriticalSeconds.',
    w: 24,
    unit: 's',
    lines: [t.queue.ageWarnSeconds, t.queue.ageCriticalSeconds],
    targets: [
      {
        expr: `max by (${LABEL.queue}) (${metric('queueWaitOldest')}{${SEL.queue}})`,
        legend: `oldest {{${LABEL.queue}}}`,
      },
      {
        expr: `sum by (${LABEL.queue}) (${metric('queueWaitPending')}{${SEL.queue}})`,
        legend: `waited so far {{${LABEL.queue}}}`,
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
      '0 OK, 1 WARN, 2 CRITICAL (admit() sheds at CRITICAL, for at least thresholds.queue.shedHoldSeconds and until its levels cleared by their hysteresis).',
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

  addCapacityRow(l, o);

  l.row('Model load and reload');
  const load = (suffix: string) => rate(`${metric('modelLoadDuration')}_${suffix}`, SEL.model);
  l.add({
    title: 'Load / reload duration and baseline',
    description: `Mean duration of the loads in each interval; a spike is a load slower than ${t.modelLoad.spikeFactor}x the baseline (thresholds.modelLoad.spikeFactor) and at least ${t.modelLoad.minSpikeSeconds}s (thresholds.modelLoad.minSpikeSeconds).`,
    w: 12,
    unit: 's',
    targets: [
      {
        expr: `sum by (${LABEL.model}, ${LABEL.loadKind}) (${load('sum')}) / sum by (${LABEL.model}, ${LABEL.loadKind}) (${load('count')})`,
        legend: `{{${LABEL.loadKind}}} {{${LABEL.model}}}`,
      },
      {
        expr: `max by (${LABEL.model}) (${metric('modelLoadBaseline')}{${SEL.model}})`,
        legend: `baseline {{${LABEL.model}}}`,
      },
      {
        expr: `clamp_min(${t.modelLoad.spikeFactor} * max by (${LABEL.model}) (${metric('modelLoadBaseline')}{${SEL.model}}), ${t.modelLoad.minSpikeSeconds})`,
        legend: `spike line {{${LABEL.model}}}`,
      },
    ],
    fieldConfig: { defaults: { custom: { drawStyle: 'points', pointSize: 6 } } },
  });
  l.add({
    title: 'Load spikes and failures',
    w: 12,
    targets: [
      {
        expr: `sum by (${LABEL.model}, ${LABEL.loadKind}) (increase(${metric('modelLoadSpikes')}{${SEL.model}}[$__rate_interval]))`,
        legend: `spikes {{${LABEL.loadKind}}} {{${LABEL.model}}}`,
      },
      {
        expr: `sum by (${LABEL.model}, ${LABEL.outcome}) (increase(${metric('modelLoadDuration')}_count{${SEL.model}, ${LABEL.outcome}!="success"}[$__rate_interval]))`,
        legend: `failed {{${LABEL.model}}}`,
      },
    ],
    fieldConfig: { defaults: { custom: { drawStyle: 'bars' } } },
  });

  l.row('Streams');
  const streams = metric('streams');
  const records = streamRecords();
  l.add({
    title: 'Stream outcome shares',
    w: 8,
    unit: 'percentunit',
    targets: [
      {
        expr: `sum by (${LABEL.outcome}) (${rate(streams, SEL.model)}) / ignoring (${LABEL.outcome}) group_left sum (${rate(streams, SEL.model)})`,
        legend: `{{${LABEL.outcome}}}`,
      },
    ],
    fieldConfig: { defaults: { custom: { stacking: { mode: 'normal' }, fillOpacity: 30 } } },
  });
  l.add({
    title: 'Interrupted share',
    description: `Prometheus share over ${o.streamWindow} (rules) and the in-process sliding window (last ${t.stream.windowSize} streams). Lines: thresholds.stream.interruptedRatio and interruptedRatioCritical.`,
    w: 8,
    unit: 'percentunit',
    lines: [t.stream.interruptedRatio, t.stream.interruptedRatioCritical],
    targets: [
      { expr: `${records.ratio}{${SEL.model}}`, legend: `${o.streamWindow} {{${LABEL.model}}}` },
      {
        expr: `max by (${LABEL.model}) (${metric('streamInterruptedRatio')}{${SEL.model}})`,
        legend: `in-process {{${LABEL.model}}}`,
      },
    ],
  });
  l.add({
    title: 'Time to first token and per output token',
    w: 8,
    unit: 's',
    targets: [
      ...[0.5, 0.95, 0.99].map((q) => ({
        expr: quantile(q, 'timeToFirstToken', LABEL.model, SEL.model),
        legend: `TTFT ${percentileName(q)} {{${LABEL.model}}}`,
      })),
      { expr: quantile(0.95, 'timePerOutputToken', LABEL.model, SEL.model), legend: `TPOT P95 {{${LABEL.model}}}` },
    ],
  });

  l.row('Device memory');
  const bySource = `instance, ${LABEL.memorySource}`;
  l.add({
    title: 'Allocated vs reserved',
    w: 8,
    unit: 'bytes',
    targets: [
      {
        expr: `sum by (${bySource}) (${metric('memoryAllocated')}{${SEL.job}})`,
        legend: `allocated {{instance}} {{${LABEL.memorySource}}}`,
      },
      {
        expr: `sum by (${bySource}) (${metric('memoryReserved')}{${SEL.job}})`,
        legend: `reserved {{instance}} {{${LABEL.memorySource}}}`,
      },
    ],
  });
  l.add({
    title: 'Fragmentation (1 − allocated / reserved)',
    description: 'Line: thresholds.deviceMemory.fragmentation.',
    w: 8,
    unit: 'percentunit',
    lines: [t.deviceMemory.fragmentation],
    targets: [
      {
        expr: `max by (${bySource}) (${metric('memoryFragmentation')}{${SEL.job}})`,
        legend: `{{instance}} {{${LABEL.memorySource}}}`,
      },
    ],
    fieldConfig: { defaults: { min: 0, max: 1 } },
  });
  l.add({
    title: 'Reserved − allocated gap and its growth',
    description: `The gap (left) and its growth rate: Prometheus deriv over ${o.driftWindow} (rules) and the in-process least-squares slope.`,
    w: 8,
    unit: 'bytes',
    targets: [
      { expr: `${memoryGapRecord()}{${SEL.job}}`, legend: `gap {{instance}} {{${LABEL.memorySource}}}` },
      { expr: `deriv(${memoryGapRecord()}{${SEL.job}}[${o.driftWindow}])`, legend: `growth/s (deriv) {{instance}}` },
      {
        expr: `max by (${bySource}) (${metric('memoryGapGrowth')}{${SEL.job}})`,
        legend: `growth/s (in-process) {{instance}}`,
      },
    ],
  });

  addRuntimeRow(l, o);
  addConnectionsRow(l, o);

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
