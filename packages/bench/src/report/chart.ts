import type { TimelinePoint } from '../types';
import { formatAt, formatNumber, formatValue } from './format';
import type { AlertMarker, FailureMarker, Headline, LaneView, ReportModel, RunView } from './model';
import { linearScale, logScale, timeTicks, type Scale } from './scale';
import { el, polyline, round, text } from './xml';

/** Colours: load, latency and error lines; level bands; lane value series. */
const C = {
  ink: '#202124',
  muted: '#5f6368',
  grid: '#e8eaed',
  offered: '#9aa0a6',
  achieved: '#1a73e8',
  p50: '#188038',
  p99: '#a142f4',
  errors: '#d93025',
  shed: '#f29900',
  warn: '#e37400',
  critical: '#c5221f',
  failure: '#202124',
  bands: ['#e6f4ea', '#feefc3', '#fad2cf'],
  noData: '#f1f3f4',
  series: ['#202124', '#1a73e8', '#b31412'],
};
const LEVEL_NAMES = ['OK', 'WARN', 'CRITICAL'];
/** Run b is drawn dashed over run a. */
const DASH: Record<string, string | undefined> = { a: undefined, b: '6 3' };

const WIDTH = 1100;
const LEFT = 170;
const RIGHT = 100;
const PLOT_W = WIDTH - LEFT - RIGHT;
const FONT = 'DejaVu Sans, Verdana, Helvetica, Arial, sans-serif';

/** Rough text width for label placement (no font metrics outside a browser). */
function textWidth(s: string, size = 11): number {
  return s.length * size * 0.64;
}

export interface ChartOptions {
  /** Adds the hover cursor element the HTML page's script moves (no script in a bare SVG). */
  interactive?: boolean;
}

interface Frame {
  x: (seconds: number) => number;
  top: number;
  bottom: number;
}

function dashFor(run: string): string | undefined {
  return run in DASH ? DASH[run] : '2 2';
}

function runTag(model: ReportModel, run: string): string {
  return model.runs.length > 1 ? `${run}: ` : '';
}

function statements(model: ReportModel): { text: string; attrs: Record<string, string> }[] {
  const out: { text: string; attrs: Record<string, string> }[] = [];
  for (const view of model.runs) {
    const tag = model.runs.length > 1 ? `${view.id} (${view.label}): ` : '';
    const { result } = view;
    const failure = model.failures.find((f) => f.run === view.id);
    const headline = model.headlines.find((h) => h.run === view.id);
    if (failure)
      out.push({
        text: `${tag}first failure: ${failure.failure.errorClass} (${failure.failure.detail}) at ${formatAt(failure.failure.atMs)}`,
        attrs: { 'data-statement': 'first-failure', 'data-run': view.id },
      });
    else
      out.push({
        text: `${tag}No request failed during this run: no first-failure marker.`,
        attrs: { 'data-statement': 'no-failures', 'data-run': view.id },
      });
    if (result.alerts.length === 0)
      out.push({
        text: `${tag}No alerts fired during this run.`,
        attrs: { 'data-statement': 'no-alerts', 'data-run': view.id },
      });
    else if (headline)
      out.push({ text: `${tag}${headline.lead.text}`, attrs: { 'data-statement': 'lead-time', 'data-run': view.id } });
    else
      out.push({
        text: `${tag}${result.alerts.length} alert${result.alerts.length === 1 ? '' : 's'} fired; no request failed, so there is no lead time.`,
        attrs: { 'data-statement': 'alerts-without-failure', 'data-run': view.id },
      });
  }
  return out;
}

