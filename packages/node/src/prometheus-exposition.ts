/**
 * The Prometheus text exposition (format 0.0.4) of a collection, written
 * here rather than by `@opentelemetry/exporter-prometheus`: that package
 * pins exact SDK versions (0.223.0 wants sdk-metrics 2.12.0), so depending
 * on it put a second copy of the SDK in most apps' trees. The output is the
 * exporter's: `target_info` for the resource, `otel_scope_name` /
 * `otel_scope_version` labels (unless `withoutScopeInfo`), HELP and TYPE
 * once per family. Two things are left out to keep a scrape small, as a
 * replica is scraped up to 20 times a second: the `# UNIT` line (not part of
 * text format 0.0.4, and the name's suffix already carries the unit), and
 * the description past its first sentence (docs/metrics.md has it whole).
 *
 * A name two scopes export is written once: another scope's metric wins
 * over InferSignal's own (its runtime gauges beside
 * instrumentation-runtime-node's); otherwise the first, and a later one of
 * another type is dropped. One family written twice is an exposition
 * Prometheus rejects.
 */
import type { SeriesCopy } from '@infersignal/core';
import {
  DataPointType,
  type DataPoint,
  type Histogram,
  type MetricData,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';

type Attributes = Record<string, unknown>;

const seriesOf = (metric: MetricData): SeriesCopy | undefined => (metric as { series?: SeriesCopy }).series;
const pointCount = (metric: MetricData) => seriesOf(metric)?.length ?? metric.dataPoints.length;

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

/** A chunk of at least this many bytes is handed out (ending at a point's end). */
export const CHUNK_BYTES = 64 * 1024;

/**
 * The exposition's bytes, written straight into a Buffer: at the
 * cardinality caps the text is ~100,000 lines, and building it as strings
 * (a number string and concatenations per line, then a flat copy of each
 * chunk to write it) allocated more than the text itself on the JS heap,
 * collected by scavenges while the collection's points were still alive.
 * Here a sample's prefix is bytes copied in (see prefixOf), counts are
 * written digit by digit, and a chunk is one Buffer.
 */
class ByteWriter {
  private buf: Buffer;
  pos = 0;
  /** Bytes of the chunks taken before this one: `base + pos` is an offset into the whole exposition. */
  base = 0;

  constructor(private readonly pool: ChunkPool | undefined) {
    this.buf = EMPTY;
  }

  private ensure(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    // A chunk's buffer is taken when its first byte is written: the last chunk of a scrape leaves none behind.
    if (this.buf === EMPTY && bytes <= CHUNK_BUFFER) {
      this.buf = this.pool?.take() ?? Buffer.allocUnsafe(CHUNK_BUFFER);
      return;
    }
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  text(text: string): void {
    this.ensure(text.length * 3);
    // A bucket line's short texts (its bound, `le="`) copied here cost no call into C++, which took most of a
    // bucket line's time; a longer text (a name, a label text) is encoded faster by Buffer.write.
    if (text.length <= SHORT_TEXT) {
      const buf = this.buf;
      let at = this.pos;
      for (let i = 0; i < text.length; i++) {
        const code = text.charCodeAt(i);
        if (code >= 0x80) {
          this.pos += buf.write(text, this.pos, 'utf8');
          return;
        }
        buf[at++] = code;
      }
      this.pos = at;
      return;
    }
    this.pos += this.buf.write(text, this.pos, 'utf8');
  }

  /** A sample line: its prefix (`name{labels} `), the value, a newline. */
  sample(prefix: Uint8Array, value: number): void {
    this.bytes(prefix);
    this.number(value);
    this.byte(NEWLINE);
  }

  bytes(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  byte(code: number): void {
    this.ensure(1);
    this.buf[this.pos++] = code;
  }

  /** `number(value)`'s text; integers (counts) without making a string. */
  number(value: number): void {
    if (!(value >= 0 && value <= Number.MAX_SAFE_INTEGER && Math.floor(value) === value)) {
      this.text(number(value));
      return;
    }
    let digits = 1;
    for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
    this.ensure(digits);
    let at = this.pos + digits;
    let rest = value;
    do {
      const next = Math.floor(rest / 10);
      this.buf[--at] = 48 + (rest - next * 10);
      rest = next;
    } while (rest > 0);
    this.pos += digits;
  }

  /** The bytes so far as one chunk; the writer starts a new buffer. */
  take(): Buffer {
    const chunk = this.buf.subarray(0, this.pos);
    this.buf = EMPTY;
    this.base += this.pos;
    this.pos = 0;
    return chunk;
  }
}

const EMPTY = Buffer.alloc(0);

/** Texts up to this long are copied a character at a time (see ByteWriter.text). */
const SHORT_TEXT = 16;

/** A chunk's buffer: a chunk and the text of one more point fit without growing it. */
const CHUNK_BUFFER = CHUNK_BYTES + 4096;
/** Buffers a pool keeps (a few chunks are in the socket's hands at a time). */
const POOLED = 8;

/**
 * Chunk buffers handed back once written, for the next chunks: at the caps
 * a scrape is ~360 chunks, 23 MB, which as new buffers each time was
 * external memory enough for V8 to collect garbage for it at every scrape.
 */
export class ChunkPool {
  private readonly free: Buffer[] = [];

  take(): Buffer | undefined {
    return this.free.pop();
  }

  /** `chunk` (from `expositionChunks` with this pool) is written: its buffer may take the next chunk. */
  give(chunk: Buffer): void {
    if (this.free.length < POOLED && chunk.byteOffset === 0 && chunk.buffer.byteLength >= CHUNK_BUFFER)
      this.free.push(Buffer.from(chunk.buffer));
  }
}

const NEWLINE = 0x0a;

/**
 * Bound texts of the boundaries arrays seen, matched by value: core copies
 * an instrument's boundaries at each collection, and a process has a few
 * distinct ones, so the texts are made once, not at every scrape.
 */
const boundTextCache: { boundaries: readonly number[]; texts: string[] }[] = [];
const MAX_BOUND_ARRAYS = 32;

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** `<bound>"} ` of each bucket of a boundaries array, the last `+Inf"} ` (one boundaries array serves many points). */
function boundTexts(boundaries: readonly number[], buckets: number): string[] {
  for (const cached of boundTextCache)
    if (cached.texts.length === buckets && sameNumbers(cached.boundaries, boundaries)) return cached.texts;
  const texts = Array.from({ length: buckets }, (_, i) => {
    const bound = boundaries[i];
    return `${bound === undefined || bound === Number.POSITIVE_INFINITY ? '+Inf' : String(bound)}"} `;
  });
  if (boundTextCache.length < MAX_BOUND_ARRAYS) boundTextCache.push({ boundaries: [...boundaries], texts });
  return texts;
}

/**
 * The bytes before a sample's value of one series: `<name>{<labels>} `, or
 * for a bucket `<name>_bucket{<labels>,le="`. Core makes each series'
 * attribute object once and never changes it, so for its own series these
 * are made at the first scrape and copied at every later one: a scrape of
 * them formats only numbers (`key` names the sample and the scope labels).
 * Other scopes' attributes are not ours to assume unchanged: theirs are
 * made every time.
 */
const prefixes = new WeakMap<Attributes, Map<string, Uint8Array>>();
/** Prefixes kept per attribute object: one object serves a few instruments, each a few sample names. */
const MAX_PREFIXES = 64;

interface Samples {
  own: boolean;
  scope: Attributes;
  attributes: Attributes;
}

function prefixOf(at: Samples, key: string, head: string, bucket: boolean): Uint8Array {
  let byKey = at.own ? prefixes.get(at.attributes) : undefined;
  let bytes = byKey?.get(key);
  if (bytes !== undefined) return bytes;
  const labels = labelText(at.attributes, at.scope);
  bytes = Buffer.from(
    bucket ? `${head}{${labels ? `${labels},` : ''}le="` : labels ? `${head}{${labels}} ` : `${head} `,
    'utf8',
  );
  if (at.own) {
    if (byKey === undefined) prefixes.set(at.attributes, (byKey = new Map()));
    if (byKey.size < MAX_PREFIXES) byKey.set(key, bytes);
  }
  return bytes;
}

/**
 * A metric's numbers laid out as core's series copy: core's own copy, or
 * the SDK's data points of another scope (or of the API export) put into one.
 */
function numbersOf(metric: MetricData, histogram: boolean): SeriesCopy {
  const copy = seriesOf(metric);
  if (copy !== undefined) return copy;
  const points = metric.dataPoints as DataPoint<number | Histogram>[];
  // Attributes are read as each sample is written (a point that fails to read fails the exposition there).
  const attributes: SeriesCopy['attributes'] = [];
  if (!histogram)
    return {
      length: points.length,
      attributes,
      values: Float64Array.from(points, (p) => p.value as number),
      stride: 1,
      boundaries: [],
    };
  const { boundaries, counts } = (points[0].value as Histogram).buckets;
  const stride = 4 + counts.length;
  const values = new Float64Array(points.length * stride);
  points.forEach((point, i) => {
    const { count, sum, buckets } = point.value as Histogram;
    values[i * stride] = count;
    // A point without a sum (negative values recorded) writes no `_sum` line.
    values[i * stride + 1] = sum ?? Number.NaN;
    values.set(buckets.counts.slice(0, counts.length), i * stride + 4);
  });
  return { length: points.length, attributes, values, stride, boundaries };
}

/**
 * Where the live values sit in an exposition, so that a reader of the live
 * board can write them as they are at the moment it answers (the
 * worker-thread endpoint): `field` tells which value a metric of core's
 * scope carries, `slot` which queue a point's attributes name.
 */
export interface LiveValues {
  field(metricName: string): number | undefined;
  slot(attributes: Attributes): number | undefined;
  /** [start, end, slot, field] of each live value, byte offsets into the whole exposition. */
  readonly holes: number[];
}

/** The samples of one family, in chunks of at least `CHUNK_BYTES` (the rest stays in `out`). */
function* points(family: Family, out: ByteWriter, live?: LiveValues): Generator<Buffer, void> {
  const histogram = family.type === 'histogram';
  const name = family.name;
  const count = `${name}_count`;
  const sum = `${name}_sum`;
  const bucket = `${name}_bucket`;
  for (const { metric, scope } of family.metrics) {
    const copied = seriesOf(metric) !== undefined;
    const { length, attributes, values, stride, boundaries } = numbersOf(metric, histogram);
    const scopeKey = `\u0000${scope.otel_scope_name ?? ''}\u0000${scope.otel_scope_version ?? ''}`;
    const [valueKey, countKey, sumKey, bucketKey] = [name, count, sum, bucket].map((head) => head + scopeKey);
    const at: Samples = { own: family.own, scope, attributes: {} };
    const bounds = histogram ? boundTexts(boundaries, stride - 4) : [];
    const field = family.own && !histogram ? live?.field(metric.descriptor.name) : undefined;
    for (let i = 0; i < length; i++) {
      const from = i * stride;
      at.attributes = (copied ? attributes[i] : metric.dataPoints[i].attributes) as Attributes;
      if (!histogram) {
        const prefix = prefixOf(at, valueKey, name, false);
        const slot = field === undefined ? undefined : live!.slot(at.attributes);
        const start = out.base + out.pos + prefix.length;
        out.sample(prefix, values[from]);
        // The value runs to the newline just written.
        if (slot !== undefined) live!.holes.push(start, out.base + out.pos - 1, slot, field!);
      } else {
        out.sample(prefixOf(at, countKey, count, false), values[from]);
        if (!Number.isNaN(values[from + 1])) out.sample(prefixOf(at, sumKey, sum, false), values[from + 1]);
        const prefix = prefixOf(at, bucketKey, bucket, true);
        let cumulative = 0;
        for (let b = 0; b < bounds.length; b++) {
          cumulative += values[from + 4 + b];
          out.bytes(prefix);
          out.text(bounds[b]);
          out.number(cumulative);
          out.byte(NEWLINE);
        }
      }
      if (out.pos >= CHUNK_BYTES) yield out.take();
    }
  }
}

/** `# HELP` (the description's first sentence) and `# TYPE` of each family, made once per family and type. */
const headers = new Map<string, string>();
const MAX_HEADERS = 4096;

/** The same by descriptor object (see CollectorNames): no key string made per family and scrape. */
const headersByDescriptor = new WeakMap<object, { name: string; type: string; text: string }>();

function helpAndType(family: Family): string {
  const { descriptor } = family.metrics[0].metric;
  const known = headersByDescriptor.get(descriptor);
  if (known !== undefined && known.name === family.name && known.type === family.type) return known.text;
  const text = helpAndTypeText(family);
  headersByDescriptor.set(descriptor, { name: family.name, type: family.type, text });
  return text;
}

function helpAndTypeText(family: Family): string {
  const { description } = family.metrics[0].metric.descriptor;
  const key = `${family.name}\u0000${family.type}\u0000${description}`;
  let text = headers.get(key);
  if (text === undefined) {
    const sentence = /^.*?[.!?](?= |$)/s.exec(description)?.[0] ?? description;
    text = `# HELP ${family.name} ${escapeText(sentence || 'description missing')}\n# TYPE ${family.name} ${family.type}\n`;
    if (headers.size < MAX_HEADERS) headers.set(key, text);
  }
  return text;
}

/**
 * The exposition of `resourceMetrics`, each metric named by `nameOf`, as
 * chunks of about `CHUNK_BYTES` bytes: at the cardinality caps the text is
 * tens of megabytes, which a caller writes (and lets the event loop turn)
 * chunk by chunk rather than as one string.
 */
export function* expositionChunks(
  resourceMetrics: ResourceMetrics,
  nameOf: (metric: MetricData) => string,
  /** Where chunk buffers come from and go back to once written; without one each chunk is a new Buffer. */
  pool?: ChunkPool,
  /** No `otel_scope_name` / `otel_scope_version` labels. */
  withoutScopeInfo = false,
  /** Given, the live values' offsets are recorded in it. */
  live?: LiveValues,
): Generator<Buffer, void> {
  const families = new Map<string, Family>();
  for (const { scope, metrics } of resourceMetrics.scopeMetrics) {
    const own = isOwn(scope.name);
    const scopeLabels: Attributes = withoutScopeInfo ? {} : { otel_scope_name: scope.name };
    if (scope.version && !withoutScopeInfo) scopeLabels.otel_scope_version = scope.version;
    for (const metric of metrics) {
      const type = typeOf(metric);
      if (type === undefined || pointCount(metric) === 0) continue;
      const name = nameOf(metric);
      const family = families.get(name);
      if (family === undefined || (family.own && !own)) {
        families.set(name, { name, type, own, metrics: [{ metric, scope: scopeLabels }] });
      } else if (family.type === type && family.own === own) {
        family.metrics.push({ metric, scope: scopeLabels });
      }
    }
  }
  const out = new ByteWriter(pool);
  out.text('# HELP target_info Target metadata\n# TYPE target_info gauge\n');
  const target = labelText(resourceMetrics.resource.attributes as Attributes, {});
  out.text(`target_info${target ? `{${target}}` : ''} 1\n`);
  for (const family of families.values()) {
    out.text(helpAndType(family));
    yield* points(family, out, live);
  }
  if (out.pos > 0) yield out.take();
}

/** Hands core's series copies of a collection back once its exposition is written (or abandoned). */
export function releaseSeries(resourceMetrics: ResourceMetrics): void {
  for (const { metrics } of resourceMetrics.scopeMetrics) for (const metric of metrics) seriesOf(metric)?.release?.();
}

/** The whole exposition as one string. */
export function serializeExposition(resourceMetrics: ResourceMetrics, nameOf: (metric: MetricData) => string): string {
  return Buffer.concat([...expositionChunks(resourceMetrics, nameOf)]).toString('utf8');
}
