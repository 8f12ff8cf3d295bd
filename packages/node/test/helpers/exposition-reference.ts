/**
 * The exposition writer as it was before it wrote in chunks: one string,
 * every sample through one general function. Kept as the reference the
 * chunked writer must match byte for byte.
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
const labelName = (key: string) => key.replace(/[^a-zA-Z0-9_]/g, '_').replace(/_{2,}/g, '_');

function labelValue(value: unknown): string {
  return escapeText(typeof value === 'string' ? value : JSON.stringify(value)).replace(/"/g, '\\"');
}

function number(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

function sample(name: string, labels: Attributes, value: number, extra?: Attributes): string {
  const parts: string[] = [];
  for (const [key, v] of Object.entries(labels)) parts.push(`${labelName(key)}="${labelValue(v)}"`);
  if (extra) for (const [key, v] of Object.entries(extra)) parts.push(`${key}="${labelValue(v)}"`);
  return `${name}${parts.length ? `{${parts.join(',')}}` : ''} ${number(value)}\n`;
}

function points(family: Family): string {
  let out = '';
  for (const { metric, scope } of family.metrics) {
    if (family.type !== 'histogram') {
      for (const point of metric.dataPoints as DataPoint<number>[])
        out += sample(family.name, { ...point.attributes, ...scope }, point.value);
      continue;
    }
    for (const point of metric.dataPoints as DataPoint<Histogram>[]) {
      const labels = { ...point.attributes, ...scope };
      const { buckets, count, sum } = point.value;
      out += sample(`${family.name}_count`, labels, count);
      if (sum !== undefined) out += sample(`${family.name}_sum`, labels, sum);
      let cumulative = 0;
      for (let i = 0; i < buckets.counts.length; i++) {
        cumulative += buckets.counts[i];
        const bound = buckets.boundaries[i];
        out += sample(`${family.name}_bucket`, labels, cumulative, {
          le: bound === undefined || bound === Number.POSITIVE_INFINITY ? '+Inf' : String(bound),
        });
      }
    }
  }
  return out;
}

/** The exposition of `resourceMetrics`, each metric named by `nameOf`. */
export function referenceExposition(resourceMetrics: ResourceMetrics, nameOf: (metric: MetricData) => string): string {
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
  out += sample('target_info', resourceMetrics.resource.attributes as Attributes, 1);
  for (const family of families.values()) {
    const { description } = family.metrics[0].metric.descriptor;
    // The first sentence of the description; no UNIT line (text format 0.0.4 has none; the name carries the unit).
    const sentence = /^.*?[.!?](?= |$)/s.exec(description)?.[0] ?? description;
    out += `# HELP ${family.name} ${escapeText(sentence || 'description missing')}\n`;
    out += `# TYPE ${family.name} ${family.type}\n`;
    out += points(family);
  }
  return out;
}
