import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttp2Server, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { trace } from '@opentelemetry/api';
import { ATTR, METRICS, SPANS } from '@infersignal/core';
import { start, type InferSignal } from '@infersignal/node';
import { attrs, decodeMetricsRequest, decodeTraceRequest } from './helpers/otlp-decode';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** An OTLP/HTTP receiver on loopback that answers every export with an empty (successful) protobuf response. */
async function otlpReceiver(): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

function metricsByName(received: Received[]) {
  const out = new Map<string, any>();
  for (const r of received.filter((x) => x.path === '/v1/metrics')) {
    const req = decodeMetricsRequest(r.body);
    for (const rm of req.resourceMetrics) {
      for (const sm of rm.scopeMetrics)
        for (const m of sm.metrics)
          out.set(m.name, { ...m, resource: attrs(rm.resource?.attributes), scope: sm.scope?.name });
    }
  }
  return out;
}

function spans(received: Received[]) {
  const out: any[] = [];
  for (const r of received.filter((x) => x.path === '/v1/traces')) {
    for (const rs of decodeTraceRequest(r.body).resourceSpans) {
      for (const ss of rs.scopeSpans)
        for (const s of ss.spans)
          out.push({ ...s, attributes: attrs(s.attributes), resource: attrs(rs.resource?.attributes) });
    }
  }
  return out;
}

