import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  // src/nvml.ts loads koffi with createRequire(import.meta.url): the CJS build needs the shim.
  shims: true,
});
