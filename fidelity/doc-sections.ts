/**
 * Sections of a generated doc that another command writes: each between
 * `<!-- NAME:begin -->` and `<!-- NAME:end -->` lines. A command that
 * rewrites the whole file keeps them (`keepSections`); the command that owns
 * one replaces only its own (`replaceSection`).
 */

const BLOCK = /<!-- ([\w-]+):begin -->\n[\s\S]*?\n<!-- \1:end -->/g;

/** The marked blocks of `text`, by name, markers included. */
export function sectionsOf(text: string): Map<string, string> {
  return new Map([...text.matchAll(BLOCK)].map((match) => [match[1], match[0]]));
}

/**
 * `fresh` with every marked block of `old`: a block `fresh` also has is
 * replaced by the old one, the others are appended at the end, in their order.
 */
export function keepSections(old: string, fresh: string): string {
  let text = fresh;
  for (const [name, block] of sectionsOf(old)) {
    const own = sectionsOf(text).get(name);
    text = own ? text.replace(own, () => block) : `${text.trimEnd()}\n\n${block}\n`;
  }
  return text;
}

/** `text` with the block `name` holding `body` (between its markers), appended if it had none. */
export function replaceSection(text: string, name: string, body: string): string {
  const block = `<!-- ${name}:begin -->\n${body.trim()}\n<!-- ${name}:end -->`;
  const own = sectionsOf(text).get(name);
  return own ? text.replace(own, () => block) : `${text.trimEnd()}\n\n${block}\n`;
}
