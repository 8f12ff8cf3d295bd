import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { BUCKETS } from '../../core/src/names';
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { GRPC_STATUS } from '../src/status';
import { inferenceImpl } from './inference-impl';
import { callUnary, MODES, readStream, SERVICE, setupMonitor, sleep, startServer, until } from './helpers';
import type { Started } from './helpers';

const DURATION = METRICS.rpcCallDuration.name;
const STREAMS = METRICS.streams.name;
const TOKENS = METRICS.streamTokens.name;
const REQUESTS = METRICS.requests.name;

const open: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
});

async function setup(
  mode: (typeof MODES)[number],
  options?: Parameters<typeof startServer>[3],
  calls?: { handled: number },
  hold?: Promise<void>,
) {
  const env = setupMonitor();
  open.push(env);
  // Most cases label calls by their method, to tell them apart; the default (`_unknown`) has its own case.
  const started: Started = await startServer(mode, env.monitor, inferenceImpl(calls, hold), {
    modelFromMethod: true,
    ...options,
  });
  open.push(started);
  return { ...env, ...started };
}

const STATUS_NAME = Object.fromEntries(Object.entries(GRPC_STATUS).map(([name, code]) => [code, name]));

/** rpc.server.call.duration's attributes of (method, code) in the current RPC conventions. */
function rpc(method: string, code: number) {
  return {
    [ATTR.rpcSystemName]: 'grpc',
    [ATTR.rpcMethod]: `${SERVICE}/${method}`,
    [ATTR.rpcResponseStatusCode]: STATUS_NAME[code],
  };
}

