/**
 * Validates `start()` options and merges them with the standard `OTEL_*`
 * environment variables. Explicit options win over the environment, the
 * environment over the defaults. A bad option throws at start-up naming the
 * field; a variable whose value cannot be used is reported once and ignored,
 * as the OpenTelemetry specification asks (env.ts).
 */
import { InferSignalConfigError } from '@infersignal/core';
import { OtelEnv } from './env';
import type { OtlpProtocol, OtlpTemporality, StartLogger, StartOptions } from './types';

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
  /** 0: the OS picks a free port (the server reports the one it got). */
  port: number;
  path: string;
  mount: boolean;
  withoutScopeInfo: boolean;
}

/** Where one signal goes over OTLP. */
export interface OtlpTarget {
  protocol: OtlpProtocol;
  /** Full URL (http: `<base>/v1/<signal>` or a per-signal endpoint as given; grpc: the base). */
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
}

export interface ResolvedOtlp {
  /** Undefined when metrics are not exported over OTLP. */
  metrics: OtlpTarget | undefined;
  /** Undefined when spans are not exported over OTLP. */
  traces: OtlpTarget | undefined;
  intervalMs: number;
  temporality: OtlpTemporality;
  /** Whether `otlp` was given explicitly (a missing exporter package is then an error, not a warning). */
  explicit: boolean;
}

export interface ResolvedStart {
  serviceName: string;
  /** `OTEL_SDK_DISABLED=true`: nothing exported, no globals; the monitor still runs its detectors. */
  disabled: boolean;
  prometheus: ResolvedPrometheus | undefined;
  otlp: ResolvedOtlp | undefined;
  traces: boolean;
  cardinalityLimit: number;
  registerGlobals: boolean;
  /** Register an AsyncLocalStorage context manager too (with the globals). */
  contextManager: boolean;
  runtimeMetrics: boolean;
  /** Bound on shutdown(): the metric export timeout. */
  shutdownTimeoutMs: number;
}

const KNOWN_KEYS = new Set([
  'serviceName',
  'prometheus',
  'otlp',
  'traces',
  'cardinalityLimit',
  'registerGlobals',
  'contextManager',
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
  'heap',
  'runtimeMetrics',
]);
const PROMETHEUS_KEYS = new Set(['host', 'port', 'path', 'mount', 'withoutScopeInfo']);
const OTLP_KEYS = new Set(['endpoint', 'protocol', 'headers', 'intervalMs', 'timeoutMs', 'temporality']);
const PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'grpc'];
const TEMPORALITIES: readonly OtlpTemporality[] = ['cumulative', 'delta', 'lowmemory'];

function fail(field: string, message: string): never {
  throw new InferSignalConfigError(field, message);
}

