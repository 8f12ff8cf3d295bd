import { describe, expect, it } from 'vitest';
import { InferSignalConfigError } from '@infersignal/core';
import { resolveStartOptions, start, type StartOptions } from '@infersignal/node';

function fieldOf(options: unknown, env: Record<string, string> = {}): string {
  try {
    resolveStartOptions(options as StartOptions, env);
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
    expect(fieldOf({ prometheus: { path: 'metrics' } })).toBe('prometheus.path');
    expect(fieldOf({ prometheus: { hots: 'x' } })).toBe('prometheus.hots');
    expect(fieldOf({ prometheus: 'yes' })).toBe('prometheus');
    expect(fieldOf({ otlp: { endpoint: 'not a url' } })).toBe('otlp.endpoint');
    expect(fieldOf({ otlp: { endpoint: 'ftp://x' } })).toBe('otlp.endpoint');
    expect(fieldOf({ otlp: { protocol: 'http/json' } })).toBe('otlp.protocol');
    expect(fieldOf({ otlp: { intervalMs: 0 } })).toBe('otlp.intervalMs');
    expect(fieldOf({ otlp: { intervalMs: 1000, timeoutMs: 5000 } })).toBe('otlp.timeoutMs');
    expect(fieldOf({ otlp: { headers: { a: 1 } } })).toBe('otlp.headers.a');
    expect(fieldOf({ cardinalityLimit: 1 })).toBe('cardinalityLimit');
    expect(fieldOf({ traces: 'yes' })).toBe('traces');
    expect(fieldOf({ logger: {} })).toBe('logger');
    expect(fieldOf({}, { OTEL_EXPORTER_PROMETHEUS_PORT: 'abc' })).toBe('OTEL_EXPORTER_PROMETHEUS_PORT');
    expect(
      fieldOf({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
    ).toBe('OTEL_EXPORTER_OTLP_PROTOCOL');
    expect(fieldOf({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'novalue' })).toBe(
      'OTEL_EXPORTER_OTLP_HEADERS',
    );
  });

  it('throws from start() before anything is started, including core’s threshold errors', () => {
    expect(() => start({ prometheus: { port: -1 } })).toThrow(/prometheus\.port/);
    expect(() =>
      start({ prometheus: { port: 0 }, registerGlobals: false, thresholds: { queue: { occupancyWarn: -1 } } }),
    ).toThrow(InferSignalConfigError);
  });

  it('resolves safe defaults and the environment', () => {
    const defaults = resolveStartOptions({}, {});
    expect(defaults.serviceName).toBe('unknown_service:node');
    expect(defaults.prometheus).toEqual({ host: '127.0.0.1', port: 9464, path: '/metrics', mount: false });
    expect(defaults.otlp).toBeUndefined();
    expect(defaults.traces).toBe(false);
    expect(defaults.cardinalityLimit).toBe(2000);

    const env = resolveStartOptions(
      { otlp: { headers: { b: '2' } } },
      {
        OTEL_SERVICE_NAME: 'svc',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
        OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=1',
      },
    );
    expect(env.serviceName).toBe('svc');
    expect(env.otlp).toMatchObject({
      protocol: 'http/protobuf',
      metricsUrl: 'http://collector:4318/v1/metrics',
      tracesUrl: 'http://collector:4318/v1/traces',
      headers: { a: '1', b: '2' },
      intervalMs: 15_000,
      timeoutMs: 10_000,
    });
    expect(env.traces).toBe(true);
    expect(env.shutdownTimeoutMs).toBe(10_000);

    const grpc = resolveStartOptions(
      { serviceName: 'explicit' },
      { OTEL_SERVICE_NAME: 'env', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
    );
    expect(grpc.serviceName).toBe('explicit');
    expect(grpc.otlp).toMatchObject({ protocol: 'grpc', metricsUrl: 'http://c:4317', tracesUrl: 'http://c:4317' });
    expect(resolveStartOptions({ otlp: false }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).otlp).toBeUndefined();
    expect(
      resolveStartOptions({ prometheus: { host: '0.0.0.0' } }, { OTEL_EXPORTER_PROMETHEUS_HOST: '::1' }).prometheus
        ?.host,
    ).toBe('0.0.0.0');
  });
});
