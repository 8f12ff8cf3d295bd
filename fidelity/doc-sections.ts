/**
 * Named blocks of a generated markdown file: `<!-- NAME:begin -->` …
 * `<!-- NAME:end -->`. The fidelity suite writes each scenario's section as
 * one (`scenario-<name>`), so a run of a subset replaces only the sections of
 * the scenarios it ran; blocks another tool writes into the same file (the
 * fleet suite's `fleet`) are kept as they are whenever the file is
 * rewritten.
 */

// A marker is a line of its own: a block's text may quote a marker (the fleet section says where it sits).
const BLOCK = /^<!-- ([\w.-]+):begin -->$\n?([\s\S]*?)\n?^<!-- \1:end -->$/gm;

export interface Block {
  name: string;
  /** The text between the markers, without them. */
  body: string;
}

/** Every block of `text`, in order. */
export function readBlocks(text: string): Block[] {
  return [...text.matchAll(BLOCK)].map((m) => ({ name: m[1]!, body: m[2]! }));
}

/** `body` between the markers of block `name`. */
export function block(name: string, body: string): string {
  return `<!-- ${name}:begin -->\n${body}\n<!-- ${name}:end -->`;
}

/**
 * `fresh`, then every block of `previous` that `fresh` does not have and
 * `keep` accepts, in their order: a rewrite that leaves other writers'
 * blocks intact.
 */
export function keepForeignBlocks(fresh: string, previous: string, keep: (name: string) => boolean): string {
  const have = new Set(readBlocks(fresh).map((b) => b.name));
  const kept = readBlocks(previous).filter((b) => !have.has(b.name) && keep(b.name));
  if (kept.length === 0) return fresh;
  return `${fresh.trimEnd()}\n\n${kept.map((b) => block(b.name, b.body)).join('\n\n')}\n`;
}

/** `text` with block `name` holding `body` (appended at the end where it had none): how the fleet suite writes its own. */
export function replaceSection(text: string, name: string, body: string): string {
  const fresh = block(name, body.trim());
  let found = false;
  const replaced = text.replace(BLOCK, (whole, blockName: string) => {
    if (blockName !== name) return whole;
    found = true;
    return fresh;
  });
  return found ? replaced : `${text.trimEnd()}\n\n${fresh}\n`;
}

/** A markdown table. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}
