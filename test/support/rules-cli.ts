/**
 * How a test runs the `infersignal-rules` CLI as a child process: the bin
 * the package ships (`packages/rules/dist/bin.js`, what `npx
 * infersignal-rules` runs), when the build is newer than every source it
 * was built from; otherwise the sources through tsx. `pnpm test` builds
 * first, so it runs the shipped bin, a fifth of tsx's start-up CPU; a file
 * run on its own after an edit and no build still runs the edited sources.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// By URL: the child may run in a folder whose node_modules has no tsx.
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const BIN = join(ROOT, 'packages', 'rules', 'dist', 'bin.js');
/** The rules bin and the core build it imports, each with the sources it is built from. */
const BUILT = [
  { dist: BIN, src: join(ROOT, 'packages', 'rules', 'src') },
  { dist: join(ROOT, 'packages', 'core', 'dist', 'index.js'), src: join(ROOT, 'packages', 'core', 'src') },
];

function newestUnder(dir: string): number {
  let newest = 0;
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const stat = statSync(join(dir, name));
    if (stat.isFile()) newest = Math.max(newest, stat.mtimeMs);
  }
  return newest;
}

function builtIsCurrent(): boolean {
  try {
    return BUILT.every(({ dist, src }) => statSync(dist).mtimeMs >= newestUnder(src));
  } catch {
    return false;
  }
}

/** The program and the arguments before the CLI's own: `[node, [...args]]`. */
export function rulesCliCommand(): [string, string[]] {
  if (builtIsCurrent()) return [process.execPath, [BIN]];
  return [process.execPath, ['--import', TSX, join(ROOT, 'packages', 'rules', 'src', 'bin.ts')]];
}

/** The environment a `rulesCliCommand()` child needs (tsx reads the repository's path aliases from it). */
export const RULES_CLI_ENV = { TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json') };
