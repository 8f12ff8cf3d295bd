import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

/**
 * The one build of every package, run from the package's folder
 * (`tsup --config ../../tsup.config.ts`): `src/index.ts` and a source for
 * each `bin` entry (`./dist/cli.js` ← `src/cli.ts`), as ESM + CJS, with
 * declarations for the index only.
 */
const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as { bin?: Record<string, string> };
const bins = Object.values(manifest.bin ?? {}).map((out) =>
  out.replace(/^\.\/dist\//, 'src/').replace(/\.c?js$/, '.ts'),
);

export default defineConfig({
  entry: ['src/index.ts', ...bins],
  format: ['esm', 'cjs'],
  dts: { entry: 'src/index.ts' },
  clean: true,
  sourcemap: true,
  target: 'node20',
  // Sources that read import.meta.url (koffi's createRequire, the .proto path) need it in the CJS build.
  shims: true,
});