function header(model: ReportModel, y: number): { svg: string; height: number } {
  const first = model.runs[0].result;
  const title =
    model.runs.length > 1
      ? `InferSignal bench: ${model.runs.map((r) => `${r.id} = ${r.label}`).join(' vs ')}`
      : `InferSignal bench: ${first.target} (${first.kind}), ${(first.durationMs / 1000).toFixed(1)} s`;
  const parts = [text('text', { x: 12, y: y + 16, 'font-size': 15, 'font-weight': 'bold', fill: C.ink }, title)];
  let line = y + 36;
  for (const s of statements(model)) {
    const weight = s.attrs['data-statement'] === 'lead-time' ? 'bold' : 'normal';
    parts.push(
      text('text', { x: 12, y: line, 'font-size': 12, 'font-weight': weight, fill: C.ink, ...s.attrs }, s.text),
    );
    line += 16;
  }
  // Band legend.
  let lx = 12;
  const ly = line + 2;
  const legend = [...LEVEL_NAMES.map((name, i) => [name, C.bands[i]]), ['no data', C.noData]];
  for (const [name, fill] of legend) {
    parts.push(el('rect', { x: lx, y: ly - 9, width: 12, height: 10, fill, stroke: '#bdc1c6', 'stroke-width': 0.5 }));
    parts.push(text('text', { x: lx + 16, y: ly, 'font-size': 10, fill: C.muted }, name));
    lx += 24 + textWidth(name, 10);
  }
  const markers: [string, string, string | undefined][] = [
    ['alert WARN', C.warn, '3 2'],
    ['alert CRITICAL', C.critical, '3 2'],
    ['first failure', C.failure, undefined],
  ];
  for (const [name, stroke, dash] of markers) {
    parts.push(
      el('line', { x1: lx, y1: ly - 10, x2: lx, y2: ly + 1, stroke, 'stroke-width': 2, 'stroke-dasharray': dash }),
    );
    parts.push(text('text', { x: lx + 5, y: ly, 'font-size': 10, fill: C.muted }, name));
    lx += 18 + textWidth(name, 10);
  }
  if (model.runs.length > 1) {
    for (const r of model.runs) {
      parts.push(
        el('line', {
          x1: lx,
          y1: ly - 4,
          x2: lx + 22,
          y2: ly - 4,
          stroke: C.ink,
          'stroke-width': 1.5,
          'stroke-dasharray': dashFor(r.id),
        }),
      );
      parts.push(text('text', { x: lx + 26, y: ly, 'font-size': 10, fill: C.muted }, `${r.id}: ${r.label}`));
      lx += 36 + textWidth(`${r.id}: ${r.label}`, 10);
    }
  }
  return { svg: parts.join(''), height: ly + 10 - y };
}

/** Places marker labels in rows so they do not overlap; a label with no room is left to the tooltip. */
class LabelRows {
  private readonly spans: [number, number][][];
  constructor(
    rows: number,
    private readonly top: number,
  ) {
    this.spans = Array.from({ length: rows }, () => []);
  }

  /** `prefer` end: the text ends at the marker (an alert before the failure reads towards it). */
  place(
    x: number,
    label: string,
    prefer: 'start' | 'end' = 'start',
  ): { x: number; y: number; anchor: 'start' | 'end' } | null {
    const width = textWidth(label, 10) + 6;
    const sides: ('start' | 'end')[] = prefer === 'end' ? ['end', 'start'] : ['start', 'end'];
    for (let row = 0; row < this.spans.length; row++) {
      for (const side of sides) {
        const from = side === 'start' ? x : x - width;
        if (from < 4 || from + width > WIDTH - 4) continue;
        if (this.spans[row].some(([a, b]) => from < b + 4 && a < from + width + 4)) continue;
        this.spans[row].push([from, from + width]);
        return { x: side === 'start' ? x + 3 : x - 3, y: this.top + 11 + row * 13, anchor: side };
      }
    }
    return null;
  }
}

function alertLabel(model: ReportModel, m: AlertMarker): string {
  const lead =
    m.leadSeconds === null
      ? ''
      : m.leadSeconds >= 0
        ? `, ${m.leadSeconds.toFixed(1)} s before`
        : `, ${(-m.leadSeconds).toFixed(1)} s after`;
  return `${runTag(model, m.run)}${m.record.signal} ${m.record.level.toUpperCase()}${lead}`;
}