describe('OTLP/HTTP protobuf export', () => {
  it('sends metrics and request → InferSignal request spans that decode with the OTLP schema', async () => {
    const receiver = await otlpReceiver();
    cleanup.push(() => new Promise((r) => receiver.server.close(r)));
    const s: InferSignal = start({
      serviceName: 'otlp-test',
      prometheus: false,
      // A generous export timeout: on a machine under load an export to loopback can take seconds.
      otlp: {
        endpoint: receiver.url,
        headers: { authorization: 'Bearer t0ken' },
        intervalMs: 60_000,
        timeoutMs: 10_000,
      },
      detectorIntervalMs: 0,
      // A span per request, passed through to core (the default keeps outliers only).
      traces: 'all',
      // The app below makes its own span and awaits inside it: nesting needs a context manager.
      contextManager: true,
    });
    cleanup.push(() => s.shutdown());
    expect(s.tracerProvider).toBeDefined();

    // The app's request span is active at arrival: core's spans become its children.
    const queue = s.monitor.queue('main', { capacity: 4 });
    const tracer = trace.getTracer('app');
    await tracer.startActiveSpan('request', async (span) => {
      const ticket = queue.enqueue('llama');
      await new Promise((r) => setTimeout(r, 5));
      ticket.start();
      await new Promise((r) => setTimeout(r, 5));
      ticket.end('completed');
      span.end();
    });
    for (let i = 0; i < 9; i++) {
      const ticket = queue.enqueue('llama');
      ticket.start();
      ticket.end(i === 0 ? 'error' : 'completed');
    }

    await s.shutdown(); // flushes the final export
    expect(receiver.received.length).toBeGreaterThanOrEqual(2);
    for (const r of receiver.received) {
      expect(r.headers['content-type']).toBe('application/x-protobuf');
      expect(r.headers.authorization).toBe('Bearer t0ken');
    }

    const metrics = metricsByName(receiver.received);
    const wait = metrics.get(METRICS.queueWait.name);
    expect(wait.unit).toBe('s');
    expect(wait.scope).toBe('@infersignal/core');
    expect(wait.resource['service.name']).toBe('otlp-test');
    const point = wait.histogram.dataPoints[0];
    expect(attrs(point.attributes)).toEqual({ [ATTR.queue]: 'main', [ATTR.model]: 'llama' });
    expect(Number(point.count)).toBe(10);
    expect(point.explicitBounds[0]).toBe(0.001);
    expect(point.explicitBounds.at(-1)).toBe(60);
    expect(point.bucketCounts.reduce((a: number, b: number) => a + b, 0)).toBe(10);
    expect(point.sum).toBeGreaterThanOrEqual(0.004); // the one request that waited ~5 ms

    const requests = metrics.get(METRICS.requests.name);
    expect(requests.sum.isMonotonic).toBe(true);
    expect(requests.sum.aggregationTemporality).toBe(2); // CUMULATIVE
    const byOutcome = Object.fromEntries(
      requests.sum.dataPoints.map((p: any) => [attrs(p.attributes)[ATTR.outcome], p.asDouble ?? p.asInt]),
    );
    expect(byOutcome).toEqual({ completed: 9, error: 1 });
    expect(
      metrics.get(METRICS.queueCapacity.name).gauge.dataPoints[0].asDouble ??
        metrics.get(METRICS.queueCapacity.name).gauge.dataPoints[0].asInt,
    ).toBe(4);
    // The export-failure counter is exported too, at zero.
    const dropped = metrics.get(METRICS.exportDropped.name);
    expect(dropped.sum.dataPoints.map((p: any) => p.asDouble ?? p.asInt)).toEqual([0, 0]);

    const all = spans(receiver.received);
    const request = all.find((x) => x.name === 'request');
    expect(request).toBeDefined();
    expect(request.resource['service.name']).toBe('otlp-test');
    const children = all.filter((x) => x.traceId === request.traceId && x.parentSpanId === request.spanId);
    expect(children.map((x) => x.name)).toEqual([SPANS.request]);
    expect(children[0].attributes[ATTR.model]).toBe('llama');
    expect(children[0].attributes[ATTR.queue]).toBe('main');
    expect(children[0].attributes[ATTR.outcome]).toBe('completed');
    expect(children[0].attributes[ATTR.queueWait]).toBeGreaterThanOrEqual(0);
    // Each of the 10 requests produced one span.
    expect(all.filter((x) => x.name === SPANS.request)).toHaveLength(10);
    const failed = all.filter((x) => x.name === SPANS.request && x.attributes[ATTR.outcome] === 'error');
    expect(failed).toHaveLength(1);
    expect(failed[0].status?.code).toBe(2); // STATUS_CODE_ERROR
    expect(s.exportStats()).toEqual({ metricsDropped: 0, tracesDropped: 0 });
  });

  it('honours OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME without options', async () => {
    const receiver = await otlpReceiver();
    cleanup.push(() => new Promise((r) => receiver.server.close(r)));
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_SERVICE_NAME = 'from-env';
    process.env.OTEL_EXPORTER_OTLP_HEADERS = 'x-api-key=abc%20def';
    let s: InferSignal;
    try {
      s = start({ prometheus: false, registerGlobals: false, detectorIntervalMs: 0 });
    } finally {
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      delete process.env.OTEL_SERVICE_NAME;
      delete process.env.OTEL_EXPORTER_OTLP_HEADERS;
    }
    const ticket = s.monitor.queue('q').enqueue('m');
    ticket.start();
    ticket.end('completed');
    await s.shutdown();
    const metricsExports = receiver.received.filter((r) => r.path === '/v1/metrics');
    expect(metricsExports.length).toBeGreaterThanOrEqual(1);
    expect(metricsExports[0].headers['x-api-key']).toBe('abc def');
    const metrics = metricsByName(receiver.received);
    expect(metrics.get(METRICS.requests.name).resource['service.name']).toBe('from-env');
  });
});

