/**
 * The demo's report: throughput and latency per stage, each signal's level
 * per second and the `infer` queue's utilization / wait / occupancy (from
 * the server's snapshots), the bench's lead times (from its scrape of
 * /metrics), the warnings standing at the first failure, and the headline.
 */
import type { BenchResult, ErrorCounts, LeadTime, StageResult } from '@infersignal/bench';
import type { SnapshotSample } from './snapshots';

/** Lanes always shown, in this order, whether or not they ever left ok. */
export const LANE_SERIES = [
  'capacity[infer]',
  'queue_wait[infer]',
  'queue_occupancy[infer]',
  'event_loop',
  'stream_interruptions',
  'model_load',
] as const;

/** Signals the demo injects on purpose rather than as a consequence of load. */
export const INJECTED_SIGNALS: ReadonlySet<string> = new Set(['model_load']);

export interface ReloadEvent {
  atMs: number;
  slowMs: number;
  seconds: number | null;
  level: string;
  error?: string;
}

export interface DemoFacts {
  server: { url: string; metricsUrl: string; pid: number; inferCapacity: number; runSeconds: number; rows: number };
  probe: { rps: number; p50Ms: number; users: number; measureMs: number };
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

function failures(e: ErrorCounts): number {
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
  const firstSample = new Map<number, SnapshotSample>();
  for (const sample of facts.snapshots) {
    const second = Math.floor(sample.atMs / 1000);
    if (second >= 0 && !firstSample.has(second)) firstSample.set(second, sample);
  }
  const levels = levelsPerSecond(facts.snapshots, seconds);
  const width = Math.max(26, ...[...levels.keys()].map((k) => k.length + 2));
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

/** A warning still raised when the first request failed, and since when (ms, the snapshot clock). */
export interface StandingWarning {
  series: string;
  signal: string;
  /** Level at the last snapshot before the failure (1 WARN, 2 CRITICAL). */
  level: number;
  sinceMs: number;
  leadSeconds: number;
}

/**
 * The warnings that were standing at the first failure: series above ok in
 * the last snapshot before it, each with the start of its unbroken run of
 * non-ok snapshots. An alert that fired and cleared earlier (a blip of a
 * busy machine) is not counted as a warning of this failure.
 */
export function standingWarnings(samples: SnapshotSample[], failureAtMs: number): StandingWarning[] {
  const before = samples.filter((s) => s.atMs < failureAtMs).sort((a, b) => a.atMs - b.atMs);
  const last = before[before.length - 1];
  if (!last) return [];
  const out: StandingWarning[] = [];
  for (const active of last.active) {
    if (INJECTED_SIGNALS.has(active.signal)) continue;
    let since = last.atMs;
    for (let i = before.length - 2; i >= 0 && before[i].active.some((a) => a.series === active.series); i--)
      since = before[i].atMs;
    out.push({
      series: active.series,
      signal: active.signal,
      level: active.level,
      sinceMs: since,
      leadSeconds: (failureAtMs - since) / 1000,
    });
  }
  return out.sort((a, b) => a.sinceMs - b.sinceMs);
}

const LEVEL = ['OK', 'WARN', 'CRITICAL'];

/** The headline line (and the standing warnings behind it). `offsetMs` converts bench time to snapshot time. */
export function headline(facts: Pick<DemoFacts, 'ramp' | 'snapshots' | 'rampOffsetMs'>): {
  text: string;
  standing: StandingWarning[];
} {
  const failure = facts.ramp.firstFailure;
  if (!failure) return { text: 'no failed request in this run', standing: [] };
  const failedAt = failure.atMs + facts.rampOffsetMs;
  const what = `${failure.detail} at ${fixed(failure.atMs / 1000, 1)} s`;
  const standing = standingWarnings(facts.snapshots, failedAt);
  const first = standing[0];
  if (!first) return { text: `no warning was standing when the first request failed (${what})`, standing };
  return {
    text: `first warning: ${first.series} ${LEVEL[first.level]}, raised ${fixed(first.leadSeconds, 1)} s before the first failed request (${what})`,
    standing,
  };
}

function leadLine(lead: LeadTime): string {
  const injected = INJECTED_SIGNALS.has(lead.signal) ? '  (the injected slow reload, not an overload precursor)' : '';
  return `  ${lead.text}${injected}`;
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
    `capacity  ${fixed(probe.rps, 0)} req/s (closed loop, ${probe.users} users, ${fixed(probe.measureMs / 1000, 1)} s, p50 ${fixed(probe.p50Ms, 1)} ms)`,
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
    out.push(`first failure: ${failure.errorClass} (${failure.detail}) at ${fixed(failure.atMs / 1000, 1)} s`);
  else out.push('first failure: none — no failed request in this run');
  if (ramp.leadTimes.length) {
    out.push('alerts, first of each signal and level (scraped from /metrics by the bench):');
    for (const lead of [...ramp.leadTimes].sort((a, b) => a.firedAtMs - b.firedAtMs)) out.push(leadLine(lead));
  } else out.push('alerts: none seen');
  const h = headline(facts);
  if (h.standing.length) {
    out.push('warnings standing when the first request failed:');
    for (const w of h.standing)
      out.push(
        `  ${w.series} ${LEVEL[w.level]} (raised at ${fixed((w.sinceMs - facts.rampOffsetMs) / 1000, 1)} s, ${fixed(w.leadSeconds, 1)} s before)`,
      );
  }
  out.push('');
  out.push(`>>> ${h.text}`);
  if (ramp.scrapeErrors) out.push(`(${ramp.scrapeErrors} metrics scrapes failed)`);
  return out.join('\n');
}
