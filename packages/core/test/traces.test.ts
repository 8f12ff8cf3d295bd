import { SpanStatusCode, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTR, SPANS } from '../src/index';
import { setup } from './helpers';

const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  context.disable();
});

/** A tracer provider whose finished spans are kept in memory, exported as each ends. */
function inMemoryTracing() {
  const exporter = new InMemorySpanExporter();
  return { exporter, tracerProvider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }) };
}

describe('traces', () => {
  it('one request span, child of the span active at arrival, with model, queue wait and outcome, no payload', async () => {
    const { exporter, tracerProvider } = inMemoryTracing();
    const t = setup({ tracerProvider, traces: true });
    const queue = t.monitor.queue('gen');
    const tracer = tracerProvider.getTracer('app');
    await tracer.startActiveSpan('request', async (request) => {
      const ticket = queue.enqueue('llama');
      t.advance(250);
      ticket.start();
      t.advance(40);
      ticket.end();
      request.end();
    });
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name).sort()).toEqual(['request', SPANS.request].sort());
    const request = spans.find((s) => s.name === 'request')!;
    const span = spans.find((s) => s.name === SPANS.request)!;
    expect(span.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(span.attributes).toEqual({
      [ATTR.queue]: 'gen',
      [ATTR.model]: 'llama',
      [ATTR.queueWait]: 0.25,
      [ATTR.outcome]: 'completed',
    });
    expect(trace.getSpan(context.active())).toBeUndefined();
  });

  it('a request that never started has no queue wait on its span, and an error sets the status', async () => {
    const { exporter, tracerProvider } = inMemoryTracing();
    const t = setup({ tracerProvider, traces: true });
    const queue = t.monitor.queue('q');
    queue.enqueue('m').end('timeout');
    await expect(queue.run(() => Promise.reject(new Error('boom')), { model: 'm' })).rejects.toThrow('boom');
    const [timedOut, failed] = exporter.getFinishedSpans();
    expect(timedOut!.attributes).toEqual({ [ATTR.queue]: 'q', [ATTR.model]: 'm', [ATTR.outcome]: 'timeout' });
    expect(timedOut!.status.code).toBe(SpanStatusCode.UNSET);
    expect(failed!.attributes[ATTR.outcome]).toBe('error');
    expect(failed!.attributes[ATTR.queueWait]).toBeGreaterThanOrEqual(0);
    expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('run() attributes land on the request span', async () => {
    const { exporter, tracerProvider } = inMemoryTracing();
    const t = setup({ tracerProvider, traces: true });
    await t.monitor.queue('q').run(() => 1, { model: 'm', attributes: { 'infersignal.batch.size': 8 } });
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.attributes['infersignal.batch.size'])).toEqual([8]);
  });

  it('traces: false creates no spans', async () => {
    const { exporter, tracerProvider } = inMemoryTracing();
    const t = setup({ tracerProvider, traces: false });
    await t.monitor.queue('q').run(() => 1);
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });
});