function markers(model: ReportModel, frame: Frame, labelTop: number, labelRows: number): string {
  const rows = new LabelRows(labelRows, labelTop);
  const parts: string[] = [];
  // The first failure is labelled first: it is what every lead time points at.
  const failures = model.failures.map((f: FailureMarker) => {
    const x = frame.x(f.failure.atMs / 1000);
    const label = `${runTag(model, f.run)}first failure (${f.failure.detail}) ${formatAt(f.failure.atMs)}`;
    return { f, x, label, at: rows.place(x, label) };
  });
  const alerts = [...model.alerts]
    .sort((a, b) => Number(b.labelled) - Number(a.labelled) || a.record.atMs - b.record.atMs)
    .map((m) => {
      const x = frame.x(m.record.atMs / 1000);
      const label = alertLabel(model, m);
      return {
        m,
        x,
        label,
        at: m.labelled ? rows.place(x, label, m.leadSeconds !== null && m.leadSeconds > 0 ? 'end' : 'start') : null,
      };
    });
  for (const { m, x, label, at } of alerts) {
    const stroke = m.record.level === 'critical' ? C.critical : C.warn;
    const tip = `${label} — ${m.record.signal} ${m.record.level} at ${formatAt(m.record.atMs)} (${m.record.source})${m.record.message ? `: ${m.record.message}` : ''}`;
    parts.push(
      el(
        'g',
        {
          'data-marker': 'alert',
          'data-run': m.run,
          'data-signal': m.record.signal,
          'data-level': m.record.level,
          'data-source': m.record.source,
          'data-at-ms': String(Math.round(m.record.atMs * 1000) / 1000),
          'data-lead-seconds': m.leadSeconds === null ? undefined : String(m.leadSeconds),
        },
        text('title', {}, tip),
        el('line', {
          x1: x,
          y1: labelTop,
          x2: x,
          y2: frame.bottom,
          stroke,
          'stroke-width': 1.5,
          'stroke-dasharray': m.run === 'b' ? '6 3' : '3 2',
          opacity: m.labelled ? 0.95 : 0.5,
        }),
        at ? text('text', { x: at.x, y: at.y, 'text-anchor': at.anchor, 'font-size': 10, fill: stroke }, label) : null,
      ),
    );
  }
  for (const { f, x, label, at } of failures) {
    parts.push(
      el(
        'g',
        {
          'data-marker': 'first-failure',
          'data-run': f.run,
          'data-at-ms': String(Math.round(f.failure.atMs * 1000) / 1000),
          'data-error-class': f.failure.errorClass,
          'data-detail': f.failure.detail,
        },
        text('title', {}, `${runTag(model, f.run)}${f.what} (${f.failure.errorClass}) at ${formatAt(f.failure.atMs)}`),
        el('line', {
          x1: x,
          y1: labelTop,
          x2: x,
          y2: frame.bottom,
          stroke: C.failure,
          'stroke-width': 2,
          'stroke-dasharray': f.run === 'b' ? '6 3' : undefined,
        }),
        at
          ? text(
              'text',
              { x: at.x, y: at.y, 'text-anchor': at.anchor, 'font-size': 10, 'font-weight': 'bold', fill: C.failure },
              label,
            )
          : null,
      ),
    );
  }
  return parts.join('');
}

/** The lead bracket: an arrow from the earliest alert to the first failure, labelled with the JSON's lead text. */
function leadBrackets(model: ReportModel, frame: Frame, top: number): string {
  return model.headlines
    .map((h: Headline, i) => {
      const failure = model.failures.find((f) => f.run === h.run);
      if (!failure || h.lead.leadSeconds === null) return '';
      const y = top + 10 + i * 16;
      const x1 = frame.x(h.lead.firedAtMs / 1000);
      const x2 = frame.x(failure.failure.atMs / 1000);
      const ahead = x2 >= x1;
      const label = `${runTag(model, h.run)}${h.lead.signal} ${h.lead.level.toUpperCase()}: ${ahead ? '' : 'late by '}${Math.abs(h.lead.leadSeconds).toFixed(1)} s${ahead ? ' lead' : ''}`;
      const mid = (x1 + x2) / 2;
      const w = textWidth(label, 11);
      // Text sits beside the arrow when the arrow is shorter than the label.
      const inside = Math.abs(x2 - x1) > w + 10;
      const tx = inside ? mid : Math.max(x1, x2) + 6 + w > WIDTH - 4 ? Math.min(x1, x2) - 6 : Math.max(x1, x2) + 6;
      const anchor = inside ? 'middle' : tx < Math.min(x1, x2) ? 'end' : 'start';
      const color = ahead ? C.p50 : C.errors;
      const head = (x: number, dir: number) => `M${round(x)} ${round(y)}l${-6 * dir} -4v8z`;
      return el(
        'g',
        {
          'data-role': 'lead-time',
          'data-run': h.run,
          'data-signal': h.lead.signal,
          'data-level': h.lead.level,
          'data-lead-seconds': String(h.lead.leadSeconds),
        },
        text('title', {}, h.lead.text),
        el('line', { x1, y1: y, x2, y2: y, stroke: color, 'stroke-width': 2 }),
        el('path', { d: head(x2, ahead ? 1 : -1), fill: color }),
        inside ? el('rect', { x: mid - w / 2 - 3, y: y - 9, width: w + 6, height: 13, fill: '#ffffff' }) : null,
        text(
          'text',
          { x: tx, y: y + 4, 'text-anchor': anchor, 'font-size': 11, 'font-weight': 'bold', fill: color },
          label,
        ),
      );
    })
    .join('');
}

