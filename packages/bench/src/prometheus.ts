/**
 * A small reader of the Prometheus text exposition format (0.0.4): enough
 * to follow InferSignal's signal-level gauge and alert counter during a
 * run. Histograms and exemplars are read as plain samples.
 */

export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function unescapeLabel(value: string): string {
  return value.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

function parseLabels(text: string, out: Record<string, string>): void {
  let i = 0;
  while (i < text.length) {
    while (text[i] === ' ' || text[i] === ',') i++;
    const eq = text.indexOf('=', i);
    if (eq < 0) return;
    const key = text.slice(i, eq).trim();
    if (text[eq + 1] !== '"') return;
    let j = eq + 2;
    let raw = '';
    while (j < text.length && text[j] !== '"') {
      if (text[j] === '\\' && j + 1 < text.length) {
        raw += text[j] + text[j + 1];
        j += 2;
      } else raw += text[j++];
    }
    out[key] = unescapeLabel(raw);
    i = j + 1;
  }
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

/** Parses exposition text; `only` (metric names) skips every other line cheaply. */
export function parseExposition(text: string, only?: ReadonlySet<string>): PromSample[] {
  const out: PromSample[] = [];
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    const nameEnd = brace >= 0 && (space < 0 || brace < space) ? brace : space;
    if (nameEnd <= 0) continue;
    const name = line.slice(0, nameEnd);
    if (only && !only.has(name)) continue;
    const labels: Record<string, string> = {};
    let rest: string;
    if (nameEnd === brace) {
      const close = line.lastIndexOf('}');
      if (close < brace) continue;
      parseLabels(line.slice(brace + 1, close), labels);
      rest = line.slice(close + 1).trim();
    } else rest = line.slice(nameEnd + 1).trim();
    const value = parseValue(rest.split(/\s+/)[0]);
    if (Number.isNaN(value)) continue;
    out.push({ name, labels, value });
  }
  return out;
}
