/**
 * The Prometheus text exposition (format 0.0.4) of a collection, written
 * here rather than by `@opentelemetry/exporter-prometheus`: that package
 * pins exact SDK versions (0.223.0 wants sdk-metrics 2.12.0), so depending
 * on it put a second copy of the SDK in most apps' trees. The output is the
 * exporter's: `target_info` for the resource, `otel_scope_name` /
 * `otel_scope_version` labels, HELP / UNIT / TYPE once per family.
 *
 * A name two scopes export is written once: another scope's metric wins
 * over InferSignal's own (its runtime gauges beside
 * instrumentation-runtime-node's); otherwise the first, and a later one of
 * another type is dropped. One family written twice is an exposition
 * Prometheus rejects.
 */
import {
  DataPointType,
  type DataPoint,
  type Histogram,
  type MetricData,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';

type Attributes = Record<string, unknown>;

interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram';
  own: boolean;
  metrics: { metric: MetricData; scope: Attributes }[];
}

const isOwn = (scope: string) => scope.startsWith('@infersignal/');

function typeOf(metric: MetricData): Family['type'] | undefined {
  switch (metric.dataPointType) {
    case DataPointType.SUM:
      return metric.isMonotonic ? 'counter' : 'gauge';
    case DataPointType.GAUGE:
      return 'gauge';
    case DataPointType.HISTOGRAM:
      return 'histogram';
    default:
      // Exponential histograms have no text-format equivalent (the stock exporter drops them too).
      return undefined;
  }
}

const escapeText = (text: string) => text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const NEEDS_ESCAPE = /[\\\n"]/;
const NOT_LABEL_CHAR = /[^a-zA-Z0-9_]/;

/** Label names seen so far, mapped (attribute keys are few; the cache is bounded all the same). */
const labelNames = new Map<string, string>();
const MAX_LABEL_NAMES = 1024;

function labelName(key: string): string {
  if (!NOT_LABEL_CHAR.test(key) && !key.includes('__')) return key;
  let name = labelNames.get(key);
  if (name === undefined) {
    name = key.replace(/[^a-zA-Z0-9_]/g, '_').replace(/_{2,}/g, '_');
    if (labelNames.size < MAX_LABEL_NAMES) labelNames.set(key, name);
  }
  return name;
}

function labelValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return NEEDS_ESCAPE.test(text) ? escapeText(text).replace(/"/g, '\\"') : text;
}

function number(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/**
 * `name="value",…` of a point's attributes and its scope's labels, in the
 * order of `{ ...attributes, ...scope }` (a scope label's value wins).
 */
function labelText(attributes: Attributes, scope: Attributes): string {
  let text = '';
  for (const key of Object.keys(attributes)) {
    const value = Object.hasOwn(scope, key) ? scope[key] : attributes[key];
    text += `${text ? ',' : ''}${labelName(key)}="${labelValue(value)}"`;
  }
  for (const key of Object.keys(scope)) {
    if (!Object.hasOwn(attributes, key)) text += `${text ? ',' : ''}${labelName(key)}="${labelValue(scope[key])}"`;
  }
  return text;
}

const line = (name: string, labels: string, value: number) =>
  `${name}${labels ? `{${labels}}` : ''} ${number(value)}\n`;

/** Text of at least this many characters is handed out as one chunk. */
export const CHUNK_CHARS = 64 * 1024;

/** The samples of one family, in chunks of at least `CHUNK_CHARS` (the last one shorter, possibly empty). */
function* points(family: Family, head: string): Generator<string, string> {
  let out = head;
  for (const { metric, scope } of family.metrics) {
    if (family.type !== 'histogram') {
      for (const point of metric.dataPoints as DataPoint<number>[]) {
        out += line(family.name, labelText(point.attributes, scope), point.value);
        if (out.length >= CHUNK_CHARS) {
          yield out;
          out = '';
        }
      }
      continue;
    }
    const count = `${family.name}_count`;
    const sum = `${family.name}_sum`;
    const bucket = `${family.name}_bucket{`;
    for (const point of metric.dataPoints as DataPoint<Histogram>[]) {
      const labels = labelText(point.attributes, scope);
      const le = labels ? `${labels},le="` : 'le="';
      const { buckets, count: n, sum: total } = point.value;
      out += line(count, labels, n);
      if (total !== undefined) out += line(sum, labels, total);
      let cumulative = 0;
      for (let i = 0; i < buckets.counts.length; i++) {
        cumulative += buckets.counts[i];
        const bound = buckets.boundaries[i];
        out += `${bucket}${le}${bound === undefined || bound === Number.POSITIVE_INFINITY ? '+Inf' : String(bound)}"} ${number(cumulative)}\n`;
      }
      if (out.length >= CHUNK_CHARS) {
        yield out;
        out = '';
      }
    }
  }
  return out;
}

/**
 * The exposition of `resourceMetrics`, each metric named by `nameOf`, as
 * chunks of about `CHUNK_CHARS` characters: at the cardinality caps the text
 * is tens of megabytes, which a caller writes (and lets the event loop turn)
 * chunk by chunk rather than as one string.
 */
export function* expositionChunks(
  resourceMetrics: ResourceMetrics,
  nameOf: (metric: MetricData) => string,
): Generator<string, void> {
  const families = new Map<string, Family>();
  for (const { scope, metrics } of resourceMetrics.scopeMetrics) {
    const own = isOwn(scope.name);
    const scopeLabels: Attributes = { otel_scope_name: scope.name };
    if (scope.version) scopeLabels.otel_scope_version = scope.version;
    for (const metric of metrics) {
      const type = typeOf(metric);
      if (type === undefined || metric.dataPoints.length === 0) continue;
      const name = nameOf(metric);
      const family = families.get(name);
      if (family === undefined || (family.own && !own)) {
        families.set(name, { name, type, own, metrics: [{ metric, scope: scopeLabels }] });
      } else if (family.type === type && family.own === own) {
        family.metrics.push({ metric, scope: scopeLabels });
      }
    }
  }
  let out = '# HELP target_info Target metadata\n# TYPE target_info gauge\n';
  out += line('target_info', labelText(resourceMetrics.resource.attributes as Attributes, {}), 1);
  for (const family of families.values()) {
    const { description, unit } = family.metrics[0].metric.descriptor;
    out += `# HELP ${family.name} ${escapeText(description || 'description missing')}\n`;
    if (unit) out += `# UNIT ${family.name} ${escapeText(unit)}\n`;
    out += `# TYPE ${family.name} ${family.type}\n`;
    out = yield* points(family, out);
  }
  if (out) yield out;
}

/** The whole exposition as one string. */
export function serializeExposition(resourceMetrics: ResourceMetrics, nameOf: (metric: MetricData) => string): string {
  let out = '';
  for (const chunk of expositionChunks(resourceMetrics, nameOf)) out += chunk;
  return out;
}