function panelFrame(
  title: string,
  legend: [string, string, string?][],
  y: number,
  h: number,
  scale: Scale,
  tickText: (v: number) => string,
): string {
  const parts = [
    el('rect', { x: LEFT, y, width: PLOT_W, height: h, fill: '#ffffff', stroke: '#dadce0', 'stroke-width': 1 }),
  ];
  for (const t of scale.ticks) {
    const ty = scale(t);
    parts.push(el('line', { x1: LEFT, y1: ty, x2: LEFT + PLOT_W, y2: ty, stroke: C.grid, 'stroke-width': 1 }));
    parts.push(
      text('text', { x: LEFT - 6, y: ty + 3.5, 'text-anchor': 'end', 'font-size': 10, fill: C.muted }, tickText(t)),
    );
  }
  parts.push(text('text', { x: 12, y: y + 13, 'font-size': 11, 'font-weight': 'bold', fill: C.ink }, title));
  legend.forEach(([name, color, dash], i) => {
    const ly = y + 28 + i * 13;
    parts.push(
      el('line', {
        x1: 12,
        y1: ly - 4,
        x2: 30,
        y2: ly - 4,
        stroke: color,
        'stroke-width': 2,
        'stroke-dasharray': dash,
      }),
    );
    parts.push(text('text', { x: 34, y: ly, 'font-size': 10, fill: C.muted }, name));
  });
  return parts.join('');
}

function seriesPath(
  run: RunView,
  frame: Frame,
  value: (p: TimelinePoint) => number | null,
  y: (v: number) => number,
): string {
  const points: ([number, number] | null)[] = [];
  let last = -2;
  for (const p of run.result.timeline) {
    const v = value(p);
    if (v === null || !Number.isFinite(v)) continue;
    // A missing second breaks the line rather than drawing a slope across it.
    if (p.second > last + 2) points.push(null);
    points.push([frame.x(p.second + 0.5), y(v)]);
    last = p.second;
  }
  return polyline(points);
}

function line(d: string, stroke: string, run: string, role: string, width = 1.75): string {
  return d
    ? el('path', {
        d,
        fill: 'none',
        stroke,
        'stroke-width': width,
        'stroke-dasharray': DASH[run],
        'stroke-linejoin': 'round',
        'data-series': role,
        'data-run': run,
      })
    : '';
}

function loadPanel(model: ReportModel, frame: Frame, y: number, h: number): string {
  const max = Math.max(1, ...model.runs.flatMap((r) => r.result.timeline.map((p) => Math.max(p.offered, p.achieved))));
  const scale = linearScale(max, y + h, y + 6);
  const parts = [
    panelFrame(
      'load (req/s)',
      [
        ['offered', C.offered],
        ['achieved (ok)', C.achieved],
      ],
      y,
      h,
      scale,
      formatNumber,
    ),
  ];
  for (const r of model.runs) {
    parts.push(
      line(
        seriesPath(r, frame, (p) => p.offered, scale),
        C.offered,
        r.id,
        'offered',
        2.5,
      ),
    );
    parts.push(
      line(
        seriesPath(r, frame, (p) => p.achieved, scale),
        C.achieved,
        r.id,
        'achieved',
      ),
    );
  }
  // Stage boundaries and names (of run a; run b's if it is the only one with more stages).
  const stages = model.runs[0].result.stages;
  for (const s of stages) {
    const x = frame.x(s.startMs / 1000);
    if (s.startMs > 0)
      parts.push(
        el('line', {
          x1: x,
          y1: y,
          x2: x,
          y2: frame.bottom,
          stroke: '#9aa0a6',
          'stroke-width': 1,
          'stroke-dasharray': '1 3',
        }),
      );
    parts.push(text('text', { x: x + 4, y: y + 12, 'font-size': 10, fill: C.muted, 'data-stage': s.name }, s.name));
  }
  return parts.join('');
}

