/**
 * Validates `start()` options and merges them with the standard `OTEL_*`
 * environment variables. Explicit options win over the environment, the
 * environment over the defaults. Every error names the field (or the
 * variable) at fault, at start-up, never later.
 */
import { InferSignalConfigError } from '@infersignal/core';
import type { OtlpProtocol, StartOptions } from './types';

export const DEFAULT_PROMETHEUS_PORT = 9464;
/** Loopback: metrics describe the service's internals, so exposing them is a deliberate choice. */
export const DEFAULT_PROMETHEUS_HOST = '127.0.0.1';
/**
 * 15 s instead of the OTel default 60 s: the signals are early warnings, and
 * a minute of export delay would eat most of their lead time.
 */
export const DEFAULT_EXPORT_INTERVAL_MS = 15_000;
export const DEFAULT_EXPORT_TIMEOUT_MS = 10_000;
export const DEFAULT_CARDINALITY_LIMIT = 2000;

export interface ResolvedPrometheus {
  host: string;
  port: number;
  path: string;
  mount: boolean;
}

export interface ResolvedOtlp {
  protocol: OtlpProtocol;
  /** Full URL per signal (http: `<base>/v1/metrics`; grpc: the base). */
  metricsUrl: string;
  tracesUrl: string;
  headers: Record<string, string>;
  intervalMs: number;
  timeoutMs: number;
}

export interface ResolvedStart {
  serviceName: string;
  prometheus: ResolvedPrometheus | undefined;
  otlp: ResolvedOtlp | undefined;
  traces: boolean;
  cardinalityLimit: number;
  registerGlobals: boolean;
  /** Bound on shutdown(): the export timeout. */
  shutdownTimeoutMs: number;
}

type Env = Record<string, string | undefined>;

const KNOWN_KEYS = new Set([
  'serviceName',
  'prometheus',
  'otlp',
  'traces',
  'cardinalityLimit',
  'registerGlobals',
  'metricReaders',
  'metricProducers',
  'spanProcessors',
  'logger',
  'thresholds',
  'onAlert',
  'maxModels',
  'maxQueues',
  'detectorIntervalMs',
  'clock',
  'exportMode',
  'eventLoop',
]);
const PROMETHEUS_KEYS = new Set(['host', 'port', 'path', 'mount']);
const OTLP_KEYS = new Set(['endpoint', 'protocol', 'headers', 'intervalMs', 'timeoutMs']);

function fail(field: string, message: string): never {
  throw new InferSignalConfigError(field, message);
}

function checkKeys(value: object, known: Set<string>, prefix: string): void {
  for (const key of Object.keys(value)) if (!known.has(key)) fail(prefix + key, 'unknown option');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function envValue(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

function port(value: unknown, field: string): number {
  if (typeof value === 'string' && /^\d+$/.test(value.trim())) value = Number(value);
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 65535) {
    fail(field, `must be an integer port in [0, 65535], got ${JSON.stringify(value)}`);
  }
  return value;
}

function positiveMs(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    fail(field, `must be a positive number of milliseconds, got ${JSON.stringify(value)}`);
  }
  return value;
}

function url(value: unknown, field: string): URL {
  if (typeof value !== 'string') fail(field, 'must be a URL string');
  try {
    const parsed = new URL(value);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      fail(field, `must be http(s), got ${parsed.protocol}`);
    return parsed;
  } catch (err) {
    if (err instanceof InferSignalConfigError) throw err;
    return fail(field, `must be a URL, got ${JSON.stringify(value)}`);
  }
}

/** `OTEL_EXPORTER_OTLP_HEADERS`: `k1=v1,k2=v2`, values URL-encoded (OTel spec). */
export function parseHeaderList(raw: string, field: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of raw.split(',')) {
    if (!pair.trim()) continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) fail(field, `expected key=value pairs separated by commas, got "${pair.trim()}"`);
    try {
      headers[decodeURIComponent(pair.slice(0, eq).trim())] = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      fail(field, `invalid URL encoding in "${pair.trim()}"`);
    }
  }
  return headers;
}

function resolvePrometheus(option: unknown, env: Env): ResolvedPrometheus | undefined {
  if (option === false) return undefined;
  if (option !== undefined && !isPlainObject(option)) fail('prometheus', 'must be an object or false');
  const o = (option ?? {}) as Record<string, unknown>;
  checkKeys(o, PROMETHEUS_KEYS, 'prometheus.');
  if (o.host !== undefined && (typeof o.host !== 'string' || o.host === ''))
    fail('prometheus.host', 'must be a non-empty string');
  if (o.path !== undefined && (typeof o.path !== 'string' || !o.path.startsWith('/')))
    fail('prometheus.path', 'must be a path starting with "/"');
  if (o.mount !== undefined && typeof o.mount !== 'boolean') fail('prometheus.mount', 'must be a boolean');
  const envPort = envValue(env, 'OTEL_EXPORTER_PROMETHEUS_PORT');
  return {
    host: (o.host as string | undefined) ?? envValue(env, 'OTEL_EXPORTER_PROMETHEUS_HOST') ?? DEFAULT_PROMETHEUS_HOST,
    port:
      o.port !== undefined
        ? port(o.port, 'prometheus.port')
        : envPort !== undefined
          ? port(envPort, 'OTEL_EXPORTER_PROMETHEUS_PORT')
          : DEFAULT_PROMETHEUS_PORT,
    path: (o.path as string | undefined) ?? '/metrics',
    mount: o.mount === true,
  };
}

