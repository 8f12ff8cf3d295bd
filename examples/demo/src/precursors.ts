/**
 * Which warning predicted the first failed request, read from the server's
 * own snapshots (polled twice a second): every run of a signal above ok,
 * with its subject, and whether it was a true precursor of the failure, a
 * false alarm, or came after it.
 *
 * A **true precursor** is a warning that
 * - was standing when the first request failed: raised in the last snapshot
 *   before the failure, and timed from the start of its unbroken run;
 * - is about the resource that failed: the failing route's queue or the
 *   model queue behind it (`failingQueues`), or a process-wide signal (the
 *   event loop) that rose only after the healthy first stage ended — one
 *   already raised at half load, where nothing fails, is no evidence about
 *   this overload;
 * - was not injected by the demo itself (the slow model reload);
 * - is not the shedding itself: `queue_backpressure` is announced by the
 *   request that is about to be shed, so it can stand in a snapshot taken
 *   before the client saw that 503, and would name the failure as its own
 *   precursor.
 *
 * A **false alarm** is a run that began and cleared with no failed request
 * while it was raised. No true precursor standing at the first failure is a
 * **missed precursor**, and the headline says so.
 *
 * Times here are on the ramp's clock (ms since the bench run started), the
 * clock of the bench's first failure.
 */

/** One signal above ok in one snapshot. */
export interface ActiveSeries {
  /** `signal[subject]`, or the bare signal for a process-wide one. */
  series: string;
  signal: string;
  /** What it is about: `queue "infer"`, `model "m"`, `device "nvml:0"`; null when process-wide. */
  subject: string | null;
  /** Queue name when the subject is a queue. */
  queue: string | null;
  /** 1 WARN, 2 CRITICAL. */
  level: number;
}

export interface TimedSample {
  /** ms on the ramp's clock. */
  atMs: number;
  active: ActiveSeries[];
}

export type RunVerdict =
  /** Standing at the first failure, about the failing resource: it predicted the failure. */
  | 'precursor'
  /** Standing at the first failure, but about something else or already raised while healthy. */
  | 'standing-other'
  /** Raised and cleared before the first failure: nothing failed while it was raised. */
  | 'false-alarm'
  /** Raised at or after the first failure. */
  | 'after-failure'
  /** Injected on purpose by the demo (the slow reload). */
  | 'injected'
  /** The queue's shedding, announced by the first shed request: the failure itself. */
  | 'shedding'
  /** No request failed in the run. */
  | 'no-failure';

/** One unbroken run of a series above ok. */
export interface AlertRun {
  series: string;
  signal: string;
  subject: string | null;
  queue: string | null;
  /** Level when it was raised (1 WARN, 2 CRITICAL). */
  firstLevel: number;
  /** Highest level reached in the run. */
  level: number;
  fromMs: number;
  /** When CRITICAL was first seen in the run, if it was. */
  criticalAtMs: number | null;
  /** First snapshot that no longer showed it; null when still raised at the last snapshot. */
  clearedAtMs: number | null;
  verdict: RunVerdict;
  /** Seconds from `fromMs` to the first failure (negative: after it); null without a failure. */
  leadSeconds: number | null;
}

export interface PrecursorContext {
  /** Queues the failing requests went through (route queue, model queue). */
  failingQueues: readonly string[];
  /** End of the healthy first stage (ms, ramp clock). */
  healthyUntilMs: number;
  /** Signals the demo raises on purpose. */
  injected: ReadonlySet<string>;
}

/** The signal a queue's shedding is announced as. */
const SHEDDING_SIGNAL = 'queue_backpressure';

export interface PrecursorVerdict {
  /** Every run, by start time. */
  runs: AlertRun[];
  /** The earliest true precursor, or null (none, or nothing failed). */
  precursor: AlertRun | null;
  /** The first run of any non-injected series that rose at or after the failure, when no precursor stood. */
  firstAfter: AlertRun | null;
}

/** `queue "infer"` from a snapshot's alert labels; null when the signal is process-wide. */
export function subjectOf(labels: Record<string, string> | undefined): {
  subject: string | null;
  queue: string | null;
} {
  if (!labels) return { subject: null, queue: null };
  const find = (word: string): string | undefined => {
    for (const key of Object.keys(labels)) if (key === word || key.split(/[._]/).includes(word)) return labels[key];
    return undefined;
  };
  const queue = find('queue');
  if (queue !== undefined) return { subject: `queue "${queue}"`, queue };
  const model = find('model');
  if (model !== undefined) return { subject: `model "${model}"`, queue: null };
  const device = find('device') ?? find('source');
  if (device !== undefined) return { subject: `device "${device}"`, queue: null };
  return { subject: null, queue: null };
}