function checkKeys(value: object, known: Set<string>, prefix: string): void {
  for (const key of Object.keys(value)) if (!known.has(key)) fail(prefix + key, 'unknown option');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const isPort = (value: number) => Number.isInteger(value) && value >= 0 && value <= 65535;
const isPositive = (value: number) => Number.isFinite(value) && value > 0;

function port(value: unknown, field: string): number {
  if (typeof value !== 'number' || !isPort(value)) {
    fail(field, `must be an integer port in [0, 65535] (0: a free port), got ${JSON.stringify(value)}`);
  }
  return value;
}

function positiveMs(value: unknown, field: string): number {
  if (typeof value !== 'number' || !isPositive(value)) {
    fail(field, `must be a positive number of milliseconds, got ${JSON.stringify(value)}`);
  }
  return value;
}

function url(value: unknown, field: string): URL {
  if (typeof value !== 'string') fail(field, 'must be a URL string');
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return fail(field, `must be a URL, got ${JSON.stringify(value)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    fail(field, `must be http(s), got ${parsed.protocol}`);
  return parsed;
}

function resolvePrometheus(
  option: unknown,
  env: OtelEnv,
  exporters: string[] | undefined,
): ResolvedPrometheus | undefined {
  if (option === false) return undefined;
  if (option !== undefined && !isPlainObject(option)) fail('prometheus', 'must be an object or false');
  const o = (option ?? {}) as Record<string, unknown>;
  checkKeys(o, PROMETHEUS_KEYS, 'prometheus.');
  if (o.host !== undefined && (typeof o.host !== 'string' || o.host === ''))
    fail('prometheus.host', 'must be a non-empty string');
  if (o.path !== undefined && (typeof o.path !== 'string' || !o.path.startsWith('/')))
    fail('prometheus.path', 'must be a path starting with "/"');
  if (o.mount !== undefined && typeof o.mount !== 'boolean') fail('prometheus.mount', 'must be a boolean');
  if (o.withoutScopeInfo !== undefined && typeof o.withoutScopeInfo !== 'boolean')
    fail('prometheus.withoutScopeInfo', 'must be a boolean');
  const explicitPort = o.port === undefined ? undefined : port(o.port, 'prometheus.port');
  // OTEL_METRICS_EXPORTER without "prometheus" turns the endpoint off unless the option asks for it.
  if (option === undefined && exporters !== undefined && !exporters.includes('prometheus')) return undefined;
  return {
    host: (o.host as string | undefined) ?? env.string('OTEL_EXPORTER_PROMETHEUS_HOST') ?? DEFAULT_PROMETHEUS_HOST,
    port:
      explicitPort ??
      env.number('OTEL_EXPORTER_PROMETHEUS_PORT', isPort, 'an integer port in [0, 65535]') ??
      DEFAULT_PROMETHEUS_PORT,
    path: (o.path as string | undefined) ?? '/metrics',
    mount: o.mount === true,
    withoutScopeInfo: o.withoutScopeInfo === true,
  };
}

interface OtlpChoice {
  /** Metric export over OTLP was asked for (by option or environment). */
  metrics: boolean;
  traces: boolean;
}

function validateOtlpOption(o: Record<string, unknown>): void {
  checkKeys(o, OTLP_KEYS, 'otlp.');
  if (o.protocol !== undefined && !PROTOCOLS.includes(o.protocol as OtlpProtocol))
    fail('otlp.protocol', `must be "http/protobuf" or "grpc", got ${JSON.stringify(o.protocol)}`);
  if (o.temporality !== undefined && !TEMPORALITIES.includes(o.temporality as OtlpTemporality))
    fail('otlp.temporality', `must be "cumulative", "delta" or "lowmemory", got ${JSON.stringify(o.temporality)}`);
  if (o.endpoint !== undefined) url(o.endpoint, 'otlp.endpoint');
  if (o.headers !== undefined) {
    if (!isPlainObject(o.headers)) fail('otlp.headers', 'must be an object of strings');
    for (const [key, value] of Object.entries(o.headers)) {
      if (typeof value !== 'string') fail(`otlp.headers.${key}`, 'must be a string');
    }
  }
  if (o.intervalMs !== undefined) positiveMs(o.intervalMs, 'otlp.intervalMs');
  if (o.timeoutMs !== undefined) positiveMs(o.timeoutMs, 'otlp.timeoutMs');
  // The periodic reader refuses a timeout longer than its period.
  if (o.intervalMs !== undefined && o.timeoutMs !== undefined && (o.timeoutMs as number) > (o.intervalMs as number))
    fail('otlp.timeoutMs', `must be ≤ otlp.intervalMs (${o.intervalMs}), got ${o.timeoutMs}`);
}

function otlpTarget(
  signal: 'metrics' | 'traces',
  o: Record<string, unknown>,
  env: OtelEnv,
  timeoutMs: number,
): OtlpTarget {
  const SIGNAL = signal.toUpperCase();
  const envProtocol = (name: string) => {
    const raw = env.string(name)?.toLowerCase();
    if (raw === undefined) return undefined;
    if (PROTOCOLS.includes(raw as OtlpProtocol)) return raw as OtlpProtocol;
    return env.ignore(name, `"http/protobuf" or "grpc" (http/json is not offered)`);
  };
  const protocol =
    (o.protocol as OtlpProtocol | undefined) ??
    envProtocol(`OTEL_EXPORTER_OTLP_${SIGNAL}_PROTOCOL`) ??
    envProtocol('OTEL_EXPORTER_OTLP_PROTOCOL') ??
    'http/protobuf';
  // The spec: OTEL_EXPORTER_OTLP_ENDPOINT is a base (HTTP appends /v1/<signal>, gRPC uses it as is);
  // OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT is used exactly as given. An explicit option wins over both.
  const perSignalName = `OTEL_EXPORTER_OTLP_${SIGNAL}_ENDPOINT`;
  const perSignal = o.endpoint === undefined && env.url(perSignalName) ? env.string(perSignalName) : undefined;
  let target: string;
  if (perSignal) target = perSignal;
  else {
    const base =
      (o.endpoint !== undefined ? new URL(o.endpoint as string) : env.url('OTEL_EXPORTER_OTLP_ENDPOINT')) ??
      new URL(protocol === 'grpc' ? 'http://localhost:4317' : 'http://localhost:4318');
    const text = base.href.replace(/\/+$/, '');
    target = protocol === 'grpc' ? text : `${text}/v1/${signal}`;
  }
  return {
    protocol,
    url: target,
    headers: {
      ...env.headers('OTEL_EXPORTER_OTLP_HEADERS'),
      ...env.headers(`OTEL_EXPORTER_OTLP_${SIGNAL}_HEADERS`),
      ...(o.headers as Record<string, string> | undefined),
    },
    timeoutMs,
  };
}

function resolveOtlp(option: unknown, env: OtelEnv, choice: OtlpChoice): ResolvedOtlp | undefined {
  if (option === false) return undefined;
  if (option !== undefined && !isPlainObject(option)) fail('otlp', 'must be an object or false');
  const o = (option ?? {}) as Record<string, unknown>;
  validateOtlpOption(o);
  if (!choice.metrics && !choice.traces) return undefined;

  const ms = (name: string) => env.number(name, isPositive, 'a positive number of milliseconds');
  const intervalMs =
    (o.intervalMs as number | undefined) ?? ms('OTEL_METRIC_EXPORT_INTERVAL') ?? DEFAULT_EXPORT_INTERVAL_MS;
  const genericTimeout = ms('OTEL_EXPORTER_OTLP_TIMEOUT');
  let metricsTimeout =
    (o.timeoutMs as number | undefined) ??
    ms('OTEL_EXPORTER_OTLP_METRICS_TIMEOUT') ??
    ms('OTEL_METRIC_EXPORT_TIMEOUT') ??
    genericTimeout ??
    Math.min(DEFAULT_EXPORT_TIMEOUT_MS, intervalMs);
  if (metricsTimeout > intervalMs) {
    if (o.timeoutMs !== undefined)
      fail('otlp.timeoutMs', `must be ≤ the export interval (${intervalMs}), got ${metricsTimeout}`);
    // From the environment: the SDK's own rule, the timeout clamped to the interval.
    env.ignore('OTEL_METRIC_EXPORT_TIMEOUT', `at most the export interval (${intervalMs} ms); using ${intervalMs} ms`);
    metricsTimeout = intervalMs;
  }
  const tracesTimeout =
    (o.timeoutMs as number | undefined) ??
    ms('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT') ??
    genericTimeout ??
    DEFAULT_EXPORT_TIMEOUT_MS;
  return {
    metrics: choice.metrics ? otlpTarget('metrics', o, env, metricsTimeout) : undefined,
    traces: choice.traces ? otlpTarget('traces', o, env, tracesTimeout) : undefined,
    intervalMs,
    temporality:
      (o.temporality as OtlpTemporality | undefined) ??
      env.choice('OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE', TEMPORALITIES) ??
      'cumulative',
    explicit: option !== undefined,
  };
}

/** Which signals go over OTLP: explicit options first, then OTEL_*_EXPORTER, then whether an endpoint is set. */
function otlpChoice(options: StartOptions, env: OtelEnv, metricsExporters: string[] | undefined): OtlpChoice {
  if (options.otlp === false) return { metrics: false, traces: false };
  const given = options.otlp !== undefined;
  // A variable whose value is ignored (not a URL) does not turn OTLP on.
  const endpoint = (signal: string) =>
    env.url('OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined ||
    env.url(`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`) !== undefined;
  const metrics = given || (metricsExporters ? metricsExporters.includes('otlp') : endpoint('METRICS'));
  const tracesExporters = env.list('OTEL_TRACES_EXPORTER', ['otlp', 'none']);
  const traces =
    options.traces !== false &&
    (tracesExporters && options.traces === undefined
      ? tracesExporters.includes('otlp') && !tracesExporters.includes('none')
      : given || endpoint('TRACES'));
  return { metrics, traces };
}

/**
 * Resolves the options and the environment. Throws `InferSignalConfigError`
 * for a bad option; warns (through `options.logger`, once each) about
 * `OTEL_*` values it ignores.
 */
export function resolveStartOptions(options: StartOptions): ResolvedStart {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    fail('options', 'start() takes an options object');
  checkKeys(options, KNOWN_KEYS, '');
  if (options.logger !== undefined && typeof options.logger?.warn !== 'function')
    fail('logger', 'must have a warn(message) method');
  if (options.serviceName !== undefined && (typeof options.serviceName !== 'string' || options.serviceName === '')) {
    fail('serviceName', 'must be a non-empty string');
  }
  const traces: unknown = options.traces;
  if (
    traces !== undefined &&
    typeof traces !== 'boolean' &&
    traces !== 'outliers' &&
    traces !== 'all' &&
    (typeof traces !== 'object' || traces === null || Array.isArray(traces))
  )
    fail('traces', `must be a boolean, 'outliers', 'all' or an options object, got ${JSON.stringify(traces)}`);
  for (const key of ['registerGlobals', 'contextManager', 'runtimeMetrics'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'boolean') fail(key, 'must be a boolean');
  }
  const limit = options.cardinalityLimit ?? DEFAULT_CARDINALITY_LIMIT;
  if (!Number.isInteger(limit) || limit < 2)
    fail('cardinalityLimit', `must be an integer ≥ 2, got ${JSON.stringify(limit)}`);
  for (const key of ['metricReaders', 'metricProducers', 'spanProcessors'] as const) {
    if (options[key] !== undefined && !Array.isArray(options[key])) fail(key, 'must be an array');
  }

  const logger: StartLogger = options.logger ?? console;
  const env = new OtelEnv((message) => logger.warn(message));
  const disabled = env.boolean('OTEL_SDK_DISABLED');
  let metricsExporters = env.list('OTEL_METRICS_EXPORTER', ['otlp', 'prometheus', 'none']);
  if (metricsExporters?.includes('none')) metricsExporters = [];
  const prometheus = resolvePrometheus(options.prometheus, env, metricsExporters);
  const otlp = resolveOtlp(options.otlp, env, otlpChoice(options, env, metricsExporters));
  const serviceName = options.serviceName ?? env.string('OTEL_SERVICE_NAME') ?? 'unknown_service:node';
  const shutdownTimeoutMs = otlp?.metrics?.timeoutMs ?? otlp?.traces?.timeoutMs ?? DEFAULT_EXPORT_TIMEOUT_MS;
  if (disabled) {
    return {
      serviceName,
      disabled,
      prometheus: undefined,
      otlp: undefined,
      traces: false,
      cardinalityLimit: limit,
      registerGlobals: false,
      contextManager: false,
      runtimeMetrics: options.runtimeMetrics ?? true,
      shutdownTimeoutMs,
    };
  }
  return {
    serviceName,
    disabled,
    prometheus,
    otlp,
    traces:
      options.traces === undefined
        ? otlp?.traces !== undefined || (options.spanProcessors?.length ?? 0) > 0
        : options.traces !== false,
    cardinalityLimit: limit,
    registerGlobals: options.registerGlobals ?? true,
    contextManager: options.contextManager ?? false,
    runtimeMetrics: options.runtimeMetrics ?? true,
    shutdownTimeoutMs,
  };
}
