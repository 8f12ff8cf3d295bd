import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/** The repository's address; a link to `${REPOSITORY}/blob/main/<path>` is checked against `<path>` here. */
export const REPOSITORY = 'https://github.com/infersignal/infersignal';

export interface MarkdownLink {
  /** The target as written: `docs/node.md#start`, `https://…`. */
  target: string;
  line: number;
}

/** Markdown text with fenced code blocks and inline code spans blanked out, line breaks kept. */
function withoutCode(markdown: string): string {
  const lines = markdown.split('\n');
  let fence: string | undefined;
  return lines
    .map((line) => {
      const opener = /^\s*(`{3,}|~{3,})/.exec(line);
      if (fence) {
        if (opener?.[1].startsWith(fence)) fence = undefined;
        return '';
      }
      if (opener) {
        fence = opener[1];
        return '';
      }
      return line.replace(/(`+)[^`]*?\1/g, '');
    })
    .join('\n');
}

/** Inline links and images (`[text](target)`, the text may span lines), reference definitions and `href`s. */
export function markdownLinks(markdown: string): MarkdownLink[] {
  const text = withoutCode(markdown);
  const links: MarkdownLink[] = [];
  const lineAt = (index: number) => text.slice(0, index).split('\n').length;
  for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
    links.push({ target: match[1], line: lineAt(match.index) });
  for (const match of text.matchAll(/^[ \t]{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm))
    links.push({ target: match[1], line: lineAt(match.index) });
  for (const match of text.matchAll(/\bhref="([^"]+)"/g)) links.push({ target: match[1], line: lineAt(match.index) });
  return links;
}

/** The anchors GitHub gives a file's headings (github-slugger: lower case, punctuation dropped, spaces to `-`, repeats numbered) and its explicit `id`/`name` anchors. */
export function markdownAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const lines = markdown.split('\n');
  let fence: string | undefined;
  for (const line of lines) {
    const opener = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (opener?.[1].startsWith(fence)) fence = undefined;
      continue;
    }
    if (opener) {
      fence = opener[1];
      continue;
    }
    for (const match of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]);
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const textOnly = heading[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .replace(/[*`]/g, '');
    const base = textOnly
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/**
 * Why a link from `file` does not resolve, or undefined when it does. Relative targets must name a file or folder
 * inside `root` (a package's tarball, or the repository), and a `#fragment` a heading of that markdown file;
 * `${REPOSITORY}/blob|tree/main/…` links are read as paths inside `repoRoot`. Other absolute URLs are not fetched
 * (no network in the tests).
 */
export function brokenLink(file: string, target: string, root: string, repoRoot = root): string | undefined {
  let path: string;
  let fragment: string | undefined;
  let within = root;
  const repoLink = new RegExp(`^${REPOSITORY.replace(/[.]/g, '\\.')}/(?:blob|tree)/main/([^#?]*)(?:#(.*))?$`).exec(
    target,
  );
  if (repoLink) {
    path = resolve(repoRoot, repoLink[1]);
    fragment = repoLink[2];
    within = repoRoot;
  } else if (target.startsWith(REPOSITORY)) {
    return undefined; // the issue tracker, the repository's front page
  } else if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
    return undefined;
  } else {
    const [pathPart, hash] = target.split('#', 2);
    path = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
    fragment = hash;
  }
  const inside = relative(within, path);
  if (inside.startsWith('..') || inside.startsWith(sep)) return `points outside ${within}`;
  if (!existsSync(path)) return `${inside || '.'} does not exist`;
  if (fragment === undefined || fragment === '') return undefined;
  if (statSync(path).isDirectory()) {
    const readme = join(path, 'README.md');
    if (!existsSync(readme)) return `#${fragment} on a folder without a README`;
    path = readme;
  }
  if (!path.endsWith('.md')) return undefined; // a line anchor in a source file (#L10)
  const anchors = markdownAnchors(readFileSync(path, 'utf8'));
  return anchors.has(decodeURIComponent(fragment))
    ? undefined
    : `${relative(within, path)} has no heading #${fragment}`;
}
