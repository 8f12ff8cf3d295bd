import { defineConfig } from 'tsup';

export default defineConfig({
  // cli.ts is the `infersignal` bin (its #! line is kept by esbuild).
  entry: ['src/index.ts', 'src/cli.ts'],
  format: ['esm', 'cjs'],
  dts: { entry: 'src/index.ts' },
  clean: true,
  sourcemap: true,
  target: 'node20',
});
