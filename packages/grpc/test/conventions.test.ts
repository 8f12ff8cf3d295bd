/**
 * The RPC semantic conventions on rpc.server.call.duration, the move from
 * the older ones (OTEL_SEMCONV_STABILITY_OPT_IN=rpc/dup), and the model
 * label of a call nothing named.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS } from '@infersignal/core';
import { UNKNOWN_MODEL } from '../../core/src/names';
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { instrumentService } from '../src/index';
import { GRPC_STATUS } from '../src/status';
import type { GrpcInstrumentationOptions } from '../src/index';
import { callUnary, Inference, MODES, readStream, SERVICE, setupMonitor, startServer } from './helpers';
import { inferenceImpl } from './inference-impl';

const CURRENT = METRICS.rpcCallDuration.name;
const OLD = METRICS.rpcCallDurationOld.name;

const open: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
});

async function serve(mode: (typeof MODES)[number], options?: GrpcInstrumentationOptions) {
  const env = setupMonitor();
  open.push(env);
  const started = await startServer(mode, env.monitor, inferenceImpl(), options);
  open.push(started);
  return { ...env, ...started };
}

/** Two OK unary calls, one INTERNAL, one streamed call of 3 tokens (the proto-loaded client is untyped). */
async function traffic(client: any): Promise<void> {
  await callUnary(client, 'Infer', { prompt: 'a', simulateDelayMs: 30 });
  await callUnary(client, 'Infer', { prompt: 'b' });
  await callUnary(client, 'Infer', { prompt: 'c', simulateStatus: GRPC_STATUS.INTERNAL });
  await readStream(client.Generate({ prompt: 'd', maxTokens: 3 }));
}

describe.each(MODES)('%s', (mode) => {
  it('emits the current RPC conventions only by default', async () => {
    const env = await serve(mode, { semconvStabilityOptIn: '' });
    await traffic(env.client);
    const metrics = await env.collect();
    expect(metrics.count(CURRENT)).toBe(4);
    expect(metrics.values(CURRENT, ATTR.rpcSystemName)).toEqual(['grpc']);
    expect(metrics.values(CURRENT, ATTR.rpcMethod)).toEqual([`${SERVICE}/Generate`, `${SERVICE}/Infer`]);
    expect(metrics.by(CURRENT, ATTR.rpcResponseStatusCode)).toEqual({ OK: 3, INTERNAL: 1 });
    expect(metrics.names()).not.toContain(OLD);
  });

  it('with rpc/dup, also the older rpc.server.duration in milliseconds, same calls, same durations', async () => {
    const env = await serve(mode, { semconvStabilityOptIn: 'http, rpc/dup' });
    await traffic(env.client);
    const metrics = await env.collect();
    expect(metrics.count(CURRENT)).toBe(4);
    expect(metrics.count(OLD)).toBe(4);
    const old = metrics.points<Histogram>(OLD, { [ATTR.rpcMethod]: 'Infer', [ATTR.rpcGrpcStatusCode]: 0 });
    expect(old).toHaveLength(1);
    expect(old[0].attributes).toEqual({
      [ATTR.rpcSystem]: 'grpc',
      [ATTR.rpcService]: SERVICE,
      [ATTR.rpcMethod]: 'Infer',
      [ATTR.rpcGrpcStatusCode]: 0,
    });
    expect(old[0].value.count).toBe(2);
    const current = metrics.histogram(CURRENT, {
      [ATTR.rpcMethod]: `${SERVICE}/Infer`,
      [ATTR.rpcResponseStatusCode]: 'OK',
    });
    // The same two calls: the old sum is the new one in milliseconds (one delayed 30 ms).
    expect(old[0].value.sum).toBeCloseTo(current!.sum! * 1000, 6);
    // Node's timers count from the loop's cached millisecond: a 30 ms timer can end up to 1 ms short of 30 ms.
    expect(old[0].value.sum).toBeGreaterThanOrEqual(29);
    expect(old[0].value.buckets.boundaries).toEqual([
      0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000,
    ]);
    expect(metrics.by(OLD, ATTR.rpcGrpcStatusCode)).toEqual({ 0: 3, 13: 1 });
  });

  it('labels a call nothing named _unknown; modelFromMethod labels it by its method', async () => {
    const plain = await serve(mode);
    await callUnary(plain.client, 'Infer', { prompt: 'a' });
    const byMethod = await serve(mode, { modelFromMethod: true });
    await callUnary(byMethod.client, 'Infer', { prompt: 'a' });
    expect((await plain.collect()).values(METRICS.requests.name, ATTR.model)).toEqual([UNKNOWN_MODEL]);
    expect((await byMethod.collect()).values(METRICS.requests.name, ATTR.model)).toEqual(['Infer']);
  });
});

describe('OTEL_SEMCONV_STABILITY_OPT_IN', () => {
  it('is read when the option is not given', async () => {
    const before = process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
    process.env.OTEL_SEMCONV_STABILITY_OPT_IN = 'rpc/dup';
    try {
      const env = await serve('interceptor');
      await callUnary(env.client, 'Infer', { prompt: 'a' });
      const metrics = await env.collect();
      expect(metrics.count(OLD)).toBe(1);
      expect(metrics.count(CURRENT)).toBe(1);
    } finally {
      if (before === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
      else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = before;
    }
  });

  it('`rpc` alone is the current conventions (the default here); the option overrides the variable', async () => {
    const before = process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
    process.env.OTEL_SEMCONV_STABILITY_OPT_IN = 'rpc/dup';
    try {
      const env = await serve('instrumentService', { semconvStabilityOptIn: 'rpc' });
      await callUnary(env.client, 'Infer', { prompt: 'a' });
      const metrics = await env.collect();
      expect(metrics.count(CURRENT)).toBe(1);
      expect(metrics.names()).not.toContain(OLD);
    } finally {
      if (before === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
      else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = before;
    }
  });

  it('a non-string option or modelFromMethod fails at creation, naming the field', () => {
    const env = setupMonitor();
    open.push(env);
    const field = (options: object) => {
      try {
        instrumentService(env.monitor, Inference.service, {}, options as never);
      } catch (error) {
        expect(error).toBeInstanceOf(InferSignalConfigError);
        return (error as InferSignalConfigError).field;
      }
      return 'no error';
    };
    expect(field({ semconvStabilityOptIn: true })).toBe('options.semconvStabilityOptIn');
    expect(field({ modelFromMethod: 'yes' })).toBe('options.modelFromMethod');
  });
});
