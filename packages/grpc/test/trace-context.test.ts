/**
 * The trace a caller sent in its metadata (`traceparent`) reaches the
 * call's span where nothing else took it: a real grpc-js server on
 * 127.0.0.1:0, both ways of instrumenting it, a failing unary call.
 */
import * as grpc from '@grpc/grpc-js';
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, SPANS } from '@infersignal/core';
import { inferenceImpl } from './inference-impl';
import { MODES, setupMonitor, startServer, until } from './helpers';

const open: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
  propagation.disable();
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

describe.each(MODES)('%s', (mode) => {
  it("a failed call's span continues the traceparent of its metadata; without one it is a root", async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const env = setupMonitor({ tracerProvider, traces: { baseline: 0 } });
    open.push(env);
    const started = await startServer(mode, env.monitor, inferenceImpl(), { modelFromMethod: true });
    open.push(started);
    const fail = (metadata: grpc.Metadata) =>
      new Promise<grpc.ServiceError | null>((resolve) =>
        started.client.Infer({ model: 'm', prompt: 'x', simulateStatus: grpc.status.INTERNAL }, metadata, resolve),
      );
    const carrying = new grpc.Metadata();
    carrying.set('traceparent', `00-${TRACE_ID}-${CALLER_SPAN}-01`);
    expect((await fail(carrying))?.code).toBe(grpc.status.INTERNAL);
    expect((await fail(new grpc.Metadata()))?.code).toBe(grpc.status.INTERNAL);
    const spans = () => exporter.getFinishedSpans().filter((s) => s.name === SPANS.request);
    await until(() => spans().length === 2, 5000);
    const [carried, fresh] = spans();
    expect(carried!.spanContext().traceId).toBe(TRACE_ID);
    expect(carried!.parentSpanContext).toMatchObject({ spanId: CALLER_SPAN, isRemote: true });
    expect(fresh!.parentSpanContext).toBeUndefined();
    expect(fresh!.spanContext().traceId).not.toBe(TRACE_ID);
  });

  it("a shed call's span continues the traceparent of its metadata", async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const env = setupMonitor({ tracerProvider, traces: { baseline: 0 } });
    open.push(env);
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const calls = { handled: 0 };
    const started = await startServer(mode, env.monitor, inferenceImpl(calls, hold), {
      modelFromMethod: true,
      shed: true,
      queue: { capacity: 1 },
    });
    open.push(started);
    const call = (metadata: grpc.Metadata) =>
      new Promise<grpc.ServiceError | null>((resolve) =>
        started.client.Infer({ model: 'm', prompt: 'x' }, metadata, resolve),
      );
    // The admitted call holds the only place until the second was answered.
    const first = call(new grpc.Metadata());
    await until(() => calls.handled === 1, 5000);
    const carrying = new grpc.Metadata();
    carrying.set('traceparent', `00-${TRACE_ID}-${CALLER_SPAN}-01`);
    expect((await call(carrying))?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    release();
    expect(await first).toBeNull();
    const shed = exporter
      .getFinishedSpans()
      .filter((s) => s.name === SPANS.request && s.attributes[ATTR.traceReason] === 'shed');
    expect(shed).toHaveLength(1);
    expect(shed[0]!.spanContext().traceId).toBe(TRACE_ID);
    expect(shed[0]!.parentSpanContext).toMatchObject({ spanId: CALLER_SPAN, isRemote: true });
  });
});
