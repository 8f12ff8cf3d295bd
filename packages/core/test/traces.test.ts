import { SpanStatusCode, type TextMapGetter, TraceFlags, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ATTR,
  InferSignalConfigError,
  type MonitorOptions,
  QueueFullError,
  type QueueTracker,
  SPANS,
} from '../src/index';
import { CALLER, useW3CPropagator } from '../../../test/support/traces';
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
    const t = setup({ tracerProvider, traces: 'all' });
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
      [ATTR.traceReason]: 'all',
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
    expect(timedOut!.attributes).toEqual({
      [ATTR.queue]: 'q',
      [ATTR.model]: 'm',
      [ATTR.outcome]: 'timeout',
      [ATTR.traceReason]: 'failed',
    });
    expect(timedOut!.status.code).toBe(SpanStatusCode.UNSET);
    expect(failed!.attributes[ATTR.outcome]).toBe('error');
    expect(failed!.attributes[ATTR.queueWait]).toBeGreaterThanOrEqual(0);
    expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('run() attributes land on the request span', async () => {
    const { exporter, tracerProvider } = inMemoryTracing();
    const t = setup({ tracerProvider, traces: 'all' });
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

  it('a load span carries what the loader resolved to (resultAttributes); a throwing one is counted, not thrown', async () => {
    const { exporter, tracerProvider } = inMemoryTracing();
    const t = setup({ tracerProvider, traces: 'all' });
    const loaded = await t.monitor.modelLoad('m', 'load', () => ({ device: 'cuda' }), {
      attributes: { 'x.requested': 'auto' },
      resultAttributes: (result) => ({ 'x.device': (result as { device: string }).device }),
    });
    expect(loaded).toEqual({ device: 'cuda' });
    const again = await t.monitor.modelLoad('m', 'reload', () => 7, {
      resultAttributes: () => {
        throw new Error('reader broke');
      },
    });
    expect(again).toBe(7);
    const spans = exporter.getFinishedSpans().filter((s) => s.name === SPANS.modelLoad);
    expect(
      spans.map((s) => [s.attributes['x.requested'], s.attributes['x.device'], s.attributes[ATTR.outcome]]),
    ).toEqual([
      ['auto', 'cuda', 'success'],
      [undefined, undefined, 'success'],
    ]);
    expect(t.monitor.snapshot().internalErrors).toBe(1);
    await t.close();
  });
});

/** Epoch milliseconds, so the SDK reads the injected clock's values as wall-clock times. */
const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const ms = (time: [number, number]) => time[0] * 1000 + time[1] / 1e6;

/** A monitor on a manual clock whose request spans land in memory; `options` are its `traces` options. */
function outlierSetup(options: Exclude<MonitorOptions['traces'], boolean | string | undefined> = {}) {
  const { exporter, tracerProvider } = inMemoryTracing();
  const t = setup({ tracerProvider, traces: { baseline: 0, ...options } });
  t.set(T0);
  const requests = () => exporter.getFinishedSpans().filter((s) => s.name === SPANS.request);
  return { t, exporter, tracerProvider, requests };
}

/** `n` requests of `waitMs` queued + `runMs` running, one after the other. */
function normal(t: ReturnType<typeof setup>, queue: QueueTracker, n: number, runMs = 100, waitMs = 0): void {
  for (let i = 0; i < n; i++) {
    const ticket = queue.enqueue('m');
    t.advance(waitMs);
    ticket.start();
    t.advance(runMs);
    ticket.end('completed');
  }
}

