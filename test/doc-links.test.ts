import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { brokenLink, markdownAnchors, markdownLinks } from './support/markdown';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The folders under examples/ and packages/. */
function projects(): string[] {
  return ['examples', 'packages'].flatMap((parent) =>
    readdirSync(join(ROOT, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(ROOT, parent, entry.name)),
  );
}

/** docs/**, the root README, each example's and each package's README. */
function documents(): string[] {
  const files = [join(ROOT, 'README.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  walk(join(ROOT, 'docs'));
  for (const dir of projects()) if (existsSync(join(dir, 'README.md'))) files.push(join(dir, 'README.md'));
  return files;
}

describe('markdown links', () => {
  it('reads inline, multi-line, reference and href links, and skips code', () => {
    const links = markdownLinks(
      [
        'See [the runbook](runbook.md#queue-wait) and [a long',
        'title](../README.md "Title").',
        '`[not](a-link.md)` and',
        '```ts',
        'const x = a[0](b) // [no](link.md)',
        '```',
        '[ref]: docs/node.md',
        '<a href="guide.md#top">guide</a>',
      ].join('\n'),
    );
    expect(links).toEqual([
      { target: 'runbook.md#queue-wait', line: 1 },
      { target: '../README.md', line: 2 },
      { target: 'docs/node.md', line: 7 },
      { target: 'guide.md#top', line: 8 },
    ]);
  });

  it('gives headings the anchors GitHub gives them', () => {
    const anchors = markdownAnchors(
      [
        '# InferSignal',
        '## Your own NodeSDK',
        '## `start()` options',
        '## Node 20, 22 and 24 — supported versions',
        '## Limits',
        '## Limits',
        '```sh',
        '# not a heading',
        '```',
        '<a id="custom"></a>',
      ].join('\n'),
    );
    expect([...anchors].sort()).toEqual(
      [
        'infersignal',
        'your-own-nodesdk',
        'start-options',
        'node-20-22-and-24--supported-versions',
        'limits',
        'limits-1',
        'custom',
      ].sort(),
    );
  });

  it('resolves files, folders, headings and links to the repository, and names what is missing', () => {
    const from = join(ROOT, 'docs', 'design.md');
    expect(brokenLink(from, 'metrics.md', ROOT)).toBeUndefined();
    expect(brokenLink(from, '../examples/demo', ROOT)).toBeUndefined();
    expect(
      brokenLink(from, 'https://github.com/infersignal/infersignal/blob/main/docs/rules.md', ROOT),
    ).toBeUndefined();
    expect(brokenLink(from, 'capacity.md', ROOT)).toBe('docs/capacity.md does not exist');
    expect(brokenLink(from, 'rules.md#no-such-heading', ROOT)).toBe('docs/rules.md has no heading #no-such-heading');
    expect(brokenLink(from, '../../outside.md', ROOT)).toMatch(/^points outside/);
    expect(brokenLink(from, 'https://github.com/infersignal/infersignal/tree/main/examples/nope', ROOT)).toBe(
      'examples/nope does not exist',
    );
  });

  it('every example and every package has a README', () => {
    const missing = projects().filter((dir) => !existsSync(join(dir, 'README.md')));
    expect(missing.map((dir) => relative(ROOT, dir))).toEqual([]);
  });

  it('every link in docs/, the READMEs and the examples resolves', () => {
    const broken: string[] = [];
    const files = documents();
    expect(files.length).toBeGreaterThan(20);
    let checked = 0;
    for (const file of files) {
      for (const link of markdownLinks(readFileSync(file, 'utf8'))) {
        checked++;
        const why = brokenLink(file, link.target, ROOT);
        if (why) broken.push(`${relative(ROOT, file)}:${link.line} ${link.target}: ${why}`);
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });

  it("every signal core can raise has a row in the runbook's table of in-process signals", () => {
    // The union core's AlertEvent.signal is typed with (contract.ts): the names core itself reports.
    const types = readFileSync(join(ROOT, 'packages/core/src/contract.ts'), 'utf8');
    const union = /export type SignalName =([^;]*);/.exec(types)?.[1] ?? '';
    const names = [...union.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]);
    expect(names.length).toBeGreaterThan(8);
    const runbook = readFileSync(join(ROOT, 'docs/runbook.md'), 'utf8');
    const rows = new Set([...runbook.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]));
    expect(names.filter((name) => !rows.has(name))).toEqual([]);
  });
});
