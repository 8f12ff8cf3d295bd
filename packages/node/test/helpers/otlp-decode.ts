/**
 * Decodes OTLP protobuf export requests (metrics and traces) with a schema
 * written from the official opentelemetry-proto definitions
 * (collector/{metrics,trace}/v1, metrics/v1, trace/v1, common/v1,
 * resource/v1): field numbers and types as there. otlp-transformer 0.223
 * ships only hand-written encoders and response decoders, so the request
 * side is decoded here, independently of the code that encoded it.
 */

type FieldType =
  | 'string'
  | 'bytes'
  | 'bool'
  | 'uint'
  | 'int'
  | 'double'
  | 'fixed64'
  | 'sfixed64'
  | 'fixed32'
  | 'packedFixed64'
  | 'packedDouble'
  | Schema;
interface Field {
  name: string;
  type: FieldType;
  repeated?: boolean;
}
interface Schema {
  [field: number]: Field;
}

const AnyValue: Schema = {};
const KeyValue: Schema = { 1: { name: 'key', type: 'string' }, 2: { name: 'value', type: AnyValue } };
const ArrayValue: Schema = { 1: { name: 'values', type: AnyValue, repeated: true } };
const KeyValueList: Schema = { 1: { name: 'values', type: KeyValue, repeated: true } };
Object.assign(AnyValue, {
  1: { name: 'stringValue', type: 'string' },
  2: { name: 'boolValue', type: 'bool' },
  3: { name: 'intValue', type: 'int' },
  4: { name: 'doubleValue', type: 'double' },
  5: { name: 'arrayValue', type: ArrayValue },
  6: { name: 'kvlistValue', type: KeyValueList },
  7: { name: 'bytesValue', type: 'bytes' },
});
const attributes = (n: number): Schema => ({ [n]: { name: 'attributes', type: KeyValue, repeated: true } });
const Resource: Schema = { ...attributes(1), 2: { name: 'droppedAttributesCount', type: 'uint' } };
const Scope: Schema = { 1: { name: 'name', type: 'string' }, 2: { name: 'version', type: 'string' }, ...attributes(3) };

const NumberDataPoint: Schema = {
  ...attributes(7),
  2: { name: 'startTimeUnixNano', type: 'fixed64' },
  3: { name: 'timeUnixNano', type: 'fixed64' },
  4: { name: 'asDouble', type: 'double' },
  6: { name: 'asInt', type: 'sfixed64' },
};
const HistogramDataPoint: Schema = {
  ...attributes(9),
  2: { name: 'startTimeUnixNano', type: 'fixed64' },
  3: { name: 'timeUnixNano', type: 'fixed64' },
  4: { name: 'count', type: 'fixed64' },
  5: { name: 'sum', type: 'double' },
  6: { name: 'bucketCounts', type: 'packedFixed64' },
  7: { name: 'explicitBounds', type: 'packedDouble' },
  11: { name: 'min', type: 'double' },
  12: { name: 'max', type: 'double' },
};
const Gauge: Schema = { 1: { name: 'dataPoints', type: NumberDataPoint, repeated: true } };
const Sum: Schema = {
  1: { name: 'dataPoints', type: NumberDataPoint, repeated: true },
  2: { name: 'aggregationTemporality', type: 'uint' },
  3: { name: 'isMonotonic', type: 'bool' },
};
const Histogram: Schema = {
  1: { name: 'dataPoints', type: HistogramDataPoint, repeated: true },
  2: { name: 'aggregationTemporality', type: 'uint' },
};
const Metric: Schema = {
  1: { name: 'name', type: 'string' },
  2: { name: 'description', type: 'string' },
  3: { name: 'unit', type: 'string' },
  5: { name: 'gauge', type: Gauge },
  7: { name: 'sum', type: Sum },
  9: { name: 'histogram', type: Histogram },
};
const ScopeMetrics: Schema = {
  1: { name: 'scope', type: Scope },
  2: { name: 'metrics', type: Metric, repeated: true },
  3: { name: 'schemaUrl', type: 'string' },
};
const ResourceMetrics: Schema = {
  1: { name: 'resource', type: Resource },
  2: { name: 'scopeMetrics', type: ScopeMetrics, repeated: true },
  3: { name: 'schemaUrl', type: 'string' },
};
const ExportMetricsServiceRequest: Schema = { 1: { name: 'resourceMetrics', type: ResourceMetrics, repeated: true } };

