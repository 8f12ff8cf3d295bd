import type { BenchResult, ErrorCounts, StageResult } from './types';

const ERROR_LABELS: Record<keyof ErrorCounts, string> = {
  timeout: 'timeout',
  shed: 'shed',
  server: '5xx',
  client: '4xx',
  connection: 'conn',
  cutOff: 'cut-off',
  dropped: 'dropped',
};

function ms(value: number): string {
  if (value >= 10_000) return `${(value / 1000).toFixed(1)}s`;
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function errorText(errors: ErrorCounts): string {
  const parts = (Object.keys(errors) as (keyof ErrorCounts)[])
    .filter((k) => errors[k] > 0)
    .map((k) => `${ERROR_LABELS[k]} ${errors[k]}`);
  return parts.length ? parts.join(', ') : '-';
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 || i === cells.length - 1 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

function stageRow(s: StageResult): string[] {
  return [
    s.name,
    String(s.requests),
    s.offeredRate.toFixed(1),
    s.throughput.toFixed(1),
    ms(s.latency.p50),
    ms(s.latency.p90),
    ms(s.latency.p99),
    ms(s.latency.p999),
    ms(s.latency.max),
    errorText(s.errors),
  ];
}

/** The report as text: one row per stage, stream figures, alerts and their lead time. */
export function formatReport(result: BenchResult): string {
  const out: string[] = [];
  out.push(
    `infersignal bench: ${result.target} (${result.kind}), ${(result.durationMs / 1000).toFixed(1)} s${result.stoppedBy ? `, stopped by ${result.stoppedBy}` : ''}`,
  );
  out.push('');
  const header = ['stage', 'requests', 'sent/s', 'ok/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'errors'];
  const rows = result.stages.map(stageRow);
  if (result.stages.length > 1) rows.push(stageRow(result.total));
  out.push(table(header, rows));
  const streamed = result.stages.filter((s) => s.stream);
  if (streamed.length) {
    out.push('');
    const sRows = [...streamed, ...(streamed.length > 1 ? [result.total] : [])].map((s) => [
      s.name,
      String(s.stream!.completed),
      String(s.stream!.cutOff),
      ms(s.stream!.ttft.p50),
      ms(s.stream!.ttft.p99),
      ms(s.stream!.interToken.p50),
      ms(s.stream!.interToken.p99),
      s.stream!.tokensPerSecond.toFixed(1),
    ]);
    out.push(
      table(
        ['stage', 'completed', 'cut off', 'ttft p50', 'ttft p99', 'itl p50', 'itl p99', 'tok/s/stream'],
        sRows.map((r) => [...r, '']),
      ),
    );
  }
  out.push('');
  if (result.firstFailure) {
    const f = result.firstFailure;
    out.push(`first failure: ${f.errorClass} (${f.detail}) at ${(f.atMs / 1000).toFixed(1)} s`);
  } else out.push('first failure: none');
  if (result.alerts.length) {
    out.push('alerts (first of each signal and level):');
    for (const lead of result.leadTimes) out.push(`  ${lead.text}`);
    const signals = [...new Set(result.timeline.flatMap((p) => Object.keys(p.levels)))].sort();
    if (signals.length) {
      out.push('signal levels per second (. ok, w warn, C critical):');
      const width = Math.max(...signals.map((s) => s.length));
      for (const signal of signals) {
        const marks = result.timeline.map((p) => ['.', 'w', 'C'][p.levels[signal] ?? 0] ?? '?').join('');
        out.push(`  ${signal.padEnd(width)}  ${marks}`);
      }
    }
  } else out.push('alerts: none seen');
  if (result.scrapeErrors) out.push(`(${result.scrapeErrors} metrics scrapes failed)`);
  return out.join('\n');
}
