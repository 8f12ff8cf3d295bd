import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Benchmark knobs, read once from the environment.
 *
 *   BENCH_SMOKE=1     tiny durations, no docs written (the smoke test in test/)
 *   BENCH_SECONDS=n   seconds per measured run in the load suites (default 2, server 0.5)
 *   BENCH_ROUNDS=n    interleaved A/B rounds (default 3, server 12; never fewer than 3 outside smoke mode)
 *   BENCH_FRAMEWORKS, BENCH_VARIANTS   comma-separated subsets for the server suite (a quick second run of one verdict)
 *   --node 24         run on another Node (lib/node-line.ts; BENCH_NODE=24 for every suite of `pnpm bench`)
 *   BENCH_NOTE=text   the run's conditions (e.g. a machine shared with other work), written into each block
 */
export const SMOKE = process.env.BENCH_SMOKE === '1';

/** A positive number from the environment variable `name`, or `fallback` when unset; anything else fails. */
export function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return value;
}

/** Seconds per measured load run (autocannon / bench); a suite may default to other lengths. */
export function seconds(fallback = 2): number {
  return positive('BENCH_SECONDS', SMOKE ? 0.3 : fallback);
}
export const SECONDS = seconds();
/**
 * Interleaved rounds: medians need at least 3 to say anything about spread.
 * A suite may default to more (the server suite uses 15: a noisy neighbour
 * burst inside one window moves a 3-round median).
 */
export function rounds(fallback = 3): number {
  return Math.max(SMOKE ? 1 : 3, Math.round(positive('BENCH_ROUNDS', SMOKE ? 2 : fallback)));
}
export const ROUNDS = rounds();
/**
 * A comma-separated subset of `all` from the environment variable `name`
 * (all of them when unset), in the order of `all`; an unknown name fails.
 */
export function subset<T extends string>(name: string, all: readonly T[]): T[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return [...all];
  const wanted = raw.split(',').map((s) => s.trim());
  const unknown = wanted.filter((w) => !all.includes(w as T));
  if (unknown.length > 0) throw new Error(`${name}: unknown ${unknown.join(', ')} (known: ${all.join(', ')})`);
  return all.filter((a) => wanted.includes(a));
}
/** Milliseconds tinybench spends on one task per round. */
export const TASK_MS = positive('BENCH_TASK_MS', SMOKE ? 40 : 400);

/**
 * The suites measure the built packages (`dist/`, what users install), not
 * the TypeScript sources through tsx's transform (which, among other
 * things, wraps every named function made per call in a `__name()` call).
 * benchmarks/tsconfig.json has no `paths`, so `@infersignal/*` resolves to
 * dist; every process a suite starts gets the same file through this env.
 */
const BENCH_TSCONFIG = fileURLToPath(new URL('../tsconfig.json', import.meta.url));
export const CHILD_ENV: NodeJS.ProcessEnv = { ...process.env, TSX_TSCONFIG_PATH: BENCH_TSCONFIG };

/** Throws unless `@infersignal/*` resolves to a dist/ that is newer than its sources. */
function checkBuilt(): void {
  const resolved = fileURLToPath(import.meta.resolve('@infersignal/core'));
  if (!resolved.includes(`${sep}dist${sep}`)) {
    throw new Error(
      `benchmarks measure the built packages, but @infersignal/core resolved to ${resolved}: run them with \`pnpm bench:<suite>\` (or TSX_TSCONFIG_PATH=${BENCH_TSCONFIG})`,
    );
  }
  const packages = join(dirname(BENCH_TSCONFIG), '..', 'packages');
  for (const name of readdirSync(packages)) {
    // A package with no sources (infersignal-otel-sdk: dependencies only) has nothing to build.
    if (!existsSync(join(packages, name, 'src'))) continue;
    const built = join(packages, name, 'dist', 'index.js');
    const newest = newestMtime(join(packages, name, 'src'));
    if (existsSync(built) && newest > statSync(built).mtimeMs)
      throw new Error(`packages/${name}/dist is older than its src: run \`pnpm build\` (\`pnpm bench:<suite>\` does)`);
  }
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

checkBuilt();
