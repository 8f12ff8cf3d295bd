import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

/**
 * The one build of every package, run from the package's folder
 * (`tsup --config ../../tsup.config.ts`): `src/index.ts`, a source for each
 * further `exports` subpath (`./signals` ← `src/signals.ts`), and a source
 * for each `bin` entry (`./dist/cli.js` ← `src/cli.ts`), as ESM + CJS, with
 * declarations for the index and the subpaths.
 */
const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as {
  bin?: Record<string, string>;
  exports?: Record<string, unknown>;
};
const bins = Object.values(manifest.bin ?? {}).map((out) =>
  out.replace(/^\.\/dist\//, 'src/').replace(/\.c?js$/, '.ts'),
);
// Subpaths served from dist (`"./signals": { import: ./dist/signals.js … }`); files shipped as they are (a .proto) are not built.
const subpaths = Object.entries(manifest.exports ?? {})
  .filter(([key, target]) => key !== '.' && JSON.stringify(target).includes('./dist/'))
  .map(([key]) => `src/${key.slice(2)}.ts`);

export default defineConfig({
  entry: ['src/index.ts', ...subpaths, ...bins],
  format: ['esm', 'cjs'],
  dts: { entry: ['src/index.ts', ...subpaths] },
  // Shared chunks in CJS too (tsup's experimental splitting): an entry point and a subpath share one copy of
  // each module, so a class like InferSignalConfigError is the same object whichever entry threw it.
  splitting: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  // Sources that read import.meta.url (koffi's createRequire, the .proto path) need it in the CJS build.
  shims: true,
});
