import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// Tests run against the packages' sources, so `pnpm test` needs no build
// step to see a change; the build is checked separately by `pnpm build`.
const packagesDir = fileURLToPath(new URL('./packages/', import.meta.url));
const alias = Object.fromEntries(
  readdirSync(packagesDir).map((name) => [`@infersignal/${name}`, `${packagesDir}${name}/src/index.ts`]),
);

export default defineConfig({
  resolve: { alias },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // The SDK 3 leg runs on Node 24 with its own config (`pnpm test:sdk3`).
    exclude: [...configDefaults.exclude, 'test/otel-sdk3/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
