import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { sourceAliases } from '../support/source-aliases.mts';

/**
 * The SDK 3 leg: InferSignal's sources (as the root config runs them), but
 * every OpenTelemetry import resolved from this package, which pins the
 * SDK 3.x line — wherever the importing source file lives.
 */
const here = fileURLToPath(new URL('.', import.meta.url));
const alias = sourceAliases();
const otel = readdirSync(`${here}node_modules/@opentelemetry`).map((name) => `@opentelemetry/${name}`);

export default defineConfig({
  root: here,
  resolve: { alias, dedupe: otel },
  test: {
    include: ['*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
