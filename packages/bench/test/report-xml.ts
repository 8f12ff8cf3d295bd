/**
 * A strict XML 1.0 well-formedness check that also returns the element
 * tree, so tests can both prove the SVG parses and query its markers.
 * Enough of the spec for generated SVG: declaration, comments, elements,
 * attributes, the five predefined entities and character references. It
 * rejects what an XML parser rejects: mismatched or unclosed tags, a second
 * root, duplicate or unquoted attributes, a raw `<` or a bare `&`, unknown
 * entities, forbidden control characters. (No DTDs, no CDATA: we never write them.)
 */

export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  text: string;
}

export class XmlError extends Error {}

const NAME = /^[A-Za-z_:][A-Za-z0-9_:.-]*/;
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this pattern removes.
const FORBIDDEN = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/;

function decode(raw: string, at: number): string {
  if (FORBIDDEN.test(raw)) throw new XmlError(`forbidden character near offset ${at}`);
  return raw.replace(/&([^;&\s]*);?/g, (match, body: string) => {
    if (!match.endsWith(';')) throw new XmlError(`bare & near offset ${at}`);
    if (body.startsWith('#x')) {
      if (!/^#x[0-9a-fA-F]+$/.test(body)) throw new XmlError(`bad character reference &${body}; near ${at}`);
      return String.fromCodePoint(parseInt(body.slice(2), 16));
    }
    if (body.startsWith('#')) {
      if (!/^#[0-9]+$/.test(body)) throw new XmlError(`bad character reference &${body}; near ${at}`);
      return String.fromCodePoint(parseInt(body.slice(1), 10));
    }
    const value = ENTITIES[body];
    if (value === undefined) throw new XmlError(`unknown entity &${body}; near offset ${at}`);
    return value;
  });
}

export function parseXml(source: string): XmlElement {
  let i = 0;
  const stack: XmlElement[] = [];
  let root: XmlElement | null = null;
  let rootClosed = false;

  if (source.startsWith('<?xml')) {
    const end = source.indexOf('?>');
    if (end < 0) throw new XmlError('unterminated XML declaration');
    i = end + 2;
  }
  while (i < source.length) {
    const lt = source.indexOf('<', i);
    const textEnd = lt < 0 ? source.length : lt;
    const raw = source.slice(i, textEnd);
    if (raw.includes('>') && raw.includes(']]>')) throw new XmlError(`]]> in text near offset ${i}`);
    const content = decode(raw, i);
    if (stack.length) stack[stack.length - 1].text += content;
    else if (content.trim() !== '') throw new XmlError(`text outside the root element near offset ${i}`);
    if (lt < 0) break;
    i = lt;
    if (source.startsWith('<!--', i)) {
      const end = source.indexOf('-->', i + 4);
      if (end < 0) throw new XmlError('unterminated comment');
      if (source.slice(i + 4, end).includes('--')) throw new XmlError('-- inside a comment');
      i = end + 3;
      continue;
    }
    if (source.startsWith('<?', i) || source.startsWith('<!', i))
      throw new XmlError(`unexpected markup near offset ${i}`);
    if (source[i + 1] === '/') {
      const m = NAME.exec(source.slice(i + 2));
      if (!m) throw new XmlError(`bad end tag near offset ${i}`);
      const open = stack.pop();
      if (!open || open.name !== m[0])
        throw new XmlError(`end tag </${m[0]}> does not match <${open?.name ?? '(none)'}> near offset ${i}`);
      let j = i + 2 + m[0].length;
      while (/\s/.test(source[j] ?? '')) j++;
      if (source[j] !== '>') throw new XmlError(`bad end tag near offset ${i}`);
      i = j + 1;
      if (stack.length === 0) rootClosed = true;
      continue;
    }
    // Start tag.
    const m = NAME.exec(source.slice(i + 1));
    if (!m) throw new XmlError(`bad start tag near offset ${i}`);
    if (rootClosed || (stack.length === 0 && root)) throw new XmlError(`a second root element near offset ${i}`);
    const element: XmlElement = { name: m[0], attrs: {}, children: [], text: '' };
    let j = i + 1 + m[0].length;
    for (;;) {
      const ws = j;
      while (/\s/.test(source[j] ?? '')) j++;
      if (source.startsWith('/>', j)) {
        j += 2;
        break;
      }
      if (source[j] === '>') {
        j += 1;
        stack.push(element);
        break;
      }
      if (j === ws) throw new XmlError(`attributes must be separated by whitespace near offset ${j}`);
      const a = NAME.exec(source.slice(j));
      if (!a) throw new XmlError(`bad attribute near offset ${j}`);
      j += a[0].length;
      while (/\s/.test(source[j] ?? '')) j++;
      if (source[j] !== '=') throw new XmlError(`attribute ${a[0]} without a value near offset ${j}`);
      j++;
      while (/\s/.test(source[j] ?? '')) j++;
      const quote = source[j];
      if (quote !== '"' && quote !== "'") throw new XmlError(`unquoted attribute ${a[0]} near offset ${j}`);
      const close = source.indexOf(quote, j + 1);
      if (close < 0) throw new XmlError(`unterminated attribute ${a[0]}`);
      const value = source.slice(j + 1, close);
      if (value.includes('<')) throw new XmlError(`< in attribute ${a[0]} near offset ${j}`);
      if (a[0] in element.attrs) throw new XmlError(`duplicate attribute ${a[0]} near offset ${j}`);
      element.attrs[a[0]] = decode(value, j);
      j = close + 1;
    }
    if (stack.length && stack[stack.length - 1] !== element) stack[stack.length - 1].children.push(element);
    else if (stack.length > 1) stack[stack.length - 2].children.push(element);
    if (!root) root = element;
    if (stack.length === 0) rootClosed = true;
    i = j;
  }
  if (stack.length) throw new XmlError(`unclosed <${stack[stack.length - 1].name}>`);
  if (!root) throw new XmlError('no root element');
  return root;
}

/** Every element below (and including) `root` that matches. */
export function findAll(root: XmlElement, match: (e: XmlElement) => boolean): XmlElement[] {
  const out: XmlElement[] = [];
  const walk = (e: XmlElement) => {
    if (match(e)) out.push(e);
    e.children.forEach(walk);
  };
  walk(root);
  return out;
}

/** Text of an element and its descendants. */
export function textOf(e: XmlElement): string {
  return e.text + e.children.map(textOf).join('');
}
