/**
 * Grafana JSON model pieces: panel and target types, the template-variable
 * selectors and a left-to-right, top-to-bottom grid layout. The rows
 * themselves are the signal definitions' panel templates (dashboard.ts
 * adds the alerts row).
 */
import { LABEL } from './names';

interface DashboardTarget {
  refId: string;
  expr: string;
  legendFormat: string;
  datasource: { type: 'prometheus'; uid: string };
  format?: 'time_series' | 'heatmap' | 'table';
  instant?: boolean;
  range?: boolean;
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: 'prometheus'; uid: string };
  description?: string;
  targets?: DashboardTarget[];
  fieldConfig?: Record<string, unknown>;
  options?: Record<string, unknown>;
  collapsed?: boolean;
  panels?: DashboardPanel[];
}

export interface Dashboard {
  uid: string;
  title: string;
  tags: string[];
  schemaVersion: number;
  [key: string]: unknown;
  panels: DashboardPanel[];
}

// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's own template variable, not a JS template.
export const DS = { type: 'prometheus', uid: '${datasource}' } as const;

/** Selector bodies with the template variables (model and queue are multi-value regexes). */
export const SEL = {
  job: `job=~"$job"`,
  queue: `job=~"$job", ${LABEL.queue}=~"$queue"`,
  queueModel: `job=~"$job", ${LABEL.queue}=~"$queue", ${LABEL.model}=~"$model"`,
  model: `job=~"$job", ${LABEL.model}=~"$model"`,
};

export interface PanelSpec {
  type?: string;
  title: string;
  description?: string;
  w: number;
  h?: number;
  unit?: string;
  /** Threshold lines (warning, critical) drawn on the panel. */
  lines?: number[];
  /** The value is bad below the (single) line, e.g. time left to saturation. */
  lowIsBad?: boolean;
  targets: { expr: string; legend: string; format?: DashboardTarget['format']; instant?: boolean }[];
  fieldConfig?: Record<string, unknown>;
  options?: Record<string, unknown>;
}

function thresholdSteps(lines: number[] = [], lowIsBad = false): Record<string, unknown> {
  if (lowIsBad)
    return {
      mode: 'absolute',
      steps: [{ color: 'orange', value: null }, ...lines.map((value) => ({ color: 'green', value }))],
    };
  const colors = ['orange', 'red'];
  return {
    mode: 'absolute',
    steps: [{ color: 'green', value: null }, ...lines.map((value, i) => ({ color: colors[i] ?? 'red', value }))],
  };
}

export class Layout {
  readonly panels: DashboardPanel[] = [];
  private id = 1;
  private x = 0;
  private y = 0;
  private rowHeight = 0;

  row(title: string): void {
    this.newLine();
    this.panels.push({
      id: this.id++,
      type: 'row',
      title,
      collapsed: false,
      gridPos: { x: 0, y: this.y, w: 24, h: 1 },
      panels: [],
    });
    this.y += 1;
  }

  add(spec: PanelSpec): void {
    const h = spec.h ?? 8;
    if (this.x + spec.w > 24) this.newLine();
    const type = spec.type ?? 'timeseries';
    const refIds = 'ABCDEFGHIJ';
    const custom =
      type === 'timeseries'
        ? { thresholdsStyle: { mode: spec.lines ? 'line' : 'off' }, ...((spec.fieldConfig?.custom as object) ?? {}) }
        : (spec.fieldConfig?.custom as object | undefined);
    this.panels.push({
      id: this.id++,
      type,
      title: spec.title,
      ...(spec.description ? { description: spec.description } : {}),
      datasource: DS,
      gridPos: { x: this.x, y: this.y, w: spec.w, h },
      targets: spec.targets.map((t, i) => ({
        refId: refIds[i],
        datasource: DS,
        expr: t.expr,
        legendFormat: t.legend,
        ...(t.format ? { format: t.format } : {}),
        ...(t.instant ? { instant: true, range: false } : {}),
      })),
      fieldConfig: {
        defaults: {
          ...(spec.unit ? { unit: spec.unit } : {}),
          thresholds: thresholdSteps(spec.lines, spec.lowIsBad),
          ...(custom ? { custom } : {}),
          ...((spec.fieldConfig?.defaults as object) ?? {}),
        },
        overrides: [],
      },
      options: spec.options ?? { legend: { displayMode: 'list', placement: 'bottom' }, tooltip: { mode: 'multi' } },
    });
    this.x += spec.w;
    this.rowHeight = Math.max(this.rowHeight, h);
  }

  private newLine(): void {
    if (this.x > 0) this.y += this.rowHeight;
    this.x = 0;
    this.rowHeight = 0;
  }
}
