import { afterEach, describe, expect, it, vi } from 'vitest';
import { InferSignalConfigError } from '@infersignal/core';
import { start, type StartOptions } from '@infersignal/node';
import { resolveStartOptions } from '../src/options';
import { isInstalled, missingPeerMessage, OTLP_PACKAGES } from '../src/optional-peer';

afterEach(() => {
  vi.unstubAllEnvs();
});

/** Sets OTEL_* variables for one test (the SDK's env helpers read process.env). */
function env(variables: Record<string, string>): void {
  for (const [name, value] of Object.entries(variables)) vi.stubEnv(name, value);
}

/** Resolves with a logger that keeps the warnings. */
function resolve(options: StartOptions = {}) {
  const warnings: string[] = [];
  const resolved = resolveStartOptions({ ...options, logger: { warn: (m) => warnings.push(m) } });
  return { resolved, warnings };
}

function fieldOf(options: unknown): string {
  try {
    resolveStartOptions(options as StartOptions);
  } catch (err) {
    expect(err).toBeInstanceOf(InferSignalConfigError);
    return (err as InferSignalConfigError).field;
  }
  throw new Error('expected a config error');
}

describe('start() options', () => {
  it('rejects bad options naming the field', () => {
    expect(fieldOf({ bogus: 1 })).toBe('bogus');
    expect(fieldOf({ serviceName: '' })).toBe('serviceName');
    expect(fieldOf({ prometheus: { port: 70000 } })).toBe('prometheus.port');
    expect(fieldOf({ prometheus: { port: 1.5 } })).toBe('prometheus.port');
    expect(fieldOf({ prometheus: { port: '9464' } })).toBe('prometheus.port');
    expect(fieldOf({ prometheus: { path: 'metrics' } })).toBe('prometheus.path');
    expect(fieldOf({ prometheus: { thread: 'child' as 'main' } })).toBe('prometheus.thread');
    expect(fieldOf({ prometheus: { mainWaitMs: -1 } })).toBe('prometheus.mainWaitMs');
    expect(fieldOf({ prometheus: { reuseMs: '1s' as unknown as number } })).toBe('prometheus.reuseMs');
    expect(fieldOf({ prometheus: { hots: 'x' } })).toBe('prometheus.hots');
    expect(fieldOf({ prometheus: 'yes' })).toBe('prometheus');
    expect(fieldOf({ otlp: { endpoint: 'not a url' } })).toBe('otlp.endpoint');
    expect(fieldOf({ otlp: { endpoint: 'ftp://x' } })).toBe('otlp.endpoint');
    expect(fieldOf({ otlp: { protocol: 'http/json' } })).toBe('otlp.protocol');
    expect(fieldOf({ otlp: { temporality: 'sometimes' } })).toBe('otlp.temporality');
    expect(fieldOf({ otlp: { intervalMs: 0 } })).toBe('otlp.intervalMs');
    expect(fieldOf({ otlp: { intervalMs: 1000, timeoutMs: 5000 } })).toBe('otlp.timeoutMs');
    expect(fieldOf({ otlp: { headers: { a: 1 } } })).toBe('otlp.headers.a');
    expect(fieldOf({ cardinalityLimit: 1 })).toBe('cardinalityLimit');
    expect(fieldOf({ traces: 'yes' })).toBe('traces');
    expect(fieldOf({ traces: 1 })).toBe('traces');
    expect(fieldOf({ runtimeMetrics: 1 })).toBe('runtimeMetrics');
    expect(fieldOf({ contextManager: 'async-hooks' })).toBe('contextManager');
    expect(fieldOf({ registerGlobals: 0 })).toBe('registerGlobals');
    expect(fieldOf({ logger: {} })).toBe('logger');
  });

  it('throws from start() before anything is started, including core’s threshold errors', () => {
    expect(() => start({ prometheus: { port: -1 } })).toThrow(/prometheus\.port/);
    expect(() =>
      start({ prometheus: { port: 0 }, registerGlobals: false, thresholds: { queue: { occupancyWarn: -1 } } }),
    ).toThrow(InferSignalConfigError);
  });

  it('resolves safe defaults and the environment', () => {
    const defaults = resolve().resolved;
    expect(defaults.serviceName).toBe('unknown_service:node');
    expect(defaults.prometheus).toEqual({
      host: '127.0.0.1',
      port: 9464,
      path: '/metrics',
      mount: false,
      withoutScopeInfo: true,
      thread: 'worker',
      mainWaitMs: 40,
      reuseMs: 1000,
    });
    expect(defaults.otlp).toBeUndefined();
    expect(defaults.traces).toBe(false);
    expect(defaults.cardinalityLimit).toBe(2000);
    expect(defaults.disabled).toBe(false);
    expect(resolve({ prometheus: { port: 0 } }).resolved.prometheus?.port).toBe(0);

    env({
      OTEL_SERVICE_NAME: 'svc',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=1',
    });
    const { resolved, warnings } = resolve({ otlp: { headers: { b: '2' } } });
    expect(warnings).toEqual([]);
    expect(resolved.serviceName).toBe('svc');
    expect(resolved.otlp?.metrics).toEqual({
      protocol: 'http/protobuf',
      url: 'http://collector:4318/v1/metrics',
      headers: { a: '1', b: '2' },
      timeoutMs: 10_000,
    });
    expect(resolved.otlp?.traces?.url).toBe('http://collector:4318/v1/traces');
    expect(resolved.otlp).toMatchObject({ intervalMs: 15_000, temporality: 'cumulative' });
    expect(resolved.traces).toBe(true);
    expect(resolved.shutdownTimeoutMs).toBe(10_000);

    env({
      OTEL_SERVICE_NAME: 'env',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    const grpc = resolve({ serviceName: 'explicit' }).resolved;
    expect(grpc.serviceName).toBe('explicit');
    expect(grpc.otlp?.metrics).toMatchObject({ protocol: 'grpc', url: 'http://c:4317' });
    expect(grpc.otlp?.traces).toMatchObject({ protocol: 'grpc', url: 'http://c:4317' });
    expect(resolve({ otlp: false }).resolved.otlp).toBeUndefined();
    env({ OTEL_EXPORTER_PROMETHEUS_HOST: '::1', OTEL_EXPORTER_PROMETHEUS_PORT: '0' });
    expect(resolve({ prometheus: { host: '0.0.0.0' } }).resolved.prometheus).toMatchObject({
      host: '0.0.0.0',
      port: 0,
    });
  });

  it('ignores an invalid OTEL_* value with one warning naming it, as the specification asks', () => {
    env({
      OTEL_EXPORTER_PROMETHEUS_PORT: 'abc',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'novalue,a=1',
      OTEL_METRIC_EXPORT_INTERVAL: '-5',
      OTEL_SDK_DISABLED: 'yes',
      OTEL_METRICS_EXPORTER: 'console,prometheus,otlp',
      OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'sometimes',
    });
    const { resolved, warnings } = resolve();
    expect(resolved.prometheus?.port).toBe(9464);
    expect(resolved.disabled).toBe(false);
    expect(resolved.otlp?.metrics).toMatchObject({ protocol: 'http/protobuf', headers: { a: '1' } });
    expect(resolved.otlp).toMatchObject({ intervalMs: 15_000, temporality: 'cumulative' });
    const named = (variable: string) => warnings.filter((w) => w.includes(`${variable}=`));
    for (const variable of [
      'OTEL_EXPORTER_PROMETHEUS_PORT',
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_METRIC_EXPORT_INTERVAL',
      'OTEL_SDK_DISABLED',
      'OTEL_METRICS_EXPORTER',
      'OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE',
    ])
      expect(named(variable), variable).toHaveLength(1);
    expect(warnings).toHaveLength(7);
    expect(named('OTEL_EXPORTER_PROMETHEUS_PORT')[0]).toMatch(/ignoring OTEL_EXPORTER_PROMETHEUS_PORT="abc": expected/);

    // A malformed endpoint turns nothing on.
    vi.unstubAllEnvs();
    env({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' });
    const bad = resolve();
    expect(bad.resolved.otlp).toBeUndefined();
    expect(bad.warnings).toEqual([expect.stringContaining('OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318"')]);
  });

  it('OTEL_METRICS_EXPORTER and OTEL_TRACES_EXPORTER choose the exporters unless an option says otherwise', () => {
    env({ OTEL_METRICS_EXPORTER: 'otlp' });
    let { resolved } = resolve();
    expect(resolved.prometheus).toBeUndefined();
    expect(resolved.otlp?.metrics?.url).toBe('http://localhost:4318/v1/metrics');
    expect(resolved.otlp?.traces).toBeUndefined();
    expect(resolve({ prometheus: {} }).resolved.prometheus).toBeDefined();

    env({ OTEL_METRICS_EXPORTER: 'none' });
    resolved = resolve().resolved;
    expect(resolved.prometheus).toBeUndefined();
    expect(resolved.otlp).toBeUndefined();

    env({ OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' });
    resolved = resolve().resolved;
    expect(resolved.prometheus).toBeDefined();
    expect(resolved.otlp?.metrics).toBeUndefined();
    expect(resolved.otlp?.traces?.url).toBe('http://c:4318/v1/traces');

    env({ OTEL_TRACES_EXPORTER: 'none' });
    expect(resolve().resolved.otlp).toBeUndefined();
    expect(resolve().resolved.traces).toBe(false);
    expect(resolve({ otlp: {} }).resolved.otlp?.traces).toBeUndefined();
    expect(resolve({ otlp: {}, traces: true }).resolved.otlp?.traces).toBeDefined();
    // A trace mode or options object turns traces on like true.
    expect(resolve({ otlp: {}, traces: 'outliers' }).resolved.otlp?.traces).toBeDefined();
    expect(resolve({ otlp: {}, traces: { keep: 'all' } }).resolved.traces).toBe(true);
  });

  it('per-signal endpoints, headers, protocols and timeouts; the export interval and temporality', () => {
    env({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://base:4318',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://metrics:9000/custom/path',
      OTEL_EXPORTER_OTLP_HEADERS: 'tenant=a,auth=x',
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: 'auth=metrics%20token',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:4317',
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2500',
      OTEL_METRIC_EXPORT_INTERVAL: '5000',
      OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'delta',
    });
    const { resolved, warnings } = resolve();
    expect(warnings).toEqual([]);
    expect(resolved.otlp?.metrics).toEqual({
      protocol: 'http/protobuf',
      url: 'http://metrics:9000/custom/path',
      headers: { tenant: 'a', auth: 'metrics token' },
      timeoutMs: 5000,
    });
    expect(resolved.otlp?.traces).toEqual({
      protocol: 'grpc',
      url: 'http://traces:4317',
      headers: { tenant: 'a', auth: 'x' },
      timeoutMs: 2500,
    });
    expect(resolved.otlp).toMatchObject({ intervalMs: 5000, temporality: 'delta' });
    // An explicit endpoint wins over every variable; options over the interval variable.
    const explicit = resolve({ otlp: { endpoint: 'http://mine:4318', intervalMs: 20_000 } }).resolved.otlp;
    expect(explicit?.metrics?.url).toBe('http://mine:4318/v1/metrics');
    // (The traces protocol is still gRPC from its variable: the base is used as is.)
    expect(explicit?.traces?.url).toBe('http://mine:4318');
    expect(explicit?.intervalMs).toBe(20_000);

    // A timeout above the interval from the environment is clamped to it, with a warning (the SDK's rule).
    vi.unstubAllEnvs();
    env({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_METRIC_EXPORT_INTERVAL: '1000',
      OTEL_METRIC_EXPORT_TIMEOUT: '9000',
    });
    const clamped = resolve();
    expect(clamped.resolved.otlp?.metrics?.timeoutMs).toBe(1000);
    expect(clamped.warnings).toEqual([expect.stringMatching(/OTEL_METRIC_EXPORT_TIMEOUT="9000".*1000 ms/)]);
  });

  it('OTEL_SDK_DISABLED=true: start() exports nothing and registers nothing; the monitor still judges', async () => {
    env({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' });
    const warnings: string[] = [];
    const s = start({ logger: { warn: (m) => warnings.push(m) }, detectorIntervalMs: 0 });
    try {
      expect(s.prometheus).toBeUndefined();
      expect(s.metricsHandler).toBeUndefined();
      expect(s.tracerProvider).toBeUndefined();
      expect(warnings).toEqual([expect.stringContaining('OTEL_SDK_DISABLED=true')]);
      const queue = s.monitor.queue('q', { capacity: 2, concurrency: 1 });
      queue.enqueue('m');
      queue.enqueue('m');
      s.monitor.tick();
      expect(s.monitor.snapshot().queues.q.waiting).toBe(2);
    } finally {
      await s.shutdown();
    }
  });

  it('heap passes through to the monitor: on by default, off with heap: false, a non-boolean named', async () => {
    const on = start({ prometheus: false, detectorIntervalMs: 0 });
    const off = start({ prometheus: false, detectorIntervalMs: 0, heap: false });
    try {
      expect(on.monitor.snapshot().heap?.level).toBe('ok');
      expect(off.monitor.snapshot().heap).toBeUndefined();
    } finally {
      await on.shutdown();
      await off.shutdown();
    }
    expect(() => start({ prometheus: false, heap: 'yes' as unknown as boolean })).toThrow(
      expect.objectContaining({ field: 'heap' }),
    );
  });
});

describe('optional OTLP exporter packages', () => {
  it('finds the installed ones without loading them and names the missing one with the command to install it', () => {
    expect(isInstalled(OTLP_PACKAGES.metrics['http/protobuf'])).toBe(true);
    expect(isInstalled(OTLP_PACKAGES.traces.grpc)).toBe(true);
    expect(isInstalled('@opentelemetry/exporter-metrics-otlp-nonexistent')).toBe(false);
    const message = missingPeerMessage(OTLP_PACKAGES.metrics.grpc, 'OTLP metrics export (grpc)');
    expect(message).toBe(
      'OTLP metrics export (grpc) needs @opentelemetry/exporter-metrics-otlp-grpc, which is not installed: npm install @opentelemetry/exporter-metrics-otlp-grpc',
    );
    expect(message).not.toContain('\n');
  });
});
