/**
 * Request spans in memory, and the trace a caller sends with a request
 * (`traceparent`), for the tests of the adapters that carry it to core.
 */
import { propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { expect } from 'vitest';
import { SPANS } from '@infersignal/core';

/** The caller's trace and span, as its `traceparent` names them. */
export const CALLER = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };

/** A sampled `traceparent` from the caller. */
export const CALLER_TRACEPARENT = `00-${CALLER.traceId}-${CALLER.spanId}-01`;

/** A tracer provider exporting each span as it ends, and the `infersignal.request` spans so far. */
export function requestSpansInMemory() {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const requestSpans = () => exporter.getFinishedSpans().filter((s) => s.name === SPANS.request);
  return { tracerProvider, requestSpans };
}

/** Registers the W3C trace-context propagator as the global one; returns its undo. */
export function useW3CPropagator(): () => void {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return () => propagation.disable();
}

/** `span` continues the caller's trace: its trace id, the caller's span as its remote parent. */
export function expectChildOfCaller(span: ReadableSpan | undefined): void {
  expect(span!.spanContext().traceId).toBe(CALLER.traceId);
  expect(span!.parentSpanContext).toMatchObject({ spanId: CALLER.spanId, isRemote: true });
}

/** `span` is a root of a trace of its own, not the caller's. */
export function expectOwnRoot(span: ReadableSpan | undefined): void {
  expect(span!.parentSpanContext).toBeUndefined();
  expect(span!.spanContext().traceId).not.toBe(CALLER.traceId);
}
