/**
 * What start() registers as the OTel globals with traces on: the tracer
 * provider and the W3C propagators always, a context manager only when asked
 * for. A request span continues its caller's `traceparent` either way.
 */
import { context, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { SPANS } from '@infersignal/core';
import { type InferSignal, start, type StartOptions } from '@infersignal/node';
import { CALLER_TRACEPARENT, expectChildOfCaller } from '../../../test/support/traces';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
  // A refused registration leaves the earlier global in place; the next test starts clean.
  context.disable();
  trace.disable();
  propagation.disable();
});

function startTracing(options: StartOptions = {}) {
  const exporter = new InMemorySpanExporter();
  const warnings: string[] = [];
  const s: InferSignal = start({
    serviceName: 'globals-test',
    prometheus: false,
    otlp: false,
    detectorIntervalMs: 0,
    traces: 'all',
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    logger: { warn: (m) => warnings.push(m) },
    ...options,
  });
  cleanup.push(() => s.shutdown());
  return { s, exporter, warnings };
}

/** The span active inside `context.with()` a context holding `span`, after an await. */
async function activeAcrossAwait(name: string) {
  const outer = trace.getTracer('app').startSpan(name);
  const seen = await context.with(trace.setSpan(ROOT_CONTEXT, outer), async () => {
    await new Promise((r) => setTimeout(r, 1));
    return trace.getActiveSpan();
  });
  outer.end();
  return { outer, seen };
}

describe('start() with traces on', () => {
  it('registers the tracer provider and the W3C propagators, and no context manager by default', async () => {
    const { s, exporter } = startTracing();
    expect(propagation.fields()).toEqual(expect.arrayContaining(['traceparent', 'tracestate', 'baggage']));
    const { seen } = await activeAcrossAwait('app');
    // The app's span went to start()'s provider, but nothing made it active: no context manager.
    expect(exporter.getFinishedSpans().map((x) => x.name)).toEqual(['app']);
    expect(seen).toBeUndefined();

    // A request span still continues the trace its caller sent.
    const ticket = s.monitor.queue('main', { capacity: 2 }).enqueue('llama');
    ticket.setTraceCarrier({ traceparent: CALLER_TRACEPARENT });
    ticket.start();
    ticket.end('completed');
    const request = exporter.getFinishedSpans().find((x) => x.name === SPANS.request);
    expectChildOfCaller(request);
  });

  it('registers an AsyncLocalStorage context manager with contextManager: true: the app’s spans nest', async () => {
    const { s, exporter } = startTracing({ contextManager: true });
    const { outer, seen } = await activeAcrossAwait('app');
    expect(seen?.spanContext().spanId).toBe(outer.spanContext().spanId);

    // A request arriving inside the app's active span is its child; the span active at arrival wins over the carrier.
    const queue = s.monitor.queue('main', { capacity: 2 });
    const parent = trace.getTracer('app').startSpan('handler');
    context.with(trace.setSpan(ROOT_CONTEXT, parent), () => {
      const ticket = queue.enqueue('llama');
      ticket.setTraceCarrier({ traceparent: CALLER_TRACEPARENT });
      ticket.start();
      ticket.end('completed');
    });
    parent.end();
    const request = exporter.getFinishedSpans().find((x) => x.name === SPANS.request);
    expect(request?.spanContext().traceId).toBe(parent.spanContext().traceId);
    expect(request?.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
  });

  it('leaves a context manager registered first in place, and says so once', () => {
    const earlier = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(earlier);
    const { warnings } = startTracing({ contextManager: true });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/global OTel ContextManager was already registered/);
    // The earlier manager still carries the context.
    const span = trace.wrapSpanContext({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 });
    expect(context.with(trace.setSpan(ROOT_CONTEXT, span), () => trace.getActiveSpan())).toBe(span);
  });

  it('registers nothing global with registerGlobals: false, contextManager or not', async () => {
    startTracing({ registerGlobals: false, contextManager: true });
    expect(propagation.fields()).toEqual([]);
    expect((await activeAcrossAwait('app')).seen).toBeUndefined();
  });
});
