/**
 * docs/benchmarks.md stays a page of current results: every suite in
 * benchmarks/ has its section (and its root `bench:` script), the page is
 * short, and neither it nor the code's comments carry dates: history lives
 * in git and CHANGELOG.md.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const doc = readFileSync(join(ROOT, 'docs/benchmarks.md'), 'utf8');
const lines = doc.trimEnd().split('\n');
const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;
/** Every top-level file of benchmarks/ is a suite, except the runner of them all. */
const suites = readdirSync(join(ROOT, 'benchmarks'))
  .filter((f) => f.endsWith('.ts') && f !== 'all.ts')
  .map((f) => f.slice(0, -'.ts'.length));
/** A date as history writes it: a year and a month, with or without the day. */
const DATE = /\b20\d\d-[01]\d\b/;

/** The one-off studies' findings, a line each, kept apart from the current results. */
const FINDINGS = '## What the one-off studies found';

describe('docs/benchmarks.md', () => {
  it('is at most 230 lines of current results (about 20 a suite), the findings of the removed studies a line each; none over 300 characters', () => {
    const from = lines.indexOf(FINDINGS);
    expect(from, FINDINGS).toBeGreaterThan(0);
    const to = lines.findIndex((line, i) => i > from && (line.startsWith('## ') || line.startsWith('<!-- suite:')));
    const findings = lines.slice(from, to < 0 ? lines.length : to);
    expect(findings.filter((line) => line.startsWith('- ')).length).toBeGreaterThan(0);
    expect(findings.filter((line) => line.trim() !== '' && !line.startsWith('- ')).length).toBeLessThanOrEqual(2);
    // The page's opening paragraph says how to read it; the suites' sections are the results.
    const results = lines.slice(lines.findIndex((line) => line.startsWith('<!-- suite:')));
    expect(results.length - findings.length).toBeLessThanOrEqual(230);
    expect(lines.filter((line) => line.length > 300)).toEqual([]);
  });

  it('carries no dates', () => {
    expect(lines.filter((line) => DATE.test(line))).toEqual([]);
  });

  it('has one section of at most 100 lines per suite, each suite with its root script', () => {
    expect(suites.length).toBeGreaterThan(0);
    for (const suite of suites) {
      const start = lines.indexOf(`<!-- suite:${suite} -->`);
      const end = lines.indexOf(`<!-- /suite:${suite} -->`);
      expect(start, `section of ${suite}`).toBeGreaterThanOrEqual(0);
      expect(end - start + 1, `lines of ${suite}'s section`).toBeLessThanOrEqual(100);
      expect(lines.lastIndexOf(`<!-- suite:${suite} -->`)).toBe(start);
      expect(scripts[`bench:${suite}`], `root script bench:${suite}`).toMatch(new RegExp(`benchmarks ${suite}$`));
    }
  });
});

/** Source files under `dir`, skipping dependencies and build output. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(c|ts|mts|mjs|js|tsx)$/.test(name) ? [path] : [];
  });
}

describe('code comments', () => {
  it('say why, not when: no dates in the comments of benchmarks, fidelity, tests and package sources', () => {
    const packages = readdirSync(join(ROOT, 'packages')).flatMap((p) =>
      ['src', 'test'].map((d) => join(ROOT, 'packages', p, d)).filter((d) => statSync(d, { throwIfNoEntry: false })),
    );
    const files = [...['benchmarks', 'fidelity', 'test'].map((d) => join(ROOT, d)), ...packages].flatMap(sources);
    expect(files.length).toBeGreaterThan(100);
    const dated: string[] = [];
    for (const file of files) {
      for (const [i, line] of readFileSync(file, 'utf8').split('\n').entries()) {
        // A comment line (`//`, or inside a block comment) with a date in the comment part.
        const comment = /^\s*(\*|\/\*)/.test(line) ? line : line.includes('//') ? line.slice(line.indexOf('//')) : '';
        if (DATE.test(comment)) dated.push(`${file.slice(ROOT.length)}:${i + 1}`);
      }
    }
    expect(dated).toEqual([]);
  });
});
