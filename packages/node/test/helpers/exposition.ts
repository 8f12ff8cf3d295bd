/** A small parser of the Prometheus text exposition format (0.0.4), enough to assert on. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type?: string;
  unit?: string;
  help?: string;
  samples: Sample[];
}

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    labels[m[1]] = m[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  }
  return labels;
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

/** Families keyed by the name in `# TYPE`; histogram `_bucket/_sum/_count` samples go to their family. */
export function parseExposition(body: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { name, samples: [] }));
    return f;
  };
  for (const line of body.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE|UNIT) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const f = family(meta[2]);
      if (meta[1] === 'TYPE') f.type = meta[3];
      else if (meta[1] === 'UNIT') f.unit = meta[3];
      else f.help = meta[3];
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    if (!sample) throw new Error(`unparseable exposition line: ${line}`);
    const [, name, labelText, value] = sample;
    const base = families.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    family(base).samples.push({ name, labels: labelText ? parseLabels(labelText) : {}, value: parseValue(value) });
  }
  return families;
}

/** Samples of `name` whose labels include every `match` pair. */
export function samples(
  families: Map<string, Family>,
  family: string,
  name: string,
  match: Record<string, string> = {},
): Sample[] {
  return (families.get(family)?.samples ?? []).filter(
    (s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v),
  );
}