describe.each(MODES)('%s', (mode) => {
  it('100 token streams, 1 cancelled by its client mid-stream: cancelled counted once, exported', async () => {
    const env = await setup(mode);
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        i === 37
          ? readStream(env.client.Generate({ model: 'm', prompt: 'stall-after-2', simulateTokenDelayMs: 1 }), 2)
          : readStream(env.client.Generate({ model: 'm', prompt: 'hi', maxTokens: 5, simulateTokenDelayMs: 1 })),
      ),
    );
    expect(results.filter((r) => r.code === grpc.status.OK)).toHaveLength(99);
    expect(results[37]).toEqual({ code: grpc.status.CANCELLED, messages: 2 });

    // The server learns of the cancel from the RST_STREAM, after the client's status.
    await until(async () => (await env.collect()).sum(STREAMS) === 100);
    await sleep(50); // a second count of the same stream would land here
    const metrics = await env.collect();
    expect(metrics.sum(STREAMS, { [ATTR.model]: 'Generate', [ATTR.outcome]: 'completed' })).toBe(99);
    expect(metrics.sum(STREAMS, { [ATTR.model]: 'Generate', [ATTR.outcome]: 'cancelled' })).toBe(1);
    expect(metrics.sum(STREAMS)).toBe(100);
    // 99 × 5 tokens + the 2 the cancelled stream sent
    expect(metrics.sum(TOKENS, { [ATTR.model]: 'Generate' })).toBe(497);
    // Successful responses only: the cancelled stream has no TTFT sample.
    expect(metrics.count(METRICS.timeToFirstToken.name, { [ATTR.model]: 'Generate' })).toBe(99);
    expect(metrics.count(DURATION, rpc('Generate', GRPC_STATUS.OK))).toBe(99);
    expect(metrics.count(DURATION, rpc('Generate', GRPC_STATUS.CANCELLED))).toBe(1);
    expect(metrics.count(DURATION)).toBe(100);
    expect(metrics.sum(REQUESTS, { [ATTR.queue]: 'grpc', [ATTR.model]: 'Generate', [ATTR.outcome]: 'completed' })).toBe(
      99,
    );
    expect(metrics.sum(REQUESTS, { [ATTR.queue]: 'grpc', [ATTR.model]: 'Generate', [ATTR.outcome]: 'cancelled' })).toBe(
      1,
    );

    // Stream interruptions: 1 % interrupted is above the 0.5 % threshold.
    env.monitor.tick();
    const stream = env.monitor.snapshot().streams.Generate;
    expect(stream).toMatchObject({ samples: 100, interruptedRatio: 0.01, level: 'warn' });
    expect(env.alerts.filter((a) => a.signal === 'stream_interruptions' && a.level === 'warn')).toHaveLength(1);
    expect(env.monitor.snapshot().queues.grpc).toMatchObject({ waiting: 0, inFlight: 0, completed: 100 });
  });

  it('a 50 ms deadline on a handler still working counts deadline_exceeded once, when it passes', async () => {
    // Infer answers only when the test opens the gate.
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const env = await setup(mode, undefined, undefined, hold);
    // Connected first, so the 50 ms are the handler's, not the connection's.
    await new Promise<void>((resolve, reject) =>
      env.client.waitForReady(Date.now() + 10_000, (error?: Error) => (error ? reject(error) : resolve())),
    );
    const sentAt = performance.now();
    const unary = await callUnary(env.client, 'Infer', { model: 'm', prompt: 'slow' }, 50);
    expect(unary.error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    const stream = await readStream(
      env.client.Generate(
        { model: 'm', prompt: 'slow', simulateFirstTokenDelayMs: 200 },
        { deadline: Date.now() + 50 },
      ),
    );
    expect(stream.code).toBe(grpc.status.DEADLINE_EXCEEDED);

    // Infer is still held: what is counted for it now was counted when its deadline passed.
    await until(async () => (await env.collect()).count(DURATION) === 2);
    const countedWithinMs = performance.now() - sentAt;
    release();
    await hold;
    await sleep(50); // the held Infer has answered late; a second count of it would land here
    const metrics = await env.collect();
    expect(metrics.count(DURATION, rpc('Infer', GRPC_STATUS.DEADLINE_EXCEEDED))).toBe(1);
    expect(metrics.count(DURATION, rpc('Generate', GRPC_STATUS.DEADLINE_EXCEEDED))).toBe(1);
    expect(metrics.count(DURATION)).toBe(2);
    expect(metrics.sum(STREAMS, { [ATTR.model]: 'Generate', [ATTR.outcome]: 'deadline_exceeded' })).toBe(1);
    expect(metrics.sum(STREAMS)).toBe(1);
    expect(metrics.sum(REQUESTS, { [ATTR.outcome]: 'deadline_exceeded' })).toBe(2);
    expect(metrics.sum(REQUESTS)).toBe(2);
    // The duration runs from the call's arrival to its deadline: positive, and over before the test saw it counted.
    const [point] = metrics.points<Histogram>(DURATION, rpc('Infer', GRPC_STATUS.DEADLINE_EXCEEDED));
    expect(point.value.sum).toBeGreaterThan(0);
    expect(point.value.sum).toBeLessThanOrEqual(countedWithinMs / 1000);
  });

  it('sheds at CRITICAL: capacity 1, 5 concurrent calls → 4 RESOURCE_EXHAUSTED with a retry hint, handler called once', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const calls = { handled: 0 };
    const env = await setup(mode, { shed: true, queue: { capacity: 1 } }, calls, hold);
    const pending = Array.from({ length: 5 }, (_, i) =>
      callUnary(env.client, 'Infer', { model: 'm', prompt: `p${i}` }),
    );
    // The admitted call holds the only slot until the other four were answered.
    const shed = await new Promise<Awaited<(typeof pending)[number]>[]>((resolve) => {
      const done: Awaited<(typeof pending)[number]>[] = [];
      for (const p of pending) void p.then((r) => r.error && done.push(r) === 4 && resolve(done));
    });
    release();
    const results = await Promise.all(pending);

    expect(results.filter((r) => r.error === null)).toHaveLength(1);
    expect(shed.map((r) => r.error!.code)).toEqual([8, 8, 8, 8]);
    for (const r of shed) {
      expect(r.error!.metadata.get('retry-after')).toEqual(['1']);
      expect(r.error!.metadata.get('grpc-retry-pushback-ms')).toEqual(['1000']);
    }
    expect(calls.handled).toBe(1);

    const metrics = await env.collect();
    expect(metrics.count(DURATION, rpc('Infer', GRPC_STATUS.RESOURCE_EXHAUSTED))).toBe(4);
    expect(metrics.count(DURATION, rpc('Infer', GRPC_STATUS.OK))).toBe(1);
    expect(metrics.sum(REQUESTS, { [ATTR.queue]: 'grpc', [ATTR.model]: 'Infer', [ATTR.outcome]: 'rejected' })).toBe(4);
    expect(metrics.sum(REQUESTS, { [ATTR.queue]: 'grpc', [ATTR.model]: 'Infer', [ATTR.outcome]: 'completed' })).toBe(1);
  });

  it('sheds a server stream with UNAVAILABLE when configured', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const calls = { handled: 0 };
    const env = await setup(mode, { shed: true, queue: { capacity: 1 }, shedStatus: 'UNAVAILABLE' }, calls, hold);
    const first = callUnary(env.client, 'Infer', { prompt: 'holds the slot' });
    await until(() => calls.handled === 1);
    const stream = await readStream(env.client.Generate({ prompt: 'shed me' }));
    release();
    expect((await first).error).toBeNull();
    expect(stream).toEqual({ code: grpc.status.UNAVAILABLE, messages: 0 });
    expect(calls.handled).toBe(1);
    const metrics = await env.collect();
    expect(metrics.count(DURATION, rpc('Generate', GRPC_STATUS.UNAVAILABLE))).toBe(1);
    // A shed call never became a stream.
    expect(metrics.sum(STREAMS)).toBe(0);
  });

  it('unary Infer: each status code is an attribute, mapped to the request outcome', async () => {
    const env = await setup(mode);
    const codes = [
      0,
      0,
      0,
      GRPC_STATUS.INVALID_ARGUMENT,
      GRPC_STATUS.INTERNAL,
      GRPC_STATUS.UNAVAILABLE,
      GRPC_STATUS.RESOURCE_EXHAUSTED,
    ];
    for (const code of codes) {
      const { error } = await callUnary(env.client, 'Infer', { model: 'm', prompt: 'x', simulateStatus: code });
      expect(error?.code ?? 0).toBe(code);
    }
    const thrown = await callUnary(env.client, 'Infer', { prompt: 'throw' });
    expect(thrown.error?.code).toBe(grpc.status.UNKNOWN);

    const metrics = await env.collect();
    expect(metrics.count(DURATION, rpc('Infer', 0))).toBe(3);
    for (const code of [3, 13, 14, 8, 2]) expect(metrics.count(DURATION, rpc('Infer', code))).toBe(1);
    expect(metrics.count(DURATION)).toBe(8);
    const outcome = (o: string) => metrics.sum(REQUESTS, { [ATTR.model]: 'Infer', [ATTR.outcome]: o });
    expect([outcome('completed'), outcome('unavailable'), outcome('error')]).toEqual([3, 1, 4]);
    // Unary answers are not streams.
    expect(metrics.sum(STREAMS)).toBe(0);
    // The current conventions only: the status by name, no rpc.service, no integer code.
    expect(metrics.points(DURATION, rpc('Infer', 0))[0].attributes).toEqual(rpc('Infer', 0));
    // error.type on the codes the gRPC conventions count as server errors, with the code's name.
    expect(metrics.by(DURATION, ATTR.errorType)).toEqual({ undefined: 5, INTERNAL: 1, UNAVAILABLE: 1, UNKNOWN: 1 });
    expect(metrics.points(DURATION, rpc('Infer', GRPC_STATUS.INTERNAL))[0].attributes[ATTR.errorType]).toBe('INTERNAL');
    expect(metrics.points(DURATION, rpc('Infer', GRPC_STATUS.INVALID_ARGUMENT))[0].attributes).not.toHaveProperty(
      ATTR.errorType,
    );
    expect(metrics.points(DURATION, { [ATTR.rpcService]: SERVICE })).toEqual([]);
    expect(metrics.names()).not.toContain(METRICS.rpcCallDurationOld.name);
    // Buckets are the RPC conventions' (instrument advice; a View can still override).
    expect(metrics.points<Histogram>(DURATION, rpc('Infer', 0))[0].value.buckets.boundaries).toEqual([
      0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
    ]);
  });

  it('a stream ended with an error status counts by its code', async () => {
    const env = await setup(mode);
    const result = await readStream(
      env.client.Generate({ prompt: 'x', maxTokens: 3, simulateStatus: GRPC_STATUS.UNAVAILABLE }),
    );
    expect(result).toEqual({ code: grpc.status.UNAVAILABLE, messages: 3 });
    await until(async () => (await env.collect()).sum(STREAMS) === 1);
    const metrics = await env.collect();
    expect(metrics.sum(STREAMS, { [ATTR.outcome]: 'unavailable' })).toBe(1);
    expect(metrics.sum(TOKENS)).toBe(3);
    expect(metrics.count(DURATION, rpc('Generate', GRPC_STATUS.UNAVAILABLE))).toBe(1);
  });

  it('client streaming and bidi calls', async () => {
    const env = await setup(mode);
    const summary = await new Promise<any>((resolve, reject) => {
      const call = env.client.SubmitBatch((error: Error | null, response: unknown) =>
        error ? reject(error) : resolve(response),
      );
      for (let i = 0; i < 3; i++) call.write({ prompt: `p${i}` });
      call.end();
    });
    expect(summary).toEqual({ requests: 3, tokens: 6 });

    const chat = env.client.Chat();
    const chatDone = readStream(chat);
    chat.write({ text: 'a', maxTokens: 3 });
    chat.write({ text: 'b', maxTokens: 3 });
    chat.end();
    expect(await chatDone).toEqual({ code: 0, messages: 6 });

    const failing = env.client.Chat();
    const failingDone = readStream(failing);
    failing.write({ text: 'a', maxTokens: 2 });
    failing.write({ text: 'fail' });
    expect(await failingDone).toEqual({ code: grpc.status.UNAVAILABLE, messages: 2 });
    failing.end();

    await until(async () => (await env.collect()).sum(STREAMS) === 2);
    const metrics = await env.collect();
    expect(metrics.count(DURATION, rpc('SubmitBatch', 0))).toBe(1);
    expect(metrics.count(DURATION, rpc('Chat', 0))).toBe(1);
    expect(metrics.count(DURATION, rpc('Chat', GRPC_STATUS.UNAVAILABLE))).toBe(1);
    expect(metrics.sum(STREAMS, { [ATTR.model]: 'Chat', [ATTR.outcome]: 'completed' })).toBe(1);
    expect(metrics.sum(STREAMS, { [ATTR.model]: 'Chat', [ATTR.outcome]: 'unavailable' })).toBe(1);
    expect(metrics.sum(STREAMS, { [ATTR.model]: 'SubmitBatch' })).toBe(0);
    expect(metrics.sum(TOKENS, { [ATTR.model]: 'Chat' })).toBe(8);
    expect(metrics.sum(REQUESTS, { [ATTR.model]: 'SubmitBatch', [ATTR.outcome]: 'completed' })).toBe(1);
  });

  it('labels calls with the model function, and survives one that throws', async () => {
    const env = await setup(mode, {
      model: (method, metadata) => {
        const model = metadata.get('x-model')[0];
        if (model === 'boom') throw new Error('label bug');
        return `${method.method}:${String(model ?? 'none')}`;
      },
    });
    const md = (model: string) => {
      const m = new grpc.Metadata();
      m.set('x-model', model);
      return m;
    };
    await new Promise((resolve) => env.client.Infer({ prompt: 'a' }, md('llama'), resolve));
    await new Promise((resolve) => env.client.Infer({ prompt: 'b' }, md('boom'), resolve));
    const metrics = await env.collect();
    expect(metrics.sum(REQUESTS, { [ATTR.model]: 'Infer:llama', [ATTR.outcome]: 'completed' })).toBe(1);
    expect(metrics.sum(REQUESTS, { [ATTR.model]: 'Infer', [ATTR.outcome]: 'completed' })).toBe(1);
    expect(env.monitor.snapshot().internalErrors).toBe(1);
    expect(metrics.sum(METRICS.internalErrors.name, { [ATTR.errorSource]: 'grpc.model' })).toBe(1);
  });
});

