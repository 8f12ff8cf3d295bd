/**
 * `@infersignal/node` on the SDK 3.x line, in process (this package's
 * vitest config resolves every OpenTelemetry import to SDK 3): `start()`
 * with its Prometheus endpoint on an OS-chosen port and OTLP with a delta
 * preference, and the plug-in in NodeSDK 0.301 with its producer on the
 * stock exporter.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import type { Instrumentation } from '@opentelemetry/instrumentation';
import { MeterProvider, type MetricProducer } from '@opentelemetry/sdk-metrics';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { afterEach, describe, expect, it } from 'vitest';
import { METRICS } from '@infersignal/core';
import { InferSignalInstrumentation, start } from '@infersignal/node';
import { decodeMetricsRequest } from '../../packages/node/test/helpers/otlp-decode';

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
  metrics.disable();
  trace.disable();
  context.disable();
  propagation.disable();
});

// Compile-time, against the SDK 3 types: an Instrumentation whose producer is the SDK's MetricProducer.
const typed = (i: InferSignalInstrumentation): [Instrumentation, MetricProducer[]] => [i, [i.metricProducer]];
void typed;

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function serve(monitor: InferSignalInstrumentation['monitor'], n: number): void {
  const queue = monitor.queue('q', { capacity: 8, concurrency: 1 });
  for (let i = 0; i < n; i++) {
    const ticket = queue.enqueue('llama');
    ticket.start();
    ticket.end('completed');
  }
}

describe('@infersignal/node on OpenTelemetry SDK 3.x', () => {
  it('start(): Collector-style names on a port the OS picks; OTLP with a delta preference exports delta series', async () => {
    const bodies: Buffer[] = [];
    const receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/v1/metrics') bodies.push(Buffer.concat(chunks));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end();
      });
    });
    const endpoint = await listen(receiver);
    const s = start({
      serviceName: 'sdk3',
      prometheus: { port: 0 },
      otlp: { endpoint, temporality: 'delta', intervalMs: 60_000, timeoutMs: 2000 },
      traces: false,
      registerGlobals: false,
      detectorIntervalMs: 0,
      logger: { warn() {} },
    });
    cleanup.push(() => s.shutdown());
    expect(s.meterProvider).toBeInstanceOf(MeterProvider);
    const address = (await s.prometheus?.ready) ?? undefined;
    expect(address?.port).toBeGreaterThan(0);
    serve(s.monitor, 4);
    const scrape = await (await fetch(address?.url as string)).text();
    expect(scrape).toMatch(/^target_info\{.*telemetry_sdk_version="3\.\d+\.\d+"/m);
    expect(scrape).toMatch(/^infersignal_queue_wait_duration_seconds_count\{[^}]*\} 4$/m);
    expect(scrape).toMatch(/^infersignal_requests_total\{[^}]*infersignal_outcome="completed"[^}]*\} 4$/m);

    await s.meterProvider.forceFlush();
    serve(s.monitor, 3);
    await s.meterProvider.forceFlush();
    const exported = bodies.map((body) =>
      decodeMetricsRequest(body)
        .resourceMetrics.flatMap((rm: any) => rm.scopeMetrics)
        .flatMap((sm: any) => sm.metrics),
    );
    expect(exported).toHaveLength(2);
    const temporalities = new Set(
      exported
        .flat()
        .flatMap((m: any) => ((m.sum ?? m.histogram) ? [(m.sum ?? m.histogram).aggregationTemporality] : [])),
    );
    expect([...temporalities]).toEqual([1]); // DELTA only
    const requests = (i: number) =>
      exported[i]
        .find((m: any) => m.name === METRICS.requests.name)
        .sum.dataPoints.reduce((sum: number, p: any) => sum + Number(p.asDouble ?? p.asInt), 0);
    expect([requests(0), requests(1)]).toEqual([4, 3]);
  });

  it('the plug-in in NodeSDK 0.301: made before sdk.start(), its producer on the stock exporter', async () => {
    const warnings: string[] = [];
    const infersignal = new InferSignalInstrumentation({
      detectorIntervalMs: 0,
      logger: { warn: (m) => warnings.push(m) },
    });
    cleanup.push(() => infersignal.monitor.close());
    serve(infersignal.monitor, 2);
    const exporter = new PrometheusExporter({
      preventServerStart: true,
      metricProducers: [infersignal.metricProducer],
    });
    const sdk = new NodeSDK({
      serviceName: 'sdk3-plugin',
      metricReaders: [exporter],
      spanProcessors: [],
      logRecordProcessors: [],
      instrumentations: [infersignal],
    });
    sdk.start();
    cleanup.push(() => sdk.shutdown());
    expect(infersignal.bound).toBe(true);
    serve(infersignal.monitor, 5);
    const url = await listen(createServer((req, res) => exporter.getMetricsRequestHandler(req, res)));
    const scrape = await (await fetch(url)).text();
    expect(scrape).toMatch(/^infersignal_queue_capacity\{[^}]*\} 8$/m);
    expect(scrape).toMatch(/^infersignal_queue_wait_duration_count\{[^}]*\} 7$/m);
    expect(warnings).toEqual([]);
  });
});
