/**
 * Validates `start()` options and merges them with the standard `OTEL_*`
 * environment variables. Explicit options win over the environment, the
 * environment over the defaults. A bad option throws at start-up naming the
 * field; a variable whose value cannot be used is reported once and ignored,
 * as the OpenTelemetry specification asks (env.ts).
 */
import { InferSignalConfigError } from '@infersignal/core';
import { checkField, describeValue, fieldOrDefault, rejectValue } from '@infersignal/core/signals';
import { OtelEnv } from './env';
import type { OtlpProtocol, OtlpTemporality, StartLogger, StartOptions } from './types';

const DEFAULT_PROMETHEUS_PORT = 9464;
/** Loopback: metrics describe the service's internals, so exposing them is a deliberate choice. */
const DEFAULT_PROMETHEUS_HOST = '127.0.0.1';
/**
 * 15 s instead of the OTel default 60 s: the signals are early warnings, and
 * a minute of export delay would eat most of their lead time.
 */
const DEFAULT_EXPORT_INTERVAL_MS = 15_000;
const DEFAULT_EXPORT_TIMEOUT_MS = 10_000;
const DEFAULT_CARDINALITY_LIMIT = 2000;

export interface ResolvedPrometheus {
  host: string;
  /** 0: the OS picks a free port (the server reports the one it got). */
  port: number;
  path: string;
  mount: boolean;
  withoutScopeInfo: boolean;
  thread: 'worker' | 'main';
  mainWaitMs: number;
  reuseMs: number;
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
  'optInMetrics',
]);
const PROMETHEUS_KEYS = new Set([
  'host',
  'port',
  'path',
  'mount',
  'withoutScopeInfo',
  'thread',
  'mainWaitMs',
  'reuseMs',
]);
const DEFAULT_MAIN_WAIT_MS = 40;
/**
 * A scraper every 50 ms (llm-d's endpoint picker) then wakes the main thread
 * about once a second on an idle replica, at the tick that refreshes the
 * sampled gauges anyway; Prometheus' 15 s interval never reuses.
 */
const DEFAULT_REUSE_MS = 1000;
const THREADS: readonly ResolvedPrometheus['thread'][] = ['worker', 'main'];
const OTLP_KEYS = new Set(['endpoint', 'protocol', 'headers', 'intervalMs', 'timeoutMs', 'temporality']);
const PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'grpc'];
const TEMPORALITIES: readonly OtlpTemporality[] = ['cumulative', 'delta', 'lowmemory'];

function fail(field: string, message: string): never {
  throw new InferSignalConfigError(field, message);
}

