/**
 * Prometheus names as the OpenTelemetry Collector writes them.
 *
 * `@opentelemetry/exporter-prometheus` only swaps dots for underscores and
 * adds `_total`; the Collector's Prometheus translation also appends the
 * unit (`s` → `_seconds`, `By` → `_bytes`, `By/s` → `_bytes_per_second`,
 * unit `1` gauges → `_ratio`, `{request}`-style annotations dropped). Left
 * alone, the same histogram would be `…_duration` when scraped here and
 * `…_duration_seconds` behind a Collector, and every dashboard and rule
 * would work for only one of the two. `/metrics` here names each metric by
 * its descriptor the Collector's way, so both paths give the names core's
 * `prometheusName()` documents.
 */
import { DataPointType, type MetricData } from '@opentelemetry/sdk-metrics';

export type PrometheusKind = 'counter' | 'updowncounter' | 'gauge' | 'histogram';

/** The Collector translator's unit words (prometheus/otlptranslator unit maps). */
const UNIT_WORDS: Record<string, string> = {
  d: 'days',
  h: 'hours',
  min: 'minutes',
  s: 'seconds',
  ms: 'milliseconds',
  us: 'microseconds',
  ns: 'nanoseconds',
  By: 'bytes',
  KiBy: 'kibibytes',
  MiBy: 'mebibytes',
  GiBy: 'gibibytes',
  TiBy: 'tibibytes',
  KBy: 'kilobytes',
  MBy: 'megabytes',
  GBy: 'gigabytes',
  TBy: 'terabytes',
  m: 'meters',
  V: 'volts',
  A: 'amperes',
  J: 'joules',
  W: 'watts',
  g: 'grams',
  Cel: 'celsius',
  Hz: 'hertz',
  '%': 'percent',
};
const PER_UNIT_WORDS: Record<string, string> = {
  s: 'second',
  m: 'minute',
  h: 'hour',
  d: 'day',
  w: 'week',
  mo: 'month',
  y: 'year',
};

function tokens(text: string): string[] {
  return text.split(/[^a-zA-Z0-9]+/).filter(Boolean);
}

function unitTokens(unit: string, words: Record<string, string>): string[] {
  // `{request}` and other curly-brace annotations carry no unit.
  const bare = unit.replace(/\{[^}]*\}/g, '').trim();
  if (!bare || bare === '1') return [];
  return tokens(words[bare] ?? bare);
}

/** The Prometheus name of an OTel instrument, Collector style. */
export function collectorPrometheusName(name: string, unit: string, kind: PrometheusKind): string {
  const out = tokens(name);
  const slash = unit.indexOf('/');
  const main = unitTokens(slash < 0 ? unit : unit.slice(0, slash), UNIT_WORDS);
  const per = slash < 0 ? [] : unitTokens(unit.slice(slash + 1), PER_UNIT_WORDS);
  if (main.length > 0 && !main.every((t) => out.includes(t))) out.push(...main);
  if (per.length > 0 && !per.every((t) => out.includes(t))) out.push('per', ...per);
  if (kind === 'counter') {
    const withoutTotal = out.filter((t) => t !== 'total');
    out.length = 0;
    out.push(...withoutTotal, 'total');
  }
  if (unit === '1' && kind === 'gauge' && !out.includes('ratio')) out.push('ratio');
  const joined = out.join('_');
  return /^[0-9]/.test(joined) ? `_${joined}` : joined;
}

function prometheusKind(metric: MetricData): PrometheusKind {
  switch (metric.dataPointType) {
    case DataPointType.SUM:
      return metric.isMonotonic ? 'counter' : 'updowncounter';
    case DataPointType.GAUGE:
      return 'gauge';
    default:
      return 'histogram';
  }
}

/** The Collector-style name of each metric, cached per instrument (bounded by the instruments the app creates). */
export class CollectorNames {
  private readonly names = new Map<string, string>();
  /** By descriptor object: core's and the SDK's stay the same from one collection to the next. */
  private readonly byDescriptor = new WeakMap<object, { kind: PrometheusKind; name: string }>();

  of(metric: MetricData): string {
    const kind = prometheusKind(metric);
    const known = this.byDescriptor.get(metric.descriptor);
    if (known !== undefined && known.kind === kind) return known.name;
    const { name, unit } = metric.descriptor;
    const key = `${name}\u0000${unit}\u0000${kind}`;
    let renamed = this.names.get(key);
    if (renamed === undefined) {
      renamed = collectorPrometheusName(name, unit, kind);
      this.names.set(key, renamed);
    }
    this.byDescriptor.set(metric.descriptor, { kind, name: renamed });
    return renamed;
  }
}
