/**
 * Benchmark knobs, read once from the environment.
 *
 *   BENCH_SMOKE=1     tiny durations, no docs written (the smoke test in test/)
 *   BENCH_SECONDS=n   seconds per measured run in the load suites (default 2)
 *   BENCH_ROUNDS=n    interleaved A/B rounds (default 3, server 5; never fewer than 3 outside smoke mode)
 */
export const SMOKE = process.env.BENCH_SMOKE === '1';

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return value;
}

/** Seconds per measured load run (autocannon / bench). */
export const SECONDS = positive('BENCH_SECONDS', SMOKE ? 0.3 : 2);
/**
 * Interleaved rounds: medians need at least 3 to say anything about spread.
 * A suite may default to more (the server suite uses 5: a noisy neighbour
 * burst inside one window moves a 3-round median).
 */
export function rounds(fallback = 3): number {
  return Math.max(SMOKE ? 1 : 3, Math.round(positive('BENCH_ROUNDS', SMOKE ? 2 : fallback)));
}
export const ROUNDS = rounds();
/** Milliseconds tinybench spends on one task per round. */
export const TASK_MS = positive('BENCH_TASK_MS', SMOKE ? 40 : 400);