function latencyPanel(model: ReportModel, frame: Frame, y: number, h: number): string {
  const values = model.runs.flatMap((r) => r.result.timeline.flatMap((p) => [p.p50, p.p99])).filter((v) => v > 0);
  if (values.length === 0) {
    return (
      panelFrame('latency (ms)', [], y, h, linearScale(1, y + h, y + 6, 1), () => '') +
      text(
        'text',
        {
          x: LEFT + PLOT_W / 2,
          y: y + h / 2,
          'text-anchor': 'middle',
          'font-size': 12,
          fill: C.muted,
          'data-statement': 'no-latency',
        },
        'No request succeeded: no latency to draw.',
      )
    );
  }
  const scale = logScale(Math.min(...values), Math.max(...values), y + h, y + 6);
  const parts = [
    panelFrame(
      'latency (ms, log)',
      [
        ['P50', C.p50],
        ['P99', C.p99],
      ],
      y,
      h,
      scale,
      (v) => (v >= 1000 ? `${formatNumber(v / 1000)} s` : `${formatNumber(v)} ms`),
    ),
  ];
  for (const r of model.runs) {
    parts.push(
      line(
        seriesPath(r, frame, (p) => (p.p50 > 0 ? p.p50 : null), scale),
        C.p50,
        r.id,
        'p50',
      ),
    );
    parts.push(
      line(
        seriesPath(r, frame, (p) => (p.p99 > 0 ? p.p99 : null), scale),
        C.p99,
        r.id,
        'p99',
      ),
    );
  }
  return parts.join('');
}

function errorsPanel(model: ReportModel, frame: Frame, y: number, h: number): string {
  const max = Math.max(0, ...model.runs.flatMap((r) => r.result.timeline.map((p) => p.errors)));
  const scale = linearScale(Math.max(1, max), y + h, y + 6, 2);
  const parts = [
    panelFrame(
      'errors (/s)',
      [
        ['shed (503/429)', C.shed],
        ['other errors', C.errors],
      ],
      y,
      h,
      scale,
      formatNumber,
    ),
  ];
  const n = model.runs.length;
  const slot = frame.x(1) - frame.x(0);
  const bw = Math.max(1, (slot * 0.8) / n);
  model.runs.forEach((r, i) => {
    for (const p of r.result.timeline) {
      if (p.errors <= 0) continue;
      const x = frame.x(p.second) + slot * 0.1 + i * bw;
      const shedTop = scale(p.shed);
      const allTop = scale(p.errors);
      if (p.shed > 0)
        parts.push(
          el('rect', {
            x,
            y: shedTop,
            width: bw,
            height: y + h - shedTop,
            fill: C.shed,
            opacity: r.id === 'b' ? 0.6 : 1,
            'data-series': 'shed',
            'data-run': r.id,
          }),
        );
      if (p.errors > p.shed)
        parts.push(
          el('rect', {
            x,
            y: allTop,
            width: bw,
            height: shedTop - allTop,
            fill: C.errors,
            opacity: r.id === 'b' ? 0.6 : 1,
            'data-series': 'errors',
            'data-run': r.id,
          }),
        );
    }
  });
  return parts.join('');
}

/** A one-line panel that states a fact instead of drawing an empty chart. */
function statementRow(title: string, message: string, statement: string, y: number, h: number): string {
  return (
    el('rect', { x: LEFT, y, width: PLOT_W, height: h, fill: '#fafafa', stroke: '#dadce0', 'stroke-width': 1 }) +
    text('text', { x: 12, y: y + h / 2 + 4, 'font-size': 11, 'font-weight': 'bold', fill: C.ink }, title) +
    text(
      'text',
      {
        x: LEFT + PLOT_W / 2,
        y: y + h / 2 + 4,
        'text-anchor': 'middle',
        'font-size': 12,
        fill: C.muted,
        'data-statement': statement,
      },
      message,
    )
  );
}

