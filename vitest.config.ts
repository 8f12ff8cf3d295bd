import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests run against the packages' sources, so `pnpm test` needs no build
// step to see a change; the build is checked separately by `pnpm build`.
// Each package's index, and each `exports` subpath built from a source of
// its own (`@infersignal/core/signals` → packages/core/src/signals.ts).
const packagesDir = fileURLToPath(new URL('./packages/', import.meta.url));
const alias = readdirSync(packagesDir).flatMap((name) => {
  const dir = `${packagesDir}${name}`;
  const manifest = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8')) as { exports?: Record<string, unknown> };
  const subpaths = Object.keys(manifest.exports ?? {})
    .filter((key) => key !== '.' && existsSync(`${dir}/src/${key.slice(2)}.ts`))
    .map((key) => ({ find: `@infersignal/${name}/${key.slice(2)}`, replacement: `${dir}/src/${key.slice(2)}.ts` }));
  return [...subpaths, { find: new RegExp(`^@infersignal/${name}$`), replacement: `${dir}/src/index.ts` }];
});

export default defineConfig({
  resolve: { alias },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
