/**
 * Bundles an entry into one CommonJS file inside this package, with
 * InferSignal's sources inlined and every other package left to `require`:
 * run from here, those resolve to this package's SDK 3.x line. CommonJS,
 * because that is where instrumentation-http's require hook patches
 * node:http without a loader flag.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const here = fileURLToPath(new URL('..', import.meta.url));
const packagesDir = fileURLToPath(new URL('../../../packages/', import.meta.url));

/** Writes `<here>/.tmp/bundle-*\/<name>.cjs` and returns its path (the caller removes the folder). */
export async function bundle(entry: string, name: string): Promise<{ file: string; dir: string }> {
  mkdirSync(join(here, '.tmp'), { recursive: true });
  const dir = mkdtempSync(join(here, '.tmp', 'bundle-'));
  const file = join(dir, `${name}.cjs`);
  await build({
    entryPoints: [entry],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    logLevel: 'warning',
    // Sources that read import.meta.url (createRequire of the optional peers) get the bundle's own.
    define: { 'import.meta.url': '__bundleUrl' },
    banner: { js: 'const __bundleUrl = require("node:url").pathToFileURL(__filename).href;' },
    plugins: [
      {
        name: 'infersignal-sources',
        setup(b) {
          b.onResolve({ filter: /^@infersignal\/[^/]+$/ }, (args) => ({
            path: join(packagesDir, args.path.slice('@infersignal/'.length), 'src', 'index.ts'),
          }));
          b.onResolve({ filter: /^[^./]/ }, (args) => ({ path: args.path, external: true }));
        },
      },
    ],
  });
  return { file, dir };
}