const Status: Schema = { 2: { name: 'message', type: 'string' }, 3: { name: 'code', type: 'uint' } };
const Span: Schema = {
  1: { name: 'traceId', type: 'bytes' },
  2: { name: 'spanId', type: 'bytes' },
  3: { name: 'traceState', type: 'string' },
  4: { name: 'parentSpanId', type: 'bytes' },
  5: { name: 'name', type: 'string' },
  6: { name: 'kind', type: 'uint' },
  7: { name: 'startTimeUnixNano', type: 'fixed64' },
  8: { name: 'endTimeUnixNano', type: 'fixed64' },
  ...attributes(9),
  15: { name: 'status', type: Status },
  16: { name: 'flags', type: 'fixed32' },
};
const ScopeSpans: Schema = {
  1: { name: 'scope', type: Scope },
  2: { name: 'spans', type: Span, repeated: true },
  3: { name: 'schemaUrl', type: 'string' },
};
const ResourceSpans: Schema = {
  1: { name: 'resource', type: Resource },
  2: { name: 'scopeSpans', type: ScopeSpans, repeated: true },
  3: { name: 'schemaUrl', type: 'string' },
};
const ExportTraceServiceRequest: Schema = { 1: { name: 'resourceSpans', type: ResourceSpans, repeated: true } };

class Reader {
  pos = 0;
  private readonly view: DataView;
  constructor(private readonly buf: Uint8Array) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error('truncated varint');
      const byte = this.buf[this.pos++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  bytes(): Uint8Array {
    const len = Number(this.varint());
    if (this.pos + len > this.buf.length) throw new Error('truncated bytes');
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }
  fixed64(): bigint {
    const v = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    return v;
  }
  double(): number {
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }
  fixed32(): number {
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

type Decoded = Record<string, any>;

function decode(buf: Uint8Array, schema: Schema): Decoded {
  const r = new Reader(buf);
  const out: Decoded = {};
  for (const field of Object.values(schema)) if (field.repeated) out[field.name] = [];
  while (!r.done) {
    const tag = Number(r.varint());
    const number = tag >>> 3;
    const wire = tag & 7;
    const field = schema[number];
    if (!field) {
      r.skip(wire);
      continue;
    }
    let value: unknown;
    const t = field.type;
    if (typeof t === 'object') value = decode(r.bytes(), t);
    else if (t === 'string') value = new TextDecoder().decode(r.bytes());
    else if (t === 'bytes') value = Buffer.from(r.bytes()).toString('hex');
    else if (t === 'bool') value = r.varint() !== 0n;
    else if (t === 'uint') value = Number(r.varint());
    else if (t === 'int') value = Number(BigInt.asIntN(64, r.varint()));
    else if (t === 'double') value = r.double();
    else if (t === 'fixed64') value = r.fixed64();
    else if (t === 'sfixed64') value = Number(BigInt.asIntN(64, r.fixed64()));
    else if (t === 'fixed32') value = r.fixed32();
    else if (t === 'packedFixed64' || t === 'packedDouble') {
      const inner = new Reader(r.bytes());
      const list: number[] = [];
      while (!inner.done) list.push(t === 'packedDouble' ? inner.double() : Number(inner.fixed64()));
      value = list;
    }
    if (field.repeated) out[field.name].push(value);
    else out[field.name] = value;
  }
  return out;
}

export const decodeMetricsRequest = (buf: Uint8Array): Decoded => decode(buf, ExportMetricsServiceRequest);
export const decodeTraceRequest = (buf: Uint8Array): Decoded => decode(buf, ExportTraceServiceRequest);

/** `[{key, value: AnyValue}]` → plain object. */
export function attrs(list: Decoded[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) {
    const v = kv.value ?? {};
    out[kv.key] = v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue ?? v.bytesValue;
  }
  return out;
}
