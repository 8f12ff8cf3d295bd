import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname } from 'node:path';
import type { BenchResult } from '../types';
import { renderChart } from './chart';
import { renderHtml } from './html';
import { buildModel, type RunView } from './model';

export type ReportFormat = 'html' | 'svg';

/** A run to draw, with the name its legend shows. */
interface ReportRun {
  result: BenchResult;
  label?: string;
}

function views(runs: readonly (BenchResult | ReportRun)[]): RunView[] {
  if (runs.length < 1 || runs.length > 2)
    throw new Error(`report: give one run, or two to compare (got ${runs.length})`);
  return runs.map((r, i) => {
    const run: ReportRun = 'tool' in r ? { result: r } : r;
    assertResult(run.result, run.label ?? `run ${i + 1}`);
    return {
      id: String.fromCharCode(97 + i),
      label: run.label ?? (runs.length > 1 ? `run ${String.fromCharCode(97 + i)}` : 'run'),
      result: run.result,
    };
  });
}

/** The chart alone, as a standalone SVG document (for a README or a pull request). */
export function renderReportSvg(runs: readonly (BenchResult | ReportRun)[]): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n${renderChart(buildModel(views(runs)))}\n`;
}

/** The full page: chart, summary tables, alerts and configuration, all inline. Two runs are overlaid. */
export function renderReportHtml(runs: readonly (BenchResult | ReportRun)[]): string {
  return renderHtml(buildModel(views(runs)));
}

export function reportFormat(path: string): ReportFormat {
  const ext = extname(path).toLowerCase();
  if (ext === '.html' || ext === '.htm') return 'html';
  if (ext === '.svg') return 'svg';
  throw new Error(
    `report: ${JSON.stringify(path)} must end in .html or .svg (a PNG needs a browser: open the HTML and take a screenshot)`,
  );
}

/**
 * Writes `runs` to `path` in the format its extension names: `.html` (the full page) or `.svg` (the chart) for one
 * run or two to compare, `.json` for one run's result as `infersignal report` reads it back. A run is a result, a
 * result with the label its legend shows, or the path of a result file (labelled with its file name).
 */
export function writeReport(
  path: string,
  runs: readonly (BenchResult | { result: BenchResult; label?: string } | string)[],
): void {
  const read = runs.map((run) => (typeof run === 'string' ? readResult(run) : run));
  if (extname(path).toLowerCase() === '.json') {
    if (read.length !== 1) throw new Error(`report: ${JSON.stringify(path)} holds one run (got ${read.length})`);
    const [run] = read;
    writeResult(path, 'tool' in run ? run : run.result);
    return;
  }
  const format = reportFormat(path);
  const content = format === 'html' ? renderReportHtml(read) : renderReportSvg(read);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
}

/** Writes the result as pretty JSON (creating the folder). */
export function writeResult(path: string, result: BenchResult): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
}

/** Fails with the field that is missing, not with a TypeError deep inside the chart. */
function assertResult(value: unknown, source: string): asserts value is BenchResult {
  const r = value as Partial<BenchResult> | null;
  const fail = (field: string) => {
    throw new Error(`report: ${source} is not an infersignal bench result (${field})`);
  };
  if (!r || typeof r !== 'object') fail('not an object');
  if (r!.tool !== '@infersignal/bench') fail('tool must be "@infersignal/bench"');
  for (const field of ['stages', 'timeline', 'alerts', 'leadTimes'] as const)
    if (!Array.isArray(r![field])) fail(`${field} must be an array`);
  if (typeof r!.durationMs !== 'number') fail('durationMs must be a number');
  if (!r!.total || typeof r!.total !== 'object') fail('total is missing');
}

/** Reads a result written by `bench --json` (the legend shows the file name). */
function readResult(path: string): ReportRun {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`report: cannot read ${path}: ${(err as Error).message}`);
  }
  assertResult(parsed, path);
  return { result: parsed, label: basename(path) };
}