function lane(model: ReportModel, view: LaneView, frame: Frame, y: number, h: number): string {
  const spec = view.spec;
  const parts: string[] = [];
  const rowH = h / view.runs.length;
  view.runs.forEach((r, i) => {
    const ry = y + i * rowH;
    // Consecutive seconds of one level become one rectangle.
    let start = 0;
    for (let s = 1; s <= r.levels.length; s++) {
      if (s < r.levels.length && r.levels[s] === r.levels[start]) continue;
      const level = r.levels[start];
      const fill = level === null ? C.noData : C.bands[Math.max(0, Math.min(2, level))];
      const x = frame.x(start);
      parts.push(
        el('rect', {
          x,
          y: ry,
          width: frame.x(s) - x,
          height: rowH,
          fill,
          'data-level': level === null ? 'none' : ['ok', 'warn', 'critical'][Math.max(0, Math.min(2, level))],
          'data-from': start,
          'data-to': s,
        }),
      );
      start = s;
    }
    if (view.runs.length > 1)
      parts.push(
        text(
          'text',
          { x: LEFT - 6, y: ry + rowH / 2 + 3.5, 'text-anchor': 'end', 'font-size': 9, fill: C.muted },
          r.run,
        ),
      );
    if (!r.seen && r.levels.every((l) => l === null))
      parts.push(
        text('text', { x: LEFT + 6, y: ry + rowH / 2 + 3.5, 'font-size': 9.5, fill: C.muted }, 'no data from this run'),
      );
  });
  parts.push(el('rect', { x: LEFT, y, width: PLOT_W, height: h, fill: 'none', stroke: '#dadce0', 'stroke-width': 1 }));
  parts.push(text('text', { x: 12, y: y + 14, 'font-size': 11, 'font-weight': 'bold', fill: C.ink }, spec.title));
  if (spec.series.length)
    parts.push(
      text('text', { x: 12, y: y + 27, 'font-size': 9.5, fill: C.muted }, spec.series.map((s) => s.label).join(' · ')),
    );

  // Values scraped for the lane, drawn over the bands.
  const shared = spec.series.filter((s) => !s.ownScale);
  const sharedMax = Math.max(
    0,
    ...model.runs.flatMap((r) => r.result.timeline.flatMap((p) => shared.map((s) => p.values?.[s.key] ?? 0))),
  );
  const peaks: string[] = [];
  spec.series.forEach((series, si) => {
    const max = series.ownScale ? 1 : sharedMax > 0 ? sharedMax * 1.1 : 1;
    const color = C.series[si % C.series.length];
    let peak = -Infinity;
    for (const r of model.runs) {
      const row = model.runs.length > 1 ? model.runs.indexOf(r) : 0;
      const top = y + row * rowH + 3;
      const bottom = y + (row + 1) * rowH - 2;
      const d = seriesPath(
        r,
        frame,
        (p) => p.values?.[series.key] ?? null,
        (v) => bottom - (Math.min(v, max) / max) * (bottom - top),
      );
      if (!d) continue;
      for (const p of r.result.timeline)
        if (p.values?.[series.key] !== undefined) peak = Math.max(peak, p.values[series.key]);
      parts.push(
        el('path', {
          d,
          fill: 'none',
          stroke: color,
          'stroke-width': 1.5,
          'stroke-dasharray': series.ownScale ? '4 2' : DASH[r.id],
          'data-series': series.key,
          'data-run': r.id,
        }),
      );
    }
    if (peak > -Infinity)
      peaks.push(
        text(
          'text',
          { x: LEFT + PLOT_W + 6, y: y + 11 + peaks.length * 11, 'font-size': 9.5, fill: color },
          `${series.label} ≤ ${formatValue(peak, series.unit)}`,
        ),
      );
  });
  parts.push(...peaks);
  return el('g', { 'data-lane': spec.signal }, ...parts);
}

function timeAxis(frame: Frame, domain: number): string {
  const parts: string[] = [];
  for (const t of timeTicks(domain)) {
    const x = frame.x(t);
    parts.push(el('line', { x1: x, y1: frame.bottom, x2: x, y2: frame.bottom + 4, stroke: C.muted }));
    parts.push(
      text('text', { x, y: frame.bottom + 15, 'text-anchor': 'middle', 'font-size': 10, fill: C.muted }, `${t} s`),
    );
  }
  parts.push(
    text(
      'text',
      { x: LEFT + PLOT_W / 2, y: frame.bottom + 30, 'text-anchor': 'middle', 'font-size': 10, fill: C.muted },
      'seconds since the run start (shared by every panel)',
    ),
  );
  return parts.join('');
}

