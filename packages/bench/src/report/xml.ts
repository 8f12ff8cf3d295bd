/**
 * A few helpers to write SVG and HTML as strings. Every text and attribute
 * value goes through `escapeXml`, so a signal name or a target URL taken
 * from a result file cannot break (or inject into) the markup.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Characters XML 1.0 forbids anywhere (control characters other than tab, LF, CR). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this pattern removes.
const FORBIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;

export function escapeXml(text: string | number): string {
  return String(text)
    .replace(FORBIDDEN, '')
    .replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

export type Attrs = Record<string, string | number | boolean | null | undefined>;

function attributes(attrs: Attrs): string {
  let out = '';
  for (const key of Object.keys(attrs)) {
    const value = attrs[key];
    if (value === null || value === undefined || value === false) continue;
    out += ` ${key}="${escapeXml(value === true ? key : typeof value === 'number' ? round(value) : value)}"`;
  }
  return out;
}

/** Coordinates with two decimals: enough for a screen, and half the bytes of full floats. */
export function round(n: number): string {
  if (!Number.isFinite(n)) return '0';
  return String(Math.round(n * 100) / 100);
}

/** An element; children are already-built markup strings. */
export function el(tag: string, attrs: Attrs = {}, ...children: (string | null | undefined | false)[]): string {
  const inner = children.filter((c): c is string => typeof c === 'string').join('');
  return inner ? `<${tag}${attributes(attrs)}>${inner}</${tag}>` : `<${tag}${attributes(attrs)}/>`;
}

/** Text content, escaped. */
export function text(tag: string, attrs: Attrs, content: string): string {
  return `<${tag}${attributes(attrs)}>${escapeXml(content)}</${tag}>`;
}

/** An SVG path through points; `null` breaks the line (a gap in the data). */
export function polyline(points: readonly ([number, number] | null)[]): string {
  let d = '';
  let pen = false;
  for (const p of points) {
    if (!p) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${round(p[0])} ${round(p[1])}`;
    pen = true;
  }
  return d;
}
