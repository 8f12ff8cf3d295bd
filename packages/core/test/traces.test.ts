import { context, trace } from '@opentelemetry/api';
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

describe('traces', () => {
  it('queue and inference spans are children of the active request span, with model and outcome, no payload', async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const t = setup({ tracerProvider, traces: true });
    const queue = t.monitor.queue('gen');
    const tracer = tracerProvider.getTracer('app');
    await tracer.startActiveSpan('request', async (request) => {
      await queue.run(async () => 'tokens', { model: 'llama' });
      request.end();
    });
    const spans = exporter.getFinishedSpans();
    const request = spans.find((s) => s.name === 'request')!;
    const queued = spans.find((s) => s.name === SPANS.queue)!;
    const inference = spans.find((s) => s.name === SPANS.inference)!;
    expect(queued.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(inference.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(inference.attributes).toEqual({ [ATTR.queue]: 'gen', [ATTR.model]: 'llama', [ATTR.outcome]: 'completed' });
    expect(trace.getSpan(context.active())).toBeUndefined();
  });

  it('run() attributes land on both spans, set before start', async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const t = setup({ tracerProvider, traces: true });
    await t.monitor.queue('q').run(() => 1, { model: 'm', attributes: { 'infersignal.batch.size': 8 } });
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.attributes['infersignal.batch.size'])).toEqual([8, 8]);
  });

  it('traces: false creates no spans', async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const t = setup({ tracerProvider, traces: false });
    await t.monitor.queue('q').run(() => 1);
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });
});
