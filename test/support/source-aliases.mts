import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Vitest aliases that run the packages' sources, so a test sees a change
 * without a build (the build is checked separately by `pnpm build`): each
 * package's index, and each `exports` subpath built from a source of its own
 * (`@infersignal/core/signals` → packages/core/src/signals.ts).
 */
export function sourceAliases(): Array<{ find: string | RegExp; replacement: string }> {
  const packagesDir = fileURLToPath(new URL('../../packages/', import.meta.url));
  return readdirSync(packagesDir).flatMap((name) => {
    const dir = `${packagesDir}${name}`;
    const manifest = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8')) as { exports?: Record<string, unknown> };
    const subpaths = Object.keys(manifest.exports ?? {})
      .filter((key) => key !== '.' && existsSync(`${dir}/src/${key.slice(2)}.ts`))
      .map((key) => ({ find: `@infersignal/${name}/${key.slice(2)}`, replacement: `${dir}/src/${key.slice(2)}.ts` }));
    return [...subpaths, { find: new RegExp(`^@infersignal/${name}$`), replacement: `${dir}/src/index.ts` }];
  });
}
