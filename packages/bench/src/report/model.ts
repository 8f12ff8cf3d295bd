import { describeFailure } from '../alerts';
import type { AlertRecord, BenchResult, FirstFailure, LeadTime } from '../types';
import { isStandard, laneSpec, STANDARD_LANES, type LaneSpec } from './lanes';

/** One run as the report draws it. */
export interface RunView {
  /** `a` or `b` in comparison mode; written into `data-run`. */
  id: string;
  /** Shown in legends: the file name, or `run`. */
  label: string;
  result: BenchResult;
}

export interface AlertMarker {
  run: string;
  record: AlertRecord;
  /** Seconds before the first failure (negative: after); null when nothing failed. */
  leadSeconds: number | null;
  /** Only the first record of each (signal, level) gets a text label; the others a tooltip. */
  labelled: boolean;
}

export interface FailureMarker {
  run: string;
  failure: FirstFailure;
  what: string;
}

/** The headline of a run: the alert that came earliest before the first failure. */
export interface Headline {
  run: string;
  lead: LeadTime;
}

export interface LaneView {
  spec: LaneSpec;
  /** Per run: level per second (null: no level source), and whether the run saw the signal at all. */
  runs: { run: string; levels: (number | null)[]; seen: boolean }[];
}

export interface ReportModel {
  runs: RunView[];
  /** Length of the shared time axis, seconds. */
  domainSeconds: number;
  lanes: LaneView[];
  /** Standard lanes no run reported (stated in one line instead of drawn empty). */
  notReported: string[];
  /** Runs that had no level source at all (no --metrics, no callback). */
  withoutSignals: string[];
  alerts: AlertMarker[];
  failures: FailureMarker[];
  headlines: Headline[];
}

/** Whether the run followed signal levels at all, so a missing level means OK. */
function hasLevelSource(result: BenchResult): boolean {
  if (result.settings) return result.settings.metricsUrl !== null || result.settings.alertCallback;
  return result.alerts.length > 0 || result.timeline.some((p) => Object.keys(p.levels).length > 0);
}

function signalsSeen(result: BenchResult): Set<string> {
  const out = new Set<string>();
  for (const a of result.alerts) out.add(a.signal);
  for (const p of result.timeline) for (const s of Object.keys(p.levels)) out.add(s);
  return out;
}

function valuesSeen(result: BenchResult, spec: LaneSpec): boolean {
  return spec.series.some((s) => result.timeline.some((p) => p.values?.[s.key] !== undefined));
}

function leadOf(record: AlertRecord, failure: FirstFailure | null): number | null {
  // The same arithmetic as leadTimes(), so a marker's lead equals the JSON's to the digit.
  return failure ? Math.round(((failure.atMs - record.atMs) / 1000) * 1000) / 1000 : null;
}

/** The lead with the largest value: the earliest warning (or the least late one). */
function headlineLead(result: BenchResult): LeadTime | null {
  let best: LeadTime | null = null;
  for (const lead of result.leadTimes ?? []) {
    if (lead.leadSeconds === null) continue;
    if (!best || lead.leadSeconds > best.leadSeconds!) best = lead;
  }
  return best;
}

export function buildModel(runs: RunView[]): ReportModel {
  if (runs.length === 0) throw new Error('report: no run to draw');
  let domainMs = 1000;
  for (const { result } of runs) {
    domainMs = Math.max(
      domainMs,
      result.durationMs,
      result.timeline.length * 1000,
      result.firstFailure?.atMs ?? 0,
      ...result.alerts.map((a) => a.atMs),
    );
  }
  const domainSeconds = Math.ceil(domainMs / 1000 - 1e-9);

  const seenByRun = runs.map((r) => signalsSeen(r.result));
  const signals = new Set<string>();
  for (const spec of STANDARD_LANES) {
    if (runs.some((r, i) => seenByRun[i].has(spec.signal) || valuesSeen(r.result, spec))) signals.add(spec.signal);
  }
  const extras = [...new Set(seenByRun.flatMap((s) => [...s]))].filter((s) => !isStandard(s)).sort();
  const lanes: LaneView[] = [...signals, ...extras].map((signal) => {
    const spec = laneSpec(signal);
    return {
      spec,
      runs: runs.map((r, i) => {
        const source = hasLevelSource(r.result);
        const levels = Array.from({ length: domainSeconds }, (_, second) => {
          const point = r.result.timeline[second];
          const level = point?.levels[signal];
          if (level !== undefined) return level;
          return source && point ? 0 : null;
        });
        return {
          run: r.id,
          levels,
          seen: seenByRun[i].has(signal) || (isStandard(signal) && valuesSeen(r.result, spec)),
        };
      }),
    };
  });

  const alerts: AlertMarker[] = [];
  const failures: FailureMarker[] = [];
  const headlines: Headline[] = [];
  for (const { id, result } of runs) {
    const labelled = new Set<string>();
    for (const record of [...result.alerts].sort((a, b) => a.atMs - b.atMs)) {
      const key = `${record.signal}|${record.level}`;
      alerts.push({ run: id, record, leadSeconds: leadOf(record, result.firstFailure), labelled: !labelled.has(key) });
      labelled.add(key);
    }
    if (result.firstFailure)
      failures.push({ run: id, failure: result.firstFailure, what: describeFailure(result.firstFailure) });
    const lead = headlineLead(result);
    if (lead) headlines.push({ run: id, lead });
  }

  return {
    runs,
    domainSeconds,
    lanes,
    notReported: STANDARD_LANES.filter((l) => !signals.has(l.signal)).map((l) => l.title),
    withoutSignals: runs.filter((r) => !hasLevelSource(r.result)).map((r) => r.id),
    alerts,
    failures,
    headlines,
  };
}
