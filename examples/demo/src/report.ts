/**
 * The demo's report: throughput and latency per stage, each signal's level
 * per second and the `infer` queue's utilization / wait / occupancy (from
 * the server's snapshots), the bench's lead times (from its scrape of
 * /metrics), the warnings standing at the first failure, and the headline.
 */
import type { BenchResult } from '@infersignal/bench';

import { describeRun, judgePrecursors, type AlertRun, type PrecursorVerdict, type RunVerdict } from './precursors';
import type { SnapshotSample } from './snapshots';

type StageResult = BenchResult['total'];

/** Lanes always shown, in this order, whether or not they ever left ok. */
const LANE_SERIES = [
  'capacity[infer]',
  'queue_wait[infer]',
  'queue_occupancy[infer]',
  'event_loop',
  'stream_interruptions[matmul-chain]',
  'model_load[matmul-chain]',
] as const;

/** Signals the demo injects on purpose rather than as a consequence of load. */
const INJECTED_SIGNALS: ReadonlySet<string> = new Set(['model_load']);

export interface ReloadEvent {
  atMs: number;
  slowMs: number;
  seconds: number | null;
  level: string;
  error?: string;
}

export interface DemoFacts {
  server: { url: string; metricsUrl: string; pid: number; inferCapacity: number; runSeconds: number; rows: number };
  probe: {
    rps: number;
    medianRps: number;
    windows: number[];
    spread: number;
    p50Ms: number;
    users: number;
    windowMs: number;
  };
  factors: readonly number[];
  ramp: BenchResult;
  streams: BenchResult | null;
  streamRate: number;
  snapshots: SnapshotSample[];
  /** Bench run start minus snapshot origin (ms): adds to a bench time to get a snapshot time. */
  rampOffsetMs: number;
  reloads: ReloadEvent[];
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

function failures(e: StageResult['errors']): number {
  return e.timeout + e.shed + e.server + e.client + e.connection + e.cutOff + e.dropped;
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}

function stageRow(s: StageResult): string[] {
  const e = s.errors;
  return [
    s.name,
    fixed(s.durationMs / 1000, 1),
    String(s.requests),
    fixed(s.offeredRate, 1),
    fixed(s.throughput, 1),
    fixed(s.latency.p50, 1),
    fixed(s.latency.p90, 1),
    fixed(s.latency.p99, 1),
    fixed(s.latency.max, 1),
    String(e.shed),
    String(e.timeout),
    String(failures(e) - e.shed - e.timeout),
  ];
}

/** One character per second: `.` ok, `w` WARN, `C` CRITICAL, with `|` where a stage begins. */
function lane(seconds: number, stageStarts: Set<number>, mark: (second: number) => string): string {
  let out = '';
  for (let s = 0; s < seconds; s++) {
    if (s > 0 && stageStarts.has(s)) out += '|';
    out += mark(s);
  }
  return out;
}

/** A value in [0, ∞) as one character: digits for tenths of `unit`, `+` at or above 10 tenths, ` ` when unknown. */
function tenths(value: number | undefined, unit: number): string {
  if (value === undefined || !Number.isFinite(value)) return ' ';
  const t = Math.floor((value / unit) * 10);
  return t >= 10 ? '+' : String(Math.max(0, t));
}

/** Worst level per series per second, from the server's snapshots (a second without a sample repeats the one before). */
function levelsPerSecond(samples: SnapshotSample[], seconds: number): Map<string, number[]> {
  const raw = new Map<string, number[]>();
  const polled: boolean[] = new Array(seconds).fill(false);
  for (const sample of samples) {
    const second = Math.floor(sample.atMs / 1000);
    if (second < 0 || second >= seconds) continue;
    polled[second] = true;
    for (const a of sample.active) {
      let row = raw.get(a.series);
      if (!row) raw.set(a.series, (row = new Array(seconds).fill(0)));
      row[second] = Math.max(row[second], a.level);
    }
  }
  for (const row of raw.values()) for (let s = 1; s < seconds; s++) if (!polled[s]) row[s] = row[s - 1];
  return raw;
}

function lanes(facts: DemoFacts): string[] {
  const result = facts.ramp;
  const seconds = Math.ceil(result.stages.reduce((sum, s) => sum + s.durationMs, 0) / 1000);
  const stageStarts = new Set(result.stages.map((s) => Math.round(s.startMs / 1000)));
  const bySecond = new Map(result.timeline.map((p) => [p.second, p]));
  // On the ramp's clock, like the stages and the failures.
  const samples = facts.snapshots.map((s) => ({ ...s, atMs: s.atMs - facts.rampOffsetMs }));
  const firstSample = new Map<number, SnapshotSample>();
  for (const sample of samples) {
    const second = Math.floor(sample.atMs / 1000);
    if (second >= 0 && !firstSample.has(second)) firstSample.set(second, sample);
  }
  const levels = levelsPerSecond(samples, seconds);
  const width = Math.max(26, ...[...LANE_SERIES, ...levels.keys()].map((k) => k.length + 2));
  const out: string[] = [];
  // Header: the stage names over their columns.
  let header = '';
  result.stages.forEach((stage, i) => {
    const from = Math.round(stage.startMs / 1000);
    const to = Math.min(seconds, Math.round((stage.startMs + stage.durationMs) / 1000));
    header +=
      (i > 0 ? '|' : '') +
      stage.name
        .split(' ')[0]
        .slice(0, Math.max(1, to - from))
        .padEnd(to - from);
  });
  out.push(`${'second →'.padEnd(width)}${header}`);
  // The fixed lanes, then any other series that left ok during the run (another queue, latency anomaly …).
  const others = [...levels.keys()].filter((k) => !(LANE_SERIES as readonly string[]).includes(k)).sort();
  for (const series of [...LANE_SERIES, ...others]) {
    const row = levels.get(series);
    out.push(`${series.padEnd(width)}${lane(seconds, stageStarts, (s) => '.wC'[row?.[s] ?? 0])}`);
  }
  out.push(
    `${'ρ utilization (tenths)'.padEnd(width)}${lane(seconds, stageStarts, (s) => tenths(firstSample.get(s)?.infer?.utilization, 1))}`,
  );
  out.push(
    `${'P95 queue wait (0.1 s)'.padEnd(width)}${lane(seconds, stageStarts, (s) => tenths(firstSample.get(s)?.infer?.waitP95Seconds, 1))}`,
  );
  out.push(
    `${'occupancy (tenths)'.padEnd(width)}${lane(seconds, stageStarts, (s) => tenths(firstSample.get(s)?.infer?.occupancy, 1))}`,
  );
  out.push(
    `${'failed requests'.padEnd(width)}${lane(seconds, stageStarts, (s) => ((bySecond.get(s)?.errors ?? 0) > 0 ? 'x' : '.'))}`,
  );
  return out;
}

/**
 * Queues a failed `/v1/infer` request went through: its route's queue and
 * the model's queue behind it. A warning on either is about the resource
 * that failed.
 */
export const FAILING_QUEUES: readonly string[] = ['infer', 'onnx:matmul-chain'];

/** Every alert run of the ramp judged against the first failure, on the ramp's clock. */
function judgeRun(facts: Pick<DemoFacts, 'ramp' | 'snapshots' | 'rampOffsetMs'>): PrecursorVerdict {
  const samples = facts.snapshots.map((s) => ({ atMs: s.atMs - facts.rampOffsetMs, active: s.active }));
  const first = facts.ramp.stages[0];
  return judgePrecursors(samples, facts.ramp.firstFailure?.atMs ?? null, {
    failingQueues: FAILING_QUEUES,
    healthyUntilMs: first ? first.startMs + first.durationMs : 0,
    injected: INJECTED_SIGNALS,
  });
}

/** Name of the stage a ramp time falls in (`1.1× stage`). */
function stageAt(facts: Pick<DemoFacts, 'ramp'>, atMs: number): string {
  const stage = facts.ramp.stages.find((s) => atMs >= s.startMs && atMs < s.startMs + s.durationMs);
  return stage ? `${stage.name.split(' ')[0].replace(/x$/, '×')} stage` : 'after the ramp';
}

/** The headline line and the judged runs behind it. */
export function headline(facts: Pick<DemoFacts, 'ramp' | 'snapshots' | 'rampOffsetMs'>): {
  text: string;
  verdict: PrecursorVerdict;
} {
  const verdict = judgeRun(facts);
  const failure = facts.ramp.firstFailure;
  if (!failure) return { text: 'no failed request in this run', verdict };
  const what = `${failure.detail} at ${fixed(failure.atMs / 1000, 1)} s, ${stageAt(facts, failure.atMs)}`;
  const p = verdict.precursor;
  if (p) {
    return {
      text: `first warning: ${describeRun(p, p.firstLevel)}, raised ${fixed(p.leadSeconds ?? NaN, 1)} s before the first failed request (${what})`,
      verdict,
    };
  }
  const queues = FAILING_QUEUES.map((q) => `"${q}"`).join(' or ');
  const late = verdict.firstAfter;
  return {
    text:
      `missed precursor: the first request failed (${what}) with no warning on queue ${queues} standing` +
      (late
        ? `; the first came ${fixed(-(late.leadSeconds ?? NaN), 1)} s after it: ${describeRun(late, late.firstLevel)}`
        : ''),
    verdict,
  };
}

const VERDICT_TEXT: Record<RunVerdict, string> = {
  precursor: 'standing at the first failure: true precursor',
  'standing-other': 'standing at the first failure, not counted',
  'false-alarm': 'cleared before any request failed: false alarm',
  'after-failure': 'after the first failure',
  injected: 'the injected slow reload, not an overload precursor',
  shedding: 'the shedding itself, announced by the first shed request: not a precursor',
  'no-failure': 'nothing failed in this run',
};

/** Why a standing run is not counted: its subject, or that it stood since the healthy stage. */
function standingReason(run: AlertRun): string {
  if (run.queue !== null) return `not about queue ${FAILING_QUEUES.map((q) => `"${q}"`).join(' or ')}`;
  if (run.subject === null) return 'already raised at half load, where nothing fails';
  return `about ${run.subject}`;
}

/** One line per alert run: what, when raised (and CRITICAL), when cleared, lead before the first failure, verdict. */
function runLines(facts: DemoFacts, verdict: PrecursorVerdict, max = 40): string[] {
  const failure = facts.ramp.firstFailure;
  const rows = verdict.runs.slice(0, max).map((run) => {
    // Raised before the first poll of the ramp: the state the ramp started from (after the probe).
    const raised =
      run.fromMs <= 0 ? 'already raised when the ramp began' : `raised at ${fixed(run.fromMs / 1000, 1)} s`;
    const critical =
      run.criticalAtMs !== null && run.firstLevel < 2 ? `, CRITICAL at ${fixed(run.criticalAtMs / 1000, 1)} s` : '';
    const cleared =
      run.clearedAtMs === null ? ', still raised at the end' : `, cleared at ${fixed(run.clearedAtMs / 1000, 1)} s`;
    let lead = '';
    if (failure && run.leadSeconds !== null)
      lead =
        run.leadSeconds > 0
          ? `; ${fixed(run.leadSeconds, 1)} s before the first failure`
          : `; ${fixed(-run.leadSeconds, 1)} s after it`;
    const why =
      run.verdict === 'standing-other'
        ? `${VERDICT_TEXT[run.verdict]} (${standingReason(run)})`
        : VERDICT_TEXT[run.verdict];
    return `  ${describeRun(run, run.firstLevel)}: ${raised}${critical}${cleared}${lead} — ${why}`;
  });
  if (verdict.runs.length > max) rows.push(`  … ${verdict.runs.length - max} more`);
  return rows;
}

export function formatDemoReport(facts: DemoFacts): string {
  const { server, probe, ramp } = facts;
  const out: string[] = [];
  out.push('');
  out.push('InferSignal demo — Fastify + ONNX Runtime, ramped past its capacity');
  out.push(`server    ${server.url} (pid ${server.pid}), metrics ${server.metricsUrl}`);
  out.push(
    `model     matmul-chain.onnx, ${server.rows} rows per request: ${fixed(server.runSeconds * 1000, 2)} ms per run; infer queue capacity ${server.inferCapacity}`,
  );
  out.push(
    `capacity  ${fixed(probe.rps, 0)} req/s: lower quartile of ${probe.windows.length} closed-loop windows of ${fixed(probe.windowMs / 1000, 1)} s, ${probe.users} users ` +
      `(${probe.windows.map((w) => fixed(w, 0)).join(', ')} req/s; spread ${fixed(probe.spread * 100, 0)} %; p50 ${fixed(probe.p50Ms, 1)} ms)`,
  );
  out.push(
    `ramp      ${ramp.stages.map((s, i) => `${facts.factors[i]}× = ${fixed(s.targetRate ?? 0, 0)} req/s for ${fixed(s.durationMs / 1000, 1)} s`).join(', ')}`,
  );
  out.push('');
  out.push('POST /v1/infer per stage (latency of successful requests, from the scheduled send)');
  const rows = ramp.stages.map(stageRow);
  rows.push(stageRow({ ...ramp.total, name: 'total' }));
  out.push(
    ...table(
      [
        'stage',
        'secs',
        'requests',
        'sent/s',
        'ok/s',
        'p50 ms',
        'p90 ms',
        'p99 ms',
        'max ms',
        '503',
        'timeout',
        'other',
      ],
      rows,
    ),
  );
  if (facts.streams) {
    const s = facts.streams.total;
    const st = s.stream;
    out.push('');
    out.push(
      `SSE /v1/completions in the background (${facts.streamRate}/s, 16 tokens): ${st?.completed ?? 0} completed, ${st?.cutOff ?? 0} cut off, ` +
        `${s.errors.shed} shed; TTFT p50 ${fixed(st?.ttft.p50 ?? NaN, 1)} ms, p99 ${fixed(st?.ttft.p99 ?? NaN, 1)} ms; ` +
        `inter-token p50 ${fixed(st?.interToken.p50 ?? NaN, 2)} ms`,
    );
  }
  if (facts.reloads.length) {
    out.push('');
    for (const r of facts.reloads) {
      const what =
        r.slowMs > 0 ? `hot reload through a slow loader (+${r.slowMs} ms, simulated slow storage)` : 'hot reload';
      out.push(
        `at ${fixed(r.atMs / 1000, 1)} s: ${what}: ${r.error ? `failed: ${r.error}` : `${fixed((r.seconds ?? 0) * 1000, 0)} ms, model_load ${r.level.toUpperCase()}`}`,
      );
    }
  }
  out.push('');
  out.push("signal levels per second (. ok  w WARN  C CRITICAL; | = next stage), from the server's snapshot:");
  out.push(...lanes(facts).map((l) => `  ${l}`));
  out.push('');
  const failure = ramp.firstFailure;
  if (failure)
    out.push(
      `first failure: ${failure.errorClass} (${failure.detail}) at ${fixed(failure.atMs / 1000, 1)} s, ${stageAt(facts, failure.atMs)}`,
    );
  else out.push('first failure: none — no failed request in this run');
  const h = headline(facts);
  if (h.verdict.runs.length) {
    out.push("alerts, each run above ok with its subject (the server's snapshot, twice a second; ramp clock):");
    out.push(...runLines(facts, h.verdict));
  } else out.push('alerts: none raised');
  out.push('');
  out.push(`>>> ${h.text}`);
  if (ramp.scrapeErrors) out.push(`(${ramp.scrapeErrors} metrics scrapes failed)`);
  return out.join('\n');
}