describe("outlier traces (traces: true / 'outliers', the default)", () => {
  it('normal requests get no span; one above the live tail of its queue gets exactly one, complete', () => {
    const { t, tracerProvider, requests } = outlierSetup();
    const queue = t.monitor.queue('gen');
    normal(t, queue, 200);
    expect(requests()).toHaveLength(0);

    const app = tracerProvider.getTracer('app');
    let parentId = '';
    const arrival = t.now();
    const ticket = app.startActiveSpan('http', (http) => {
      parentId = http.spanContext().spanId;
      http.end();
      return queue.enqueue('m');
    });
    // It ends outside the app's span: the parent is the context captured at arrival.
    expect(trace.getSpan(context.active())).toBeUndefined();
    t.advance(30);
    ticket.start();
    t.advance(1_000);
    ticket.end('completed');
    normal(t, queue, 20);

    const spans = requests();
    expect(spans).toHaveLength(1);
    const [slow] = spans;
    expect(ms(slow!.startTime)).toBe(arrival);
    expect(ms(slow!.endTime)).toBe(arrival + 1_030);
    expect(slow!.parentSpanContext?.spanId).toBe(parentId);
    expect(slow!.attributes).toEqual({
      [ATTR.queue]: 'gen',
      [ATTR.model]: 'm',
      [ATTR.outcome]: 'completed',
      [ATTR.queueWait]: 0.03,
      [ATTR.traceReason]: 'slow',
    });
    expect(slow!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('the tail is per queue and live: what is normal on a slow queue is slow on a fast one', () => {
    const { t, requests } = outlierSetup();
    const fast = t.monitor.queue('fast');
    const slowQueue = t.monitor.queue('slow');
    normal(t, fast, 150, 10);
    normal(t, slowQueue, 150, 500);
    expect(requests()).toHaveLength(0);
    normal(t, fast, 1, 500);
    expect(requests().map((s) => s.attributes[ATTR.queue])).toEqual(['fast']);
    // The slow queue's new normal: after the tail moves up, 600 ms requests stop being outliers.
    normal(t, slowQueue, 1, 600);
    expect(requests()).toHaveLength(2);
    normal(t, slowQueue, 1_100, 600);
    const before = requests().length;
    normal(t, slowQueue, 50, 600);
    expect(requests()).toHaveLength(before);
  });

  it('the tail is recomputed after 64 new requests, not at every request of a quiet queue', () => {
    const { t, requests } = outlierSetup();
    const queue = t.monitor.queue('quiet');
    // 10 ms apart, the tail is recomputed at every 64th (before it is judged): the 129th (the first with 100
    // samples) set it, and the 193rd, the first 300 ms request below, recomputes it from these 192 alone.
    normal(t, queue, 192, 10);
    // Each ends 300 ms after the one before, past the 250 ms limit: only the count holds the tail back, so all
    // 64 are judged against the 10 ms tail (recomputed at every request, it would reach 300 ms within 3).
    normal(t, queue, 64, 300);
    expect(requests()).toHaveLength(64);
    // The next one recomputes it: 64 of the last 256 took 300 ms, so its 99th percentile does, and they are normal.
    normal(t, queue, 5, 300);
    expect(requests()).toHaveLength(64);
  });

  it('slowSeconds: a request above it is slow from the first one, before any tail exists', () => {
    const { t, requests } = outlierSetup({ slowSeconds: 0.5 });
    const queue = t.monitor.queue('q');
    normal(t, queue, 1, 400);
    expect(requests()).toHaveLength(0);
    normal(t, queue, 1, 200, 400);
    expect(requests()).toHaveLength(1);
    expect(requests()[0]!.attributes[ATTR.traceReason]).toBe('slow');
    expect(ms(requests()[0]!.endTime) - ms(requests()[0]!.startTime)).toBe(600);
  });

  it('a failed request: one span with its times, status ERROR, reason failed', async () => {
    const { t, requests } = outlierSetup();
    const queue = t.monitor.queue('q');
    normal(t, queue, 150);
    const arrival = t.now();
    await expect(
      queue.run(
        () => {
          t.advance(70);
          throw new Error('boom');
        },
        { model: 'm' },
      ),
    ).rejects.toThrow('boom');
    const spans = requests();
    expect(spans).toHaveLength(1);
    expect(ms(spans[0]!.startTime)).toBe(arrival);
    expect(ms(spans[0]!.endTime)).toBe(arrival + 70);
    expect(spans[0]!.attributes).toEqual({
      [ATTR.queue]: 'q',
      [ATTR.model]: 'm',
      [ATTR.outcome]: 'error',
      [ATTR.queueWait]: 0,
      [ATTR.traceReason]: 'failed',
    });
    expect(spans[0]!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('a request cancelled while it waited: one span, arrival → abort, no queue wait, reason cancelled', async () => {
    const { t, tracerProvider, requests } = outlierSetup();
    const queue = t.monitor.queue('q', { concurrency: 1 });
    let release!: () => void;
    const running = queue.run(() => new Promise<void>((r) => (release = r)), { model: 'm' });
    const controller = new AbortController();
    let parentId = '';
    let waiting!: Promise<unknown>;
    const arrival = t.now();
    tracerProvider.getTracer('app').startActiveSpan('http', (http) => {
      parentId = http.spanContext().spanId;
      waiting = queue.run(() => 1, { model: 'm', signal: controller.signal });
      http.end();
    });
    t.advance(250);
    controller.abort();
    await expect(waiting).rejects.toThrow();
    release();
    await running;
    const spans = requests();
    expect(spans).toHaveLength(1);
    expect(ms(spans[0]!.startTime)).toBe(arrival);
    expect(ms(spans[0]!.endTime)).toBe(arrival + 250);
    expect(spans[0]!.parentSpanContext?.spanId).toBe(parentId);
    expect(spans[0]!.attributes).toEqual({
      [ATTR.queue]: 'q',
      [ATTR.model]: 'm',
      [ATTR.outcome]: 'cancelled',
      [ATTR.traceReason]: 'cancelled',
    });
    expect(spans[0]!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('a shed request (queue.reject at arrival, and run() on a full queue): one span each, reason shed', async () => {
    const { t, tracerProvider, requests } = outlierSetup();
    const queue = t.monitor.queue('q', { concurrency: 1, maxWaiting: 0 });
    let parentId = '';
    const at = t.now();
    tracerProvider.getTracer('app').startActiveSpan('http', (http) => {
      parentId = http.spanContext().spanId;
      queue.reject('m');
      http.end();
    });
    let release!: () => void;
    const running = queue.run(() => new Promise<void>((r) => (release = r)), { model: 'm' });
    t.advance(5);
    await expect(queue.run(() => 1, { model: 'm' })).rejects.toThrow(QueueFullError);
    release();
    await running;

    const spans = requests();
    expect(spans).toHaveLength(2);
    const [rejected, full] = spans;
    expect(ms(rejected!.startTime)).toBe(at);
    expect(ms(rejected!.endTime)).toBe(at);
    expect(rejected!.parentSpanContext?.spanId).toBe(parentId);
    expect(rejected!.attributes).toEqual({
      [ATTR.queue]: 'q',
      [ATTR.model]: 'm',
      [ATTR.outcome]: 'rejected',
      [ATTR.traceReason]: 'shed',
    });
    expect(ms(full!.startTime)).toBe(at + 5);
    expect(full!.attributes[ATTR.traceReason]).toBe('shed');
    expect(full!.parentSpanContext).toBeUndefined();
  });

  it('the baseline share: exactly the requests the injected random source draws below it, and none at 0', () => {
    // 1 draw in 100 is below 0.01: 1000 normal requests keep exactly 10.
    let draw = 0;
    const random = () => (draw++ % 100) / 100;
    const { t, requests } = outlierSetup({ baseline: 0.01, random });
    normal(t, t.monitor.queue('q'), 1_000);
    expect(requests()).toHaveLength(10);
    expect(requests().every((s) => s.attributes[ATTR.traceReason] === 'baseline')).toBe(true);
    // The draw is made for normal requests only (an outlier is kept without one).
    expect(draw).toBe(1_000);

    const none = outlierSetup({ baseline: 0, random });
    normal(none.t, none.t.monitor.queue('q'), 1_000);
    expect(none.requests()).toHaveLength(0);
  });

  it("the default baseline is 1 %, drawn from a seeded source; 'all' keeps every request", () => {
    // A seeded generator (mulberry32): its own draws say how many of 5000 fall below 0.01.
    const seeded = (seed: number) => () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
      return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
    };
    const reference = seeded(42);
    let expected = 0;
    for (let i = 0; i < 5_000; i++) if (reference() < 0.01) expected++;
    expect(expected).toBeGreaterThan(0);
    const { exporter, tracerProvider } = inMemoryTracing();
    const t = setup({ tracerProvider, traces: { random: seeded(42) } });
    t.set(T0);
    normal(t, t.monitor.queue('q'), 5_000);
    expect(exporter.getFinishedSpans()).toHaveLength(expected);

    // With 'all', the baseline share is not drawn: every span's reason is 'all', even where the draw would hit.
    const all = outlierSetup({ keep: 'all', baseline: 0.5, random: () => 0 });
    normal(all.t, all.t.monitor.queue('q'), 300);
    expect(all.requests()).toHaveLength(300);
    expect(new Set(all.requests().map((s) => s.attributes[ATTR.traceReason]))).toEqual(new Set(['all']));
  });

  it('an unsampled parent (ParentBased sampler): dropped by default; with unsampledParent link, a linked root span', () => {
    const unsampled = trace.setSpanContext(context.active(), {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.NONE,
      isRemote: true,
    });
    const failOne = (t: ReturnType<typeof setup>) => {
      const ticket = context.with(unsampled, () => t.monitor.queue('q').enqueue('m'));
      t.advance(20);
      ticket.end('error');
    };

    const dropped = outlierSetup();
    failOne(dropped.t);
    expect(dropped.exporter.getFinishedSpans()).toHaveLength(0);

    const linked = outlierSetup({ unsampledParent: 'link' });
    failOne(linked.t);
    const spans = linked.requests();
    expect(spans).toHaveLength(1);
    expect(spans[0]!.parentSpanContext).toBeUndefined();
    expect(spans[0]!.spanContext().traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
    expect(spans[0]!.links.map((l) => l.context.spanId)).toEqual(['b7ad6b7169203331']);
    expect(ms(spans[0]!.endTime) - ms(spans[0]!.startTime)).toBe(20);

    // A sampled parent stays the parent with link on.
    const sampled = outlierSetup({ unsampledParent: 'link' });
    const ticket = context.with(
      trace.setSpanContext(context.active(), {
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
        traceFlags: TraceFlags.SAMPLED,
        isRemote: true,
      }),
      () => sampled.t.monitor.queue('q').enqueue('m'),
    );
    ticket.end('cancelled');
    expect(sampled.requests()[0]!.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(sampled.requests()[0]!.links).toHaveLength(0);
  });

  it("the caller's trace from the request's carrier (traceparent), where no span was active at arrival; read only for a span", () => {
    const undo = useW3CPropagator();
    try {
      const { traceId, spanId: callerSpan } = CALLER;
      const headers = (flags: string) => ({ traceparent: `00-${traceId}-${callerSpan}-${flags}`, host: 'x' });
      // A getter that counts its reads: a request that makes no span never reads its carrier.
      let reads = 0;
      const counting: TextMapGetter<Record<string, string>> = {
        keys: (carrier) => Object.keys(carrier),
        get: (carrier, key) => {
          reads++;
          return carrier[key];
        },
      };
      const { t, tracerProvider, requests } = outlierSetup();
      const queue = t.monitor.queue('q');
      for (let i = 0; i < 50; i++) {
        const ticket = queue.enqueue('m');
        ticket.setTraceCarrier(headers('01'), counting);
        t.advance(10);
        ticket.end('completed');
      }
      expect(requests()).toHaveLength(0);
      expect(reads).toBe(0);

      // Failed, with the caller's sampled traceparent: a child in the caller's trace.
      const failed = queue.enqueue('m');
      failed.setTraceCarrier(headers('01'), counting);
      t.advance(20);
      failed.end('error');
      expect(reads).toBeGreaterThan(0);
      let [span] = requests();
      expect(span!.spanContext().traceId).toBe(traceId);
      expect(span!.parentSpanContext).toMatchObject({ spanId: callerSpan, isRemote: true });

      // A span active at arrival (an HTTP instrumentation's, say) stays the parent: the carrier is not read.
      reads = 0;
      let activeId = '';
      const underSpan = tracerProvider.getTracer('app').startActiveSpan('server', (server) => {
        activeId = server.spanContext().spanId;
        server.end();
        return queue.enqueue('m');
      });
      underSpan.setTraceCarrier(headers('01'), counting);
      underSpan.end('cancelled');
      span = requests().at(-1)!;
      expect(span!.parentSpanContext?.spanId).toBe(activeId);
      expect(span!.spanContext().traceId).not.toBe(traceId);
      expect(reads).toBe(0);

      // The caller decided not to sample (flags 00): dropped by the ParentBased sampler, as any child of it.
      const before = requests().length;
      const unsampled = queue.enqueue('m');
      unsampled.setTraceCarrier(headers('00'));
      unsampled.end('error');
      expect(requests()).toHaveLength(before);

      // A plain object of headers needs no getter.
      const plain = queue.enqueue('m');
      plain.setTraceCarrier(headers('01'));
      plain.end('timeout');
      expect(requests().at(-1)!.parentSpanContext?.spanId).toBe(callerSpan);

      // Shed at arrival (no ticket): the carrier comes with the rejection.
      queue.reject('m', headers('01'), counting);
      const shed = requests().at(-1)!;
      expect(shed.attributes[ATTR.traceReason]).toBe('shed');
      expect(shed.spanContext().traceId).toBe(traceId);
      expect(shed.parentSpanContext?.spanId).toBe(callerSpan);
    } finally {
      undo();
    }
  });

  it("with unsampledParent 'link', a carried unsampled trace gets a root span linked to it", () => {
    const undo = useW3CPropagator();
    try {
      const { traceId, spanId: callerSpan } = CALLER;
      const linked = outlierSetup({ unsampledParent: 'link' });
      const ticket = linked.t.monitor.queue('q').enqueue('m');
      ticket.setTraceCarrier({ traceparent: `00-${traceId}-${callerSpan}-00` });
      ticket.end('error');
      const [span] = linked.requests();
      expect(span!.parentSpanContext).toBeUndefined();
      expect(span!.spanContext().traceId).not.toBe(traceId);
      expect(span!.links.map((l) => l.context.traceId)).toEqual([traceId]);
    } finally {
      undo();
    }
  });

  it('invalid trace options fail at creation naming the field', () => {
    const field = (traces: unknown) => {
      try {
        setup({ traces: traces as MonitorOptions['traces'] });
      } catch (error) {
        expect(error).toBeInstanceOf(InferSignalConfigError);
        return (error as InferSignalConfigError).field;
      }
      return 'no error';
    };
    expect(field('some')).toBe('traces');
    expect(field(3)).toBe('traces');
    expect(field({ keep: 'every' })).toBe('traces.keep');
    expect(field({ baseline: 2 })).toBe('traces.baseline');
    expect(field({ baseline: -0.1 })).toBe('traces.baseline');
    expect(field({ slowSeconds: 0 })).toBe('traces.slowSeconds');
    expect(field({ tailQuantile: 1 })).toBe('traces.tailQuantile');
    expect(field({ unsampledParent: 'keep' })).toBe('traces.unsampledParent');
    expect(field({ random: 0.5 })).toBe('traces.random');
    expect(field({ sample: 1 })).toBe('traces.sample');
  });
});
