import { defineConfig } from 'tsup';

export default defineConfig({
  // bin.ts is the `infersignal-rules` executable; index.ts the library (runRulesCli included).
  entry: ['src/index.ts', 'src/bin.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