describe('OTLP temporality', () => {
  it('with a delta preference every exported sum and histogram is delta, InferSignal’s producer series included', async () => {
    const receiver = await otlpReceiver();
    cleanup.push(() => new Promise((r) => receiver.server.close(r)));
    process.env.OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE = 'delta';
    let s: InferSignal;
    try {
      s = start({
        prometheus: false,
        registerGlobals: false,
        traces: false,
        detectorIntervalMs: 0,
        logger: { warn() {} },
        otlp: { endpoint: receiver.url, intervalMs: 60_000, timeoutMs: 2000 },
      });
    } finally {
      delete process.env.OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE;
    }
    const queue = s.monitor.queue('q', { capacity: 8 });
    const serve = (n: number) => {
      for (let i = 0; i < n; i++) {
        const ticket = queue.enqueue('m');
        ticket.start();
        ticket.end('completed');
      }
    };
    serve(10);
    s.monitor.internalError('test', new Error('counted once'));
    await s.meterProvider.forceFlush();
    serve(3);
    await s.shutdown();

    const exports = receiver.received
      .filter((r) => r.path === '/v1/metrics')
      .map((r) => decodeMetricsRequest(r.body).resourceMetrics.flatMap((rm: any) => rm.scopeMetrics));
    expect(exports.length).toBe(2);
    const temporalities = new Set<number>();
    let summed = 0;
    for (const scopes of exports)
      for (const scope of scopes)
        for (const metric of scope.metrics) {
          const data = metric.sum ?? metric.histogram;
          if (!data) continue;
          summed++;
          temporalities.add(data.aggregationTemporality);
        }
    expect(summed).toBeGreaterThanOrEqual(6);
    expect([...temporalities]).toEqual([1]); // AGGREGATION_TEMPORALITY_DELTA
    const find = (i: number, name: string) =>
      exports[i].flatMap((scope: any) => scope.metrics).find((metric: any) => metric.name === name);
    const total = (metric: any) =>
      (metric?.sum?.dataPoints ?? []).reduce((sum: number, p: any) => sum + Number(p.asDouble ?? p.asInt ?? 0), 0);
    expect(total(find(0, METRICS.requests.name))).toBe(10);
    expect(total(find(1, METRICS.requests.name))).toBe(3);
    expect(Number(find(1, METRICS.queueWait.name).histogram.dataPoints[0].count)).toBe(3);
    // The SDK's own counter beside it: counted once, then no change (a zero delta or no point).
    expect(total(find(0, METRICS.internalErrors.name))).toBe(1);
    expect(total(find(1, METRICS.internalErrors.name))).toBe(0);
  });
});

describe('OTLP/gRPC export', () => {
  it('sends metrics as a gRPC Export call with the headers as metadata', async () => {
    const calls: { path: string; headers: Record<string, unknown>; body: Buffer }[] = [];
    const server: Http2Server = createHttp2Server();
    server.on('stream', (stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        calls.push({ path: String(headers[':path']), headers, body: Buffer.concat(chunks) });
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(Buffer.from([0, 0, 0, 0, 0])); // one empty, uncompressed response message
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanup.push(() => new Promise((r) => server.close(r)));
    const port = (server.address() as AddressInfo).port;

    const s = start({
      serviceName: 'grpc-test',
      prometheus: false,
      traces: false,
      registerGlobals: false,
      otlp: {
        protocol: 'grpc',
        endpoint: `http://127.0.0.1:${port}`,
        headers: { 'x-tenant': 'acme' },
        intervalMs: 60_000,
        timeoutMs: 3000,
      },
      detectorIntervalMs: 0,
    });
    const ticket = s.monitor.queue('q').enqueue('m');
    ticket.start();
    ticket.end('completed');
    await s.shutdown();

    const call = calls.find((c) => c.path === '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export');
    expect(call, JSON.stringify(calls.map((c) => c.path))).toBeDefined();
    expect(call!.headers['x-tenant']).toBe('acme');
    // gRPC framing: 1 byte compressed flag, 4 bytes big-endian length, then the protobuf message.
    expect(call!.body[0]).toBe(0);
    const length = call!.body.readUInt32BE(1);
    const request = decodeMetricsRequest(call!.body.subarray(5, 5 + length));
    const names = request.resourceMetrics.flatMap((rm: any) =>
      rm.scopeMetrics.flatMap((sm: any) => sm.metrics.map((m: any) => m.name)),
    );
    expect(names).toContain(METRICS.requests.name);
    expect(s.exportStats().metricsDropped).toBe(0);
  });
});
