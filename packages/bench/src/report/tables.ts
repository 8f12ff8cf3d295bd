import type { BenchResult, ErrorCounts, StageResult } from '../types';
import { formatAt, formatMs, formatNumber } from './format';
import type { RunView } from './model';
import { escapeXml, text } from './xml';

/** Alert rows shown per run; the chart still has a marker for every record. */
const MAX_ALERT_ROWS = 200;

const ERROR_COLUMNS: [keyof ErrorCounts, string][] = [
  ['timeout', 'timeout'],
  ['shed', 'shed'],
  ['server', '5xx'],
  ['client', '4xx'],
  ['connection', 'conn'],
  ['cutOff', 'cut off'],
  ['dropped', 'dropped'],
];

function row(cells: string[], header = false): string {
  const tag = header ? 'th' : 'td';
  return `<tr>${cells.map((c) => text(tag, {}, c)).join('')}</tr>`;
}

function table(caption: string, header: string[], rows: string[][], attrs = ''): string {
  return `<table${attrs}><caption>${escapeXml(caption)}</caption><thead>${row(header, true)}</thead><tbody>${rows.map((r) => row(r)).join('')}</tbody></table>`;
}

function load(s: StageResult): string {
  if (s.index < 0) return '';
  return s.targetRate !== null ? `${formatNumber(s.targetRate)} req/s` : `${s.concurrency} VUs`;
}

function stageRow(s: StageResult): string[] {
  return [
    s.name,
    load(s),
    String(s.requests),
    formatNumber(s.offeredRate),
    formatNumber(s.throughput),
    formatMs(s.latency.p50),
    formatMs(s.latency.p90),
    formatMs(s.latency.p99),
    formatMs(s.latency.max),
    ...ERROR_COLUMNS.map(([k]) => String(s.errors[k])),
  ];
}

export function stageTable(view: RunView, prefix: string): string {
  const { result } = view;
  const rows = result.stages.map(stageRow);
  if (result.stages.length > 1) rows.push(stageRow(result.total));
  let out = table(
    `${prefix}summary per stage (latency of successful requests)`,
    [
      'stage',
      'load',
      'requests',
      'sent/s',
      'ok/s',
      'P50',
      'P90',
      'P99',
      'max',
      ...ERROR_COLUMNS.map(([, label]) => label),
    ],
    rows,
    ` data-table="stages" data-run="${escapeXml(view.id)}"`,
  );
  const streamed = result.stages.filter((s) => s.stream);
  if (streamed.length) {
    const all = streamed.length > 1 ? [...streamed, result.total] : streamed;
    out += table(
      `${prefix}streams`,
      [
        'stage',
        'completed',
        'cut off',
        'TTFT P50',
        'TTFT P99',
        'inter-token P50',
        'inter-token P99',
        'tokens/s per stream',
      ],
      all
        .filter((s) => s.stream)
        .map((s) => [
          s.name,
          String(s.stream!.completed),
          String(s.stream!.cutOff),
          formatMs(s.stream!.ttft.p50),
          formatMs(s.stream!.ttft.p99),
          formatMs(s.stream!.interToken.p50),
          formatMs(s.stream!.interToken.p99),
          formatNumber(s.stream!.tokensPerSecond),
        ]),
    );
  }
  return out;
}

export function alertTable(view: RunView, prefix: string): string {
  const { result } = view;
  if (result.alerts.length === 0)
    return `<p class="statement" data-statement="no-alerts-table">${escapeXml(prefix)}No alerts fired during this run.</p>`;
  const failure = result.firstFailure;
  const sorted = [...result.alerts].sort((a, b) => a.atMs - b.atMs);
  const rows = sorted.slice(0, MAX_ALERT_ROWS).map((a) => {
    const lead = failure ? (failure.atMs - a.atMs) / 1000 : null;
    return [
      formatAt(a.atMs),
      a.signal,
      a.level.toUpperCase(),
      a.source,
      lead === null ? 'no failure' : lead >= 0 ? `${lead.toFixed(1)} s before` : `${(-lead).toFixed(1)} s after`,
      a.message ?? '',
    ];
  });
  let out = table(
    `${prefix}alerts (${result.alerts.length})`,
    ['at', 'signal', 'level', 'source', 'vs first failure', 'message'],
    rows,
    ` data-table="alerts" data-run="${escapeXml(view.id)}"`,
  );
  if (sorted.length > MAX_ALERT_ROWS)
    out += `<p class="note">${sorted.length - MAX_ALERT_ROWS} more alerts are in the JSON and on the chart.</p>`;
  return out;
}

function stagesText(result: BenchResult): string {
  return result.stages.map((s) => `${s.name} for ${formatNumber(s.durationMs / 1000)} s (${s.model} loop)`).join(', ');
}

export function configTable(view: RunView, prefix: string): string {
  const { result } = view;
  const s = result.settings;
  const rows: [string, string][] = [
    ['target', result.target],
    ['kind', result.kind],
    ['started at', result.startedAt],
    ['duration', `${(result.durationMs / 1000).toFixed(2)} s`],
    ['stopped by', result.stoppedBy ?? 'end of the last stage'],
    ['stages', stagesText(result)],
  ];
  if (s) {
    rows.push(
      ['method', s.method],
      ['arrival', `${s.arrival}${s.arrival === 'poisson' ? ` (seed ${s.seed})` : ''}`],
      ['timeout', `${formatNumber(s.timeoutMs / 1000)} s`],
      ['max connections (open loop)', String(s.maxConnections)],
      ['max requests', String(s.maxRequests)],
      ['max duration', `${formatNumber(s.maxDurationMs / 1000)} s`],
      ['streaming', s.streaming ? 'yes' : 'no'],
      [
        'metrics scraped',
        s.metricsUrl ? `${s.metricsUrl} every ${formatNumber((s.scrapeIntervalMs ?? 0) / 1000)} s` : 'no',
      ],
      ['in-process alerts', s.alertCallback ? 'subscribed' : 'no'],
    );
  } else rows.push(['settings', 'not in this result (written by an older version)']);
  rows.push(['failed scrapes', String(result.scrapeErrors)], ['alert records', String(result.alerts.length)]);
  return table(
    `${prefix}run configuration`,
    ['setting', 'value'],
    rows,
    ` data-table="config" data-run="${escapeXml(view.id)}"`,
  );
}