describe.each(MODES)('%s in producer export mode', (mode) => {
  it('rpc.server.call.duration goes through the monitor MetricProducer like every per-request metric', async () => {
    const env = setupMonitor({ exportMode: 'producer' });
    open.push(env);
    const started = await startServer(mode, env.monitor, inferenceImpl(), { modelFromMethod: true });
    open.push(started);
    const answers = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => callUnary(started.client, 'Infer', { model: 'm', prompt: `p${i}` })),
      callUnary(started.client, 'Infer', { model: 'm', prompt: 'bad', simulateStatus: GRPC_STATUS.INVALID_ARGUMENT }),
    ]);
    expect(answers.map((a) => a.error?.code ?? 0).sort()).toEqual([0, 0, 0, 0, 0, 0, GRPC_STATUS.INVALID_ARGUMENT]);

    // Straight from the producer: the histogram is one of core's aggregates, not an SDK instrument.
    const produced = await env.monitor.metricProducer!.collect();
    const scopes = produced.resourceMetrics.scopeMetrics as Array<{
      metrics: Array<{ descriptor: { name: string; unit: string }; dataPoints: Array<{ value: { count: number } }> }>;
    }>;
    const duration = scopes.flatMap((s) => s.metrics).find((m) => m.descriptor.name === DURATION);
    expect(duration?.descriptor.unit).toBe('s');
    expect(duration?.dataPoints.reduce((n, p) => n + p.value.count, 0)).toBe(7);

    // And through a real MetricReader, with the buckets of the API path.
    const metrics = await env.collect();
    expect(metrics.count(DURATION, rpc('Infer', GRPC_STATUS.OK))).toBe(6);
    expect(metrics.count(DURATION, rpc('Infer', GRPC_STATUS.INVALID_ARGUMENT))).toBe(1);
    expect(metrics.histogram(DURATION, rpc('Infer', GRPC_STATUS.OK))!.buckets.boundaries).toEqual([...BUCKETS.rpcCall]);
    expect(metrics.sum(REQUESTS, { [ATTR.queue]: 'grpc', [ATTR.model]: 'Infer' })).toBe(7);
  });
});