function checkKeys(value: object, known: Set<string>, prefix: string): void {
  for (const key of Object.keys(value))
    if (!known.has(key))
      fail(
        prefix + key,
        `unknown option, got ${describeValue((value as Record<string, unknown>)[key])} (expected one of ${[...known].join(', ')})`,
      );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A listener's port: 0 asks the OS for a free one. */
const PORT = { type: 'port', allowZero: true } as const;
const MILLISECONDS = { type: 'number', above: 0, unit: 'milliseconds' } as const;

function port(value: unknown, field: string): number {
  return checkField(field, value, PORT);
}

function positiveMs(value: unknown, field: string): number {
  return checkField(field, value, MILLISECONDS);
}

function url(value: unknown, field: string): URL {
  let parsed: URL | undefined;
  try {
    parsed = typeof value === 'string' ? new URL(value) : undefined;
  } catch {
    // reported below
  }
  if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    return rejectValue(field, value, 'an http(s) URL');
  return parsed;
}

function resolvePrometheus(
  option: unknown,
  env: OtelEnv,
  exporters: string[] | undefined,
): ResolvedPrometheus | undefined {
  if (option === false) return undefined;
  if (option !== undefined && !isPlainObject(option)) rejectValue('prometheus', option, 'an object or false');
  const o = (option ?? {}) as Record<string, unknown>;
  checkKeys(o, PROMETHEUS_KEYS, 'prometheus.');
  fieldOrDefault('prometheus.host', o.host, { type: 'string' }, undefined);
  if (o.path !== undefined && (typeof o.path !== 'string' || !o.path.startsWith('/')))
    rejectValue('prometheus.path', o.path, 'a path starting with "/"');
  fieldOrDefault('prometheus.mount', o.mount, { type: 'boolean' }, undefined);
  fieldOrDefault('prometheus.withoutScopeInfo', o.withoutScopeInfo, { type: 'boolean' }, undefined);
  if (o.thread !== undefined && !THREADS.includes(o.thread as ResolvedPrometheus['thread']))
    rejectValue('prometheus.thread', o.thread, '"worker" or "main"');
  const mainWaitMs = fieldOrDefault<number>(
    'prometheus.mainWaitMs',
    o.mainWaitMs,
    { type: 'number', min: 0, max: 60_000 },
    DEFAULT_MAIN_WAIT_MS,
  );
  const reuseMs = fieldOrDefault<number>(
    'prometheus.reuseMs',
    o.reuseMs,
    { type: 'number', min: 0, max: 60_000 },
    DEFAULT_REUSE_MS,
  );
  const explicitPort = o.port === undefined ? undefined : port(o.port, 'prometheus.port');
  // OTEL_METRICS_EXPORTER without "prometheus" turns the endpoint off unless the option asks for it.
  if (option === undefined && exporters !== undefined && !exporters.includes('prometheus')) return undefined;
  return {
    host: (o.host as string | undefined) ?? env.string('OTEL_EXPORTER_PROMETHEUS_HOST') ?? DEFAULT_PROMETHEUS_HOST,
    port:
      explicitPort ??
      env.number('OTEL_EXPORTER_PROMETHEUS_PORT', PORT, `the default ${DEFAULT_PROMETHEUS_PORT}`) ??
      DEFAULT_PROMETHEUS_PORT,
    path: (o.path as string | undefined) ?? '/metrics',
    mount: o.mount === true,
    withoutScopeInfo: o.withoutScopeInfo !== false,
    thread: (o.thread as ResolvedPrometheus['thread'] | undefined) ?? 'worker',
    mainWaitMs,
    reuseMs,
  };
}

interface OtlpChoice {
  /** Metric export over OTLP was asked for (by option or environment). */
  metrics: boolean;
  traces: boolean;
}

function validateOtlpOption(o: Record<string, unknown>): void {
  checkKeys(o, OTLP_KEYS, 'otlp.');
  fieldOrDefault('otlp.protocol', o.protocol, { type: 'enum', values: PROTOCOLS }, undefined);
  fieldOrDefault('otlp.temporality', o.temporality, { type: 'enum', values: TEMPORALITIES }, undefined);
  if (o.endpoint !== undefined) url(o.endpoint, 'otlp.endpoint');
  if (o.headers !== undefined) {
    if (!isPlainObject(o.headers)) rejectValue('otlp.headers', o.headers, 'an object of strings');
    for (const [key, value] of Object.entries(o.headers)) {
      if (typeof value !== 'string') rejectValue(`otlp.headers.${key}`, value, 'a string');
    }
  }
  if (o.intervalMs !== undefined) positiveMs(o.intervalMs, 'otlp.intervalMs');
  if (o.timeoutMs !== undefined) positiveMs(o.timeoutMs, 'otlp.timeoutMs');
  // The periodic reader refuses a timeout longer than its period.
  if (o.intervalMs !== undefined && o.timeoutMs !== undefined && (o.timeoutMs as number) > (o.intervalMs as number))
    fail('otlp.timeoutMs', `must be <= otlp.intervalMs (${o.intervalMs}), got ${o.timeoutMs}`);
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
    return env.ignore(
      name,
      `"http/protobuf" or "grpc" (http/json is not offered)`,
      false,
      'the next setting, else http/protobuf',
    );
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

  const ms = (name: string, using = 'the next timeout setting, else the default') =>
    env.number(name, MILLISECONDS, using);
  const intervalMs =
    (o.intervalMs as number | undefined) ??
    ms('OTEL_METRIC_EXPORT_INTERVAL', `the default ${DEFAULT_EXPORT_INTERVAL_MS} ms`) ??
    DEFAULT_EXPORT_INTERVAL_MS;
  const genericTimeout = ms('OTEL_EXPORTER_OTLP_TIMEOUT');
  let metricsTimeout =
    (o.timeoutMs as number | undefined) ??
    ms('OTEL_EXPORTER_OTLP_METRICS_TIMEOUT') ??
    ms('OTEL_METRIC_EXPORT_TIMEOUT') ??
    genericTimeout ??
    Math.min(DEFAULT_EXPORT_TIMEOUT_MS, intervalMs);
  if (metricsTimeout > intervalMs) {
    if (o.timeoutMs !== undefined)
      fail('otlp.timeoutMs', `must be <= the export interval (${intervalMs}), got ${metricsTimeout}`);
    // From the environment: the SDK's own rule, the timeout clamped to the interval.
    env.ignore(
      'OTEL_METRIC_EXPORT_TIMEOUT',
      `at most the export interval (${intervalMs} ms)`,
      false,
      `${intervalMs} ms`,
    );
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
      env.choice('OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE', TEMPORALITIES, 'the default cumulative') ??
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
  const tracesExporters = env.list(
    'OTEL_TRACES_EXPORTER',
    ['otlp', 'none'],
    'the default (otlp when an OTLP endpoint is set, else none)',
  );
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
    rejectValue('options', options, 'an options object');
  checkKeys(options, KNOWN_KEYS, '');
  if (options.logger !== undefined && typeof options.logger?.warn !== 'function')
    rejectValue('logger', options.logger, 'an object with a warn(message) method');
  fieldOrDefault('serviceName', options.serviceName, { type: 'string' }, undefined);
  const traces: unknown = options.traces;
  if (
    traces !== undefined &&
    typeof traces !== 'boolean' &&
    traces !== 'outliers' &&
    traces !== 'all' &&
    (typeof traces !== 'object' || traces === null || Array.isArray(traces))
  )
    rejectValue('traces', traces, "a boolean, 'outliers', 'all' or an options object");
  // eventLoop and heap are the monitor's; checked here too so start() refuses them before it starts anything.
  for (const key of ['registerGlobals', 'contextManager', 'runtimeMetrics', 'eventLoop', 'heap'] as const)
    fieldOrDefault(key, options[key], { type: 'boolean' }, undefined);
  const limit = fieldOrDefault(
    'cardinalityLimit',
    options.cardinalityLimit,
    { type: 'integer', min: 2 },
    DEFAULT_CARDINALITY_LIMIT,
  );
  for (const key of ['metricReaders', 'metricProducers', 'spanProcessors'] as const) {
    if (options[key] !== undefined && !Array.isArray(options[key])) rejectValue(key, options[key], 'an array');
  }

  const logger: StartLogger = options.logger ?? console;
  const env = new OtelEnv((message) => logger.warn(message));
  const disabled = env.boolean('OTEL_SDK_DISABLED');
  env.resourceAttributes();
  let metricsExporters = env.list(
    'OTEL_METRICS_EXPORTER',
    ['otlp', 'prometheus', 'none'],
    'the default (prometheus on, otlp when an OTLP endpoint is set)',
  );
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
