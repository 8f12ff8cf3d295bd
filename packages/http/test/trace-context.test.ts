/**
 * The trace a caller sent (`traceparent`) reaches a tracked request's span
 * when nothing else took it (no HTTP instrumentation): a real node:http
 * server on 127.0.0.1:0, plain and re-parented responses (Fastify's and
 * Express's kinds), a failed request each, the W3C propagator registered.
 */
import { createServer, request as httpRequest, ServerResponse, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, SPANS } from '@infersignal/core';
import { createHttpTracking } from '@infersignal/http';
import { until } from '../../../test/support/async';
import { testMonitor } from '../../../test/support/monitor';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

/** A server whose every request fails (500): each one is an outlier, so each gets its span. */
async function failingServer(reparent: boolean) {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const t = testMonitor({ tracerProvider, traces: { baseline: 0 } });
  cleanup.push(() => t.close());
  const tracking = createHttpTracking(t.monitor, { model: 'tiny' }, { source: 'test' });
  const proto = Object.create(ServerResponse.prototype) as ServerResponse;
  const server = createServer((_req: IncomingMessage, res) => {
    if (reparent) Object.setPrototypeOf(res, proto);
    tracking.track('tiny', '/infer', res);
    res.writeHead(500).end('no');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  const send = (headers: Record<string, string>) =>
    new Promise<void>((resolve, reject) =>
      httpRequest({ host: '127.0.0.1', port, path: '/infer', headers }, (res) => res.resume().on('end', resolve))
        .on('error', reject)
        .end(),
    );
  const spans = () => exporter.getFinishedSpans().filter((s) => s.name === SPANS.request);
  return { send, spans };
}

describe("a caller's trace context", () => {
  for (const reparent of [false, true]) {
    it(`a failed request's span continues the traceparent it came with (${reparent ? 're-parented' : 'plain'} response)`, async () => {
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
      cleanup.push(() => propagation.disable());
      const { send, spans } = await failingServer(reparent);
      await send({ traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` });
      await send({});
      await until(() => spans().length === 2, 5000, 'two request spans');
      const [carried, fresh] = spans();
      expect(carried!.spanContext().traceId).toBe(TRACE_ID);
      expect(carried!.parentSpanContext).toMatchObject({ spanId: CALLER_SPAN, isRemote: true });
      // Without a traceparent: a root span of its own trace.
      expect(fresh!.parentSpanContext).toBeUndefined();
      expect(fresh!.spanContext().traceId).not.toBe(TRACE_ID);
    });
  }

  it('without a global propagator the header is not read: a root span', async () => {
    const { send, spans } = await failingServer(false);
    await send({ traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` });
    await until(() => spans().length === 1, 5000, 'one request span');
    expect(spans()[0]!.parentSpanContext).toBeUndefined();
    expect(spans()[0]!.spanContext().traceId).not.toBe(TRACE_ID);
  });

  it("a shed request's span (503 at arrival) continues the traceparent it came with", async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    cleanup.push(() => propagation.disable());
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const t = testMonitor({ tracerProvider, traces: { baseline: 0 } });
    cleanup.push(() => t.close());
    const tracking = createHttpTracking(
      t.monitor,
      { queue: { name: 'tight', capacity: 1 }, shed: true, model: 'tiny' },
      { source: 'test' },
    );
    const held: ServerResponse[] = [];
    const server = createServer((_req, res) => {
      const retryAfter = tracking.shed('tiny', res);
      if (retryAfter !== undefined) {
        res.writeHead(503, { 'retry-after': retryAfter }).end();
        return;
      }
      tracking.track('tiny', '/infer', res);
      held.push(res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as AddressInfo).port;
    const send = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) =>
        httpRequest({ host: '127.0.0.1', port, path: '/infer', headers }, (res) =>
          res.resume().on('end', () => resolve(res.statusCode!)),
        )
          .on('error', reject)
          .end(),
      );
    // The one place of the queue taken and held: the next request finds it full and is shed.
    const first = send({});
    await until(() => held.length === 1, 5000, 'the first request held');
    expect(await send({ traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` })).toBe(503);
    held[0]!.end('ok');
    expect(await first).toBe(200);
    const shed = exporter
      .getFinishedSpans()
      .filter((s) => s.name === SPANS.request && s.attributes[ATTR.traceReason] === 'shed');
    expect(shed).toHaveLength(1);
    expect(shed[0]!.spanContext().traceId).toBe(TRACE_ID);
    expect(shed[0]!.parentSpanContext).toMatchObject({ spanId: CALLER_SPAN, isRemote: true });
  });
});