/** Series key of the report's lanes: `capacity[infer]` for a queue, `model_load[m]` for a model, the bare name otherwise. */
export function seriesName(signal: string, labels: Record<string, string> | undefined): string {
  const { subject } = subjectOf(labels);
  if (subject === null) return signal;
  return `${signal}[${subject.slice(subject.indexOf('"') + 1, -1)}]`;
}

/** Splits the samples into unbroken runs per series (samples sorted by time). */
function alertRuns(samples: readonly TimedSample[]): Omit<AlertRun, 'verdict' | 'leadSeconds'>[] {
  const sorted = [...samples].sort((a, b) => a.atMs - b.atMs);
  const open = new Map<string, Omit<AlertRun, 'verdict' | 'leadSeconds'>>();
  const done: Omit<AlertRun, 'verdict' | 'leadSeconds'>[] = [];
  for (const sample of sorted) {
    const seen = new Set<string>();
    for (const a of sample.active) {
      if (a.level < 1 || seen.has(a.series)) continue;
      seen.add(a.series);
      let run = open.get(a.series);
      if (!run) {
        run = {
          series: a.series,
          signal: a.signal,
          subject: a.subject,
          queue: a.queue,
          firstLevel: a.level,
          level: a.level,
          fromMs: sample.atMs,
          criticalAtMs: null,
          clearedAtMs: null,
        };
        open.set(a.series, run);
      }
      run.level = Math.max(run.level, a.level);
      if (a.level >= 2 && run.criticalAtMs === null) run.criticalAtMs = sample.atMs;
    }
    for (const [series, run] of open) {
      if (seen.has(series)) continue;
      run.clearedAtMs = sample.atMs;
      done.push(run);
      open.delete(series);
    }
  }
  done.push(...open.values());
  return done.sort((a, b) => a.fromMs - b.fromMs || a.series.localeCompare(b.series));
}

/**
 * Classifies every run against the first failure (ms on the same clock, or
 * null when nothing failed) and picks the earliest true precursor.
 */
export function judgePrecursors(
  samples: readonly TimedSample[],
  failureAtMs: number | null,
  context: PrecursorContext,
): PrecursorVerdict {
  // "Standing" is read from the last snapshot before the failure, so a run's end is only known to the poll.
  const before = samples.filter((s) => failureAtMs !== null && s.atMs < failureAtMs);
  const last = before.reduce<TimedSample | null>((l, s) => (l === null || s.atMs > l.atMs ? s : l), null);
  const standing = new Set(last?.active.filter((a) => a.level >= 1).map((a) => a.series) ?? []);
  const runs: AlertRun[] = alertRuns(samples).map((run) => {
    const leadSeconds = failureAtMs === null ? null : (failureAtMs - run.fromMs) / 1000;
    let verdict: RunVerdict;
    if (context.injected.has(run.signal)) verdict = 'injected';
    else if (failureAtMs === null) verdict = 'no-failure';
    else if (run.signal === SHEDDING_SIGNAL) verdict = 'shedding';
    else if (run.fromMs >= failureAtMs) verdict = 'after-failure';
    else if (run.clearedAtMs !== null && run.clearedAtMs <= (last?.atMs ?? -Infinity)) verdict = 'false-alarm';
    else if (standing.has(run.series) && isAboutFailure(run, context)) verdict = 'precursor';
    else if (standing.has(run.series)) verdict = 'standing-other';
    else verdict = 'false-alarm';
    return { ...run, verdict, leadSeconds };
  });
  const precursor = runs.find((r) => r.verdict === 'precursor') ?? null;
  const firstAfter =
    precursor === null ? (runs.find((r) => r.verdict === 'after-failure' && isAboutFailure(r, context)) ?? null) : null;
  return { runs, precursor, firstAfter };
}

function isAboutFailure(run: Omit<AlertRun, 'verdict' | 'leadSeconds'>, context: PrecursorContext): boolean {
  if (run.queue !== null) return context.failingQueues.includes(run.queue);
  // Process-wide (the event loop): only when it rose after the healthy stage.
  if (run.subject === null) return run.fromMs >= context.healthyUntilMs;
  return false;
}

const LEVEL = ['OK', 'WARN', 'CRITICAL'];

/** `capacity WARN on queue "infer"`, or `event_loop WARN (process-wide)`. */
export function describeRun(run: Pick<AlertRun, 'signal' | 'subject' | 'level'>, level = run.level): string {
  return `${run.signal} ${LEVEL[level]}${run.subject ? ` on ${run.subject}` : ' (process-wide)'}`;
}
