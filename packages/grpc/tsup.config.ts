import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
  // INFERENCE_PROTO_PATH uses import.meta.url; the shim gives the CJS build one.
  shims: true,
});