/** The whole chart as one SVG document: header, panels on one time axis, lanes, markers, notes. */
export function renderChart(model: ReportModel, options: ChartOptions = {}): string {
  const head = header(model, 0);
  const labelRows =
    model.alerts.length + model.failures.length === 0
      ? 1
      : Math.min(4, Math.max(2, model.alerts.filter((a) => a.labelled).length + model.failures.length));
  const labelTop = head.height + 6;
  const bracketTop = labelTop + labelRows * 13 + 2;
  const plotTop = bracketTop + Math.max(1, model.headlines.length) * 16 + 4;
  const frame: Frame = {
    x: (s) => LEFT + (Math.max(0, Math.min(s, model.domainSeconds)) / model.domainSeconds) * PLOT_W,
    top: plotTop,
    bottom: 0,
  };

  const body: string[] = [];
  let y = plotTop;
  const anyErrors = model.runs.some((r) => r.result.timeline.some((p) => p.errors > 0));
  const blocks: [number, (at: number) => string][] = [
    [130, (at) => loadPanel(model, frame, at, 130)],
    [130, (at) => latencyPanel(model, frame, at, 130)],
    anyErrors
      ? [80, (at) => errorsPanel(model, frame, at, 80)]
      : [26, (at) => statementRow('errors (/s)', 'No request failed: 0 errors, 0 shed.', 'no-errors', at, 26)],
    ...model.lanes.map((l): [number, (at: number) => string] => [
      model.runs.length > 1 ? 48 : 40,
      (at) => lane(model, l, frame, at, model.runs.length > 1 ? 48 : 40),
    ]),
  ];
  if (model.lanes.length === 0)
    blocks.push([26, (at) => statementRow('signals', 'No signal levels in this run.', 'no-signals', at, 26)]);
  const gaps: number[] = [];
  for (const [h] of blocks) {
    gaps.push(y);
    y += h + 6;
  }
  frame.bottom = y - 6;
  blocks.forEach(([, draw], i) => {
    body.push(draw(gaps[i]));
  });

  if (model.alerts.length === 0) {
    body.push(
      text(
        'text',
        { x: LEFT + 4, y: labelTop + 11, 'font-size': 11, fill: C.muted, 'data-statement': 'no-alert-markers' },
        'No alerts fired: no alert markers.',
      ),
    );
  }
  body.push(markers(model, frame, labelTop, labelRows));
  body.push(leadBrackets(model, frame, bracketTop));
  body.push(timeAxis(frame, model.domainSeconds));

  let noteY = frame.bottom + 50;
  const notes: [string, string][] = [];
  if (model.notReported.length)
    notes.push([
      `Not reported by the target during this run (no level, alert or value): ${model.notReported.join(', ')}.`,
      'not-reported',
    ]);
  for (const run of model.withoutSignals) {
    notes.push([
      `${runTag(model, run)}no signal source: run with --metrics URL (or subscribeAlerts) to follow signal levels.`,
      'no-signal-source',
    ]);
  }
  for (const [note, statement] of notes) {
    body.push(text('text', { x: 12, y: noteY, 'font-size': 10.5, fill: C.muted, 'data-statement': statement }, note));
    noteY += 15;
  }
  if (options.interactive)
    body.push(
      el('line', {
        'data-role': 'cursor',
        x1: LEFT,
        y1: plotTop,
        x2: LEFT,
        y2: frame.bottom,
        stroke: C.ink,
        'stroke-width': 1,
        opacity: 0.35,
        visibility: 'hidden',
        'pointer-events': 'none',
      }),
    );
  const height = Math.ceil(noteY + 4);

  return el(
    'svg',
    {
      xmlns: 'http://www.w3.org/2000/svg',
      width: WIDTH,
      height,
      viewBox: `0 0 ${WIDTH} ${height}`,
      'font-family': FONT,
      role: 'img',
      'aria-label':
        'InferSignal bench run: load, latency, errors and signal levels over time, with alert and first-failure markers',
      'data-chart': 'infersignal-bench',
      'data-plot-left': LEFT,
      'data-plot-right': LEFT + PLOT_W,
      'data-plot-top': plotTop,
      'data-plot-bottom': frame.bottom,
      'data-domain-seconds': model.domainSeconds,
      'data-runs': model.runs.length,
    },
    el('rect', { x: 0, y: 0, width: WIDTH, height, fill: '#ffffff' }),
    ...body,
    head.svg,
  );
}
