/**
 * What the Gateway API Inference Extension's endpoint picker (llm-d-router) does with a model server's
 * /metrics, in a few lines, for the tests: parse the Prometheus legacy text format family by family, pick
 * a sample by an engine config's metric spec (`name{label="value"}`: the first sample whose labels match),
 * and score a replica's saturation as max(queued / queueDepthThreshold, kv / kvCacheUtilThreshold).
 */

interface Sample {
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string | undefined;
  samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/y;
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created'];

function parseValue(raw: string): number {
  if (raw === '+Inf') return Number.POSITIVE_INFINITY;
  if (raw === '-Inf') return Number.NEGATIVE_INFINITY;
  const value = raw === 'NaN' ? Number.NaN : Number(raw);
  if (raw !== 'NaN' && Number.isNaN(value)) throw new Error(`bad sample value ${JSON.stringify(raw)}`);
  return value;
}

function parseLabels(raw: string | undefined, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (!raw) return labels;
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < raw.length) {
    const match = LABEL.exec(raw);
    if (!match) throw new Error(`bad labels in ${JSON.stringify(line)}`);
    labels[match[1]!] = match[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  }
  return labels;
}

/**
 * The legacy text format as Prometheus's expfmt TextParser reads it: `# HELP` and `# TYPE` open a
 * family, any other comment is skipped, a family's samples must be contiguous, and a second TYPE or a
 * family that reappears is an error. Throws on what the picker would fail to parse.
 */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  let current: Family | undefined;
  const open = (name: string): Family => {
    if (current?.name === name) return current;
    if (families.has(name)) throw new Error(`family ${name} appears twice (its samples are not contiguous)`);
    current = { name, type: undefined, samples: [] };
    families.set(name, current);
    return current;
  };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const [, keyword, name] = line.split(/\s+/);
      if (keyword === 'HELP' || keyword === 'TYPE') {
        const family = open(name!);
        if (keyword === 'TYPE') {
          if (family.type !== undefined) throw new Error(`second TYPE line for ${name}`);
          if (family.samples.length > 0) throw new Error(`TYPE line for ${name} after its samples`);
          family.type = line.split(/\s+/)[3];
        }
      }
      continue;
    }
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`bad sample line ${JSON.stringify(line)}`);
    const name = match[1]!;
    // A histogram's or counter's samples belong to the family their suffix-less name opened.
    const base = current && SUFFIXES.some((s) => name === current!.name + s) ? current.name : name;
    open(base).samples.push({ labels: parseLabels(match[2], line), value: parseValue(match[3]!) });
  }
  return families;
}

/** A metric spec (`name` or `name{label="value",…}`), as the picker's engine config writes it. */
export function parseSpec(spec: string): { name: string; labels: Record<string, string> } {
  const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$/.exec(spec);
  if (!match) throw new Error(`bad metric spec ${JSON.stringify(spec)}`);
  return { name: match[1]!, labels: parseLabels(match[2], spec) };
}

/** The value a spec selects: the first sample of its family whose labels include the spec's; undefined when none. */
function select(families: Map<string, Family>, spec: string): number | undefined {
  const { name, labels } = parseSpec(spec);
  const family = families.get(name);
  const sample = family?.samples.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return sample?.value;
}

export interface EngineConfig {
  queuedRequestsSpec: string;
  runningRequestsSpec: string;
  kvUsageSpec: string;
}

export interface Reading {
  queued: number;
  running: number;
  kv: number;
}

/** The three protocol gauges of one scrape, or an error naming the one missing. */
export function read(text: string, engine: EngineConfig): Reading {
  const families = parseExposition(text);
  const get = (spec: string) => {
    const value = select(families, spec);
    if (value === undefined) throw new Error(`no sample for ${spec}`);
    return value;
  };
  return {
    queued: get(engine.queuedRequestsSpec),
    running: get(engine.runningRequestsSpec),
    kv: get(engine.kvUsageSpec),
  };
}

/** The picker's saturation of one replica: 1 at its thresholds. */
export function saturation(
  r: Reading,
  thresholds: { queueDepthThreshold: number; kvCacheUtilThreshold: number },
): number {
  return Math.max(r.queued / thresholds.queueDepthThreshold, r.kv / thresholds.kvCacheUtilThreshold);
}