function protocol(value: unknown, field: string): OtlpProtocol {
  if (value === 'http/protobuf' || value === 'grpc') return value;
  return fail(field, `must be "http/protobuf" or "grpc", got ${JSON.stringify(value)}`);
}

function resolveOtlp(option: unknown, env: Env): ResolvedOtlp | undefined {
  if (option === false) return undefined;
  const envEndpoint = envValue(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (option === undefined && envEndpoint === undefined) return undefined;
  if (option !== undefined && !isPlainObject(option)) fail('otlp', 'must be an object or false');
  const o = (option ?? {}) as Record<string, unknown>;
  checkKeys(o, OTLP_KEYS, 'otlp.');

  const envProtocol = envValue(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  const proto =
    o.protocol !== undefined
      ? protocol(o.protocol, 'otlp.protocol')
      : envProtocol !== undefined
        ? protocol(envProtocol, 'OTEL_EXPORTER_OTLP_PROTOCOL')
        : 'http/protobuf';
  const base =
    o.endpoint !== undefined
      ? url(o.endpoint, 'otlp.endpoint')
      : envEndpoint !== undefined
        ? url(envEndpoint, 'OTEL_EXPORTER_OTLP_ENDPOINT')
        : new URL(proto === 'grpc' ? 'http://localhost:4317' : 'http://localhost:4318');

  if (o.headers !== undefined) {
    if (!isPlainObject(o.headers)) fail('otlp.headers', 'must be an object of strings');
    for (const [key, value] of Object.entries(o.headers)) {
      if (typeof value !== 'string') fail(`otlp.headers.${key}`, 'must be a string');
    }
  }
  const envHeaders = envValue(env, 'OTEL_EXPORTER_OTLP_HEADERS');
  const headers = {
    ...(envHeaders ? parseHeaderList(envHeaders, 'OTEL_EXPORTER_OTLP_HEADERS') : {}),
    ...(o.headers as Record<string, string> | undefined),
  };

  const intervalMs =
    o.intervalMs === undefined ? DEFAULT_EXPORT_INTERVAL_MS : positiveMs(o.intervalMs, 'otlp.intervalMs');
  const timeoutMs =
    o.timeoutMs === undefined
      ? Math.min(DEFAULT_EXPORT_TIMEOUT_MS, intervalMs)
      : positiveMs(o.timeoutMs, 'otlp.timeoutMs');
  // The periodic reader refuses a timeout longer than its period.
  if (timeoutMs > intervalMs) fail('otlp.timeoutMs', `must be ≤ otlp.intervalMs (${intervalMs}), got ${timeoutMs}`);

  // The spec: OTEL_EXPORTER_OTLP_ENDPOINT is a base; HTTP appends /v1/<signal>, gRPC uses it as is.
  const baseText = base.href.replace(/\/+$/, '');
  return {
    protocol: proto,
    metricsUrl: proto === 'grpc' ? baseText : `${baseText}/v1/metrics`,
    tracesUrl: proto === 'grpc' ? baseText : `${baseText}/v1/traces`,
    headers,
    intervalMs,
    timeoutMs,
  };
}

export function resolveStartOptions(options: StartOptions, env: Env = process.env): ResolvedStart {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    fail('options', 'start() takes an options object');
  checkKeys(options, KNOWN_KEYS, '');
  if (options.serviceName !== undefined && (typeof options.serviceName !== 'string' || options.serviceName === '')) {
    fail('serviceName', 'must be a non-empty string');
  }
  if (options.traces !== undefined && typeof options.traces !== 'boolean') fail('traces', 'must be a boolean');
  if (options.registerGlobals !== undefined && typeof options.registerGlobals !== 'boolean') {
    fail('registerGlobals', 'must be a boolean');
  }
  const limit = options.cardinalityLimit ?? DEFAULT_CARDINALITY_LIMIT;
  if (!Number.isInteger(limit) || limit < 2)
    fail('cardinalityLimit', `must be an integer ≥ 2, got ${JSON.stringify(limit)}`);
  for (const key of ['metricReaders', 'metricProducers', 'spanProcessors'] as const) {
    if (options[key] !== undefined && !Array.isArray(options[key])) fail(key, 'must be an array');
  }
  if (options.logger !== undefined && typeof options.logger?.warn !== 'function')
    fail('logger', 'must have a warn(message) method');

  const otlp = resolveOtlp(options.otlp, env);
  return {
    serviceName: options.serviceName ?? envValue(env, 'OTEL_SERVICE_NAME') ?? 'unknown_service:node',
    prometheus: resolvePrometheus(options.prometheus, env),
    otlp,
    traces: options.traces ?? (otlp !== undefined || (options.spanProcessors?.length ?? 0) > 0),
    cardinalityLimit: limit,
    registerGlobals: options.registerGlobals ?? true,
    shutdownTimeoutMs: otlp?.timeoutMs ?? DEFAULT_EXPORT_TIMEOUT_MS,
  };
}
