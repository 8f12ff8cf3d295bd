/**
 * Another checkout's built `@infersignal/*` packages, for before/after
 * measurements of two builds in one run (`BENCH_BASELINE=<checkout>`). The
 * checkout needs `pnpm install` and `pnpm build`; its packages' own imports
 * then resolve inside it, so the two builds share nothing but Node.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The checkout named by BENCH_BASELINE, if any. */
export const BASELINE = process.env.BENCH_BASELINE?.trim() || undefined;

/** `name` (an `@infersignal/*` package) from `tree`'s build: the ESM entry its package.json exports. */
export async function importFrom<T>(tree: string, name: string): Promise<T> {
  const dir = join(tree, 'benchmarks', 'node_modules', name);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const entry: unknown = manifest.exports?.['.']?.import?.default ?? manifest.module;
  if (typeof entry !== 'string') throw new Error(`${dir}: no ESM entry in package.json`);
  return (await import(pathToFileURL(join(dir, entry)).href)) as T;
}
