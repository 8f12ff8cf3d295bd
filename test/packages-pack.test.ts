/**
 * Each package as npm would publish it: `pnpm pack` into a temporary folder, the tarball unpacked, and what a user
 * gets checked — the files `files` names and nothing else, the license, every path the manifest points at, source
 * maps without embedded sources or the building machine's paths, and README links that resolve inside the tarball
 * (or, absolute, inside this repository).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brokenLink, markdownLinks, REPOSITORY } from './support/markdown';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = readdirSync(join(ROOT, 'packages')).filter((dir) =>
  existsSync(join(ROOT, 'packages', dir, 'package.json')),
);
/**
 * Packages with no code of their own, only dependencies (infersignal-otel-sdk: the SDK `@infersignal/node` runs on
 * when the app has none): no build, nothing for the manifest to point at.
 */
const isDependenciesOnly = (dir: string) =>
  !(JSON.parse(readFileSync(join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as { scripts?: object }).scripts;
/** npm adds these whatever `files` says. */
const ALWAYS = new Set(['package.json', 'README.md', 'LICENSE']);

interface Manifest {
  name: string;
  private?: boolean;
  license?: string;
  repository?: { type: string; url: string; directory: string };
  homepage?: string;
  bugs?: { url: string };
  keywords?: string[];
  files: string[];
  main?: string;
  module?: string;
  types?: string;
  bin?: Record<string, string>;
  exports?: Record<string, unknown>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

let workdir: string;

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)));
}

/** Every `./…` path the manifest's exports map names. */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return value.startsWith('./') ? [value] : [];
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets);
  return [];
}

/** Packs `dir`, unpacks the tarball, and returns the unpacked folder. */
function packAndUnpack(dir: string): string {
  const into = mkdtempSync(join(workdir, 'pack-'));
  const out = execFileSync('pnpm', ['pack', '--pack-destination', into], { cwd: join(ROOT, 'packages', dir) });
  const tarball = out.toString().trim().split('\n').pop() as string;
  execFileSync('tar', ['-xzf', tarball.startsWith('/') ? tarball : join(into, tarball), '-C', into]);
  return join(into, 'package');
}

describe.each(PACKAGES)('packages/%s as packed', (dir) => {
  let unpacked: string;
  let files: string[];
  let manifest: Manifest;

  beforeAll(() => {
    workdir ??= mkdtempSync(join(tmpdir(), 'infersignal-pack-'));
    if (!isDependenciesOnly(dir) && !existsSync(join(ROOT, 'packages', dir, 'dist')))
      throw new Error(`packages/${dir} is not built: run \`pnpm build\` first (\`pnpm test\` does)`);
    unpacked = packAndUnpack(dir);
    files = filesUnder(unpacked);
    manifest = JSON.parse(readFileSync(join(unpacked, 'package.json'), 'utf8'));
  });

  it('holds what `files` names and nothing else: no sources, tests or configs', () => {
    for (const file of files) {
      const top = file.split('/')[0];
      expect(ALWAYS.has(file) || manifest.files.includes(top), `${file} is not named by files`).toBe(true);
    }
    for (const entry of manifest.files)
      expect(
        files.some((file) => file === entry || file.startsWith(`${entry}/`)),
        `files names ${entry}, absent`,
      ).toBe(true);
    expect(files.filter((file) => /^(src|test)\/|tsconfig|\.test\./.test(file))).toEqual([]);
  });

  it('carries the Apache-2.0 license and metadata that lead back to this repository', () => {
    expect(manifest.license).toBe('Apache-2.0');
    expect(readFileSync(join(unpacked, 'LICENSE'), 'utf8')).toContain(
      'Apache License\n                           Version 2.0',
    );
    expect(manifest.repository).toEqual({ type: 'git', url: `git+${REPOSITORY}.git`, directory: `packages/${dir}` });
    expect(manifest.homepage).toBe(`${REPOSITORY}/tree/main/packages/${dir}#readme`);
    expect(manifest.bugs).toEqual({ url: `${REPOSITORY}/issues` });
    expect(manifest.keywords).toContain('opentelemetry');
    expect(manifest.private).toBeUndefined();
  });

  it.runIf(isDependenciesOnly(dir))(
    'holds its manifest, README and license only, and depends on registry ranges',
    () => {
      expect(files.sort()).toEqual(['LICENSE', 'README.md', 'package.json']);
      expect(manifest.main ?? manifest.exports ?? manifest.bin).toBeUndefined();
      expect(Object.keys(manifest.dependencies ?? {}).length).toBeGreaterThan(0);
      expect(Object.values(manifest.dependencies ?? {}).filter((range) => range.startsWith('workspace:'))).toEqual([]);
    },
  );

  it.skipIf(isDependenciesOnly(dir))('has every file the manifest points at, and no workspace ranges', () => {
    const targets = [
      manifest.main,
      manifest.module,
      manifest.types,
      ...Object.values(manifest.bin ?? {}),
      ...exportTargets(manifest.exports),
    ].filter((target): target is string => target !== undefined);
    expect(targets.length).toBeGreaterThan(2);
    for (const target of targets) expect(existsSync(join(unpacked, target)), `${target}`).toBe(true);
    const ranges = { ...manifest.dependencies, ...manifest.peerDependencies };
    expect(Object.values(ranges).filter((range) => range.startsWith('workspace:'))).toEqual([]);
  });

  it.skipIf(isDependenciesOnly(dir))(
    'ships source maps that name the sources without embedding them or a build path',
    () => {
      const maps = files.filter((file) => file.endsWith('.map'));
      expect(maps.length).toBeGreaterThan(0);
      const sources = new Set<string>();
      for (const file of maps) {
        const text = readFileSync(join(unpacked, file), 'utf8');
        const map = JSON.parse(text) as { sources: string[]; sourcesContent?: unknown };
        expect(map.sourcesContent, file).toBeUndefined();
        expect(text, file).not.toContain(ROOT);
        for (const source of map.sources) sources.add(source);
      }
      // An entry that only re-exports a chunk maps to nothing of its own; the chunks name the sources.
      expect([...sources].filter((source) => source.startsWith('../src/')).length).toBeGreaterThan(0);
    },
  );

  it('has a README whose every link resolves inside the tarball or, absolute, in this repository', () => {
    const readme = join(unpacked, 'README.md');
    const links = markdownLinks(readFileSync(readme, 'utf8'));
    const broken = links
      .map((link) => ({ link, why: brokenLink(readme, link.target, unpacked, ROOT) }))
      .filter(({ why }) => why !== undefined)
      .map(({ link, why }) => `README.md:${link.line} ${link.target}: ${why}`);
    expect(broken).toEqual([]);
  });
});

afterAll(() => {
  if (workdir) rmSync(workdir, { recursive: true, force: true });
});
