/**
 * The trace a caller sent in its metadata (`traceparent`) reaches the
 * call's span where nothing else took it: a real grpc-js server on
 * 127.0.0.1:0, both ways of instrumenting it, failed and shed unary calls.
 */
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR } from '@infersignal/core';
import type { GrpcInstrumentationOptions } from '../src/index';
import {
  CALLER_TRACEPARENT,
  expectChildOfCaller,
  expectOwnRoot,
  requestSpansInMemory,
  useW3CPropagator,
} from '../../../test/support/traces';
import { inferenceImpl } from './inference-impl';
import { MODES, setupMonitor, startServer, until } from './helpers';

const open: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
});

/** A traced server (spans in memory, no baseline share) and unary Infer calls with given metadata. */
async function tracedServer(
  mode: (typeof MODES)[number],
  options: GrpcInstrumentationOptions = {},
  implementation = inferenceImpl(),
) {
  open.push({ close: useW3CPropagator() });
  const { tracerProvider, requestSpans } = requestSpansInMemory();
  const env = setupMonitor({ tracerProvider, traces: { baseline: 0 } });
  open.push(env);
  const started = await startServer(mode, env.monitor, implementation, { modelFromMethod: true, ...options });
  open.push(started);
  const call = (request: object, metadata: grpc.Metadata) =>
    new Promise<grpc.ServiceError | null>((resolve) => started.client.Infer(request, metadata, resolve));
  return { call, requestSpans };
}

function carrying(): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('traceparent', CALLER_TRACEPARENT);
  return metadata;
}

describe.each(MODES)('%s', (mode) => {
  it("a failed call's span continues the traceparent of its metadata; without one it is a root", async () => {
    const { call, requestSpans } = await tracedServer(mode);
    const failing = { model: 'm', prompt: 'x', simulateStatus: grpc.status.INTERNAL };
    expect((await call(failing, carrying()))?.code).toBe(grpc.status.INTERNAL);
    expect((await call(failing, new grpc.Metadata()))?.code).toBe(grpc.status.INTERNAL);
    await until(() => requestSpans().length === 2, 5000);
    const [carried, fresh] = requestSpans();
    expectChildOfCaller(carried);
    expectOwnRoot(fresh);
  });

  it("a shed call's span continues the traceparent of its metadata", async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const calls = { handled: 0 };
    const { call, requestSpans } = await tracedServer(
      mode,
      { shed: true, queue: { capacity: 1 } },
      inferenceImpl(calls, hold),
    );
    // The admitted call holds the only place until the second was answered.
    const first = call({ model: 'm', prompt: 'x' }, new grpc.Metadata());
    await until(() => calls.handled === 1, 5000);
    expect((await call({ model: 'm', prompt: 'x' }, carrying()))?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    release();
    expect(await first).toBeNull();
    const shed = requestSpans().filter((s) => s.attributes[ATTR.traceReason] === 'shed');
    expect(shed).toHaveLength(1);
    expectChildOfCaller(shed[0]);
  });
});
