/**
 * InferSignal in an app that runs its own NodeSDK (SDK 2.x line here; the
 * Node 24 / SDK 3.x leg runs the recipe app in test/otel-sdk3): the
 * instrumentation in `instrumentations: []`, the stock PrometheusExporter
 * with InferSignal's producer, instrumentation-runtime-node beside it. The
 * scrape comes from the exporter's own request handler on a loopback port 0.
 */
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import type { Instrumentation } from '@opentelemetry/instrumentation';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';
import { PeriodicExportingMetricReader, type MetricProducer } from '@opentelemetry/sdk-metrics';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { afterEach, describe, expect, it } from 'vitest';
import { METRICS } from '@infersignal/core';
import { InferSignalInstrumentation } from '@infersignal/node';
import { findBinary } from '../../rules/test/helpers/binaries';
import { parseExposition } from './helpers/exposition';
import { decodeMetricsRequest } from './helpers/otlp-decode';

const promtool = findBinary('promtool');
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
  // NodeSDK registers globals and never removes them; the next test's SDK must be able to.
  metrics.disable();
  trace.disable();
  context.disable();
  propagation.disable();
});

// Compile-time: the instrumentation is an OTel Instrumentation, its producers are the SDK's MetricProducer.
const typed = (i: InferSignalInstrumentation): [Instrumentation, MetricProducer[]] => [i, [i.metricProducer]];
void typed;

function sdkWith(readers: PrometheusExporter[] | PeriodicExportingMetricReader[], instrumentations: unknown[]) {
  const sdk = new NodeSDK({
    serviceName: 'byo-sdk',
    metricReaders: readers,
    // No span or log export here: without these NodeSDK would make OTLP exporters from the environment.
    spanProcessors: [],
    logRecordProcessors: [],
    instrumentations: instrumentations as Instrumentation[],
  });
  cleanup.push(() => sdk.shutdown());
  return sdk;
}

/** Serves the exporter's handler on 127.0.0.1:0 (the stock exporter cannot take port 0 itself). */
async function mount(exporter: PrometheusExporter): Promise<() => Promise<string>> {
  const server: Server = createServer((req, res) => exporter.getMetricsRequestHandler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => server.close(resolve)));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  return async () => (await fetch(url)).text();
}

function serve(instrumentation: InferSignalInstrumentation, n: number): void {
  const queue = instrumentation.monitor.queue('q', { capacity: 8, concurrency: 1 });
  for (let i = 0; i < n; i++) {
    const ticket = queue.enqueue('llama');
    ticket.start();
    ticket.end('completed');
  }
}

function typesOf(text: string, name: string): number {
  return text.split('\n').filter((line) => line.startsWith(`# TYPE ${name} `)).length;
}

/**
 * Makes a GC pause and scrapes until instrumentation-runtime-node reports
 * both the GC histogram and the loop delay (it needs 5 samples of its 10 ms
 * delay histogram, which a busy machine may take a while to give).
 */
async function scrapeWithRuntime(
  scrape: () => Promise<string>,
  also: (text: string) => boolean = () => true,
): Promise<string> {
  let garbage: unknown[] = [];
  for (let i = 0; i < 200_000; i++) garbage.push({ i, s: `x${i}` });
  garbage = [];
  void garbage;
  const deadline = Date.now() + 10_000;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const text = await scrape();
    if (/^v8js_gc_duration_count/m.test(text) && /^nodejs_eventloop_delay_p99/m.test(text) && also(text)) return text;
    if (Date.now() > deadline) throw new Error(`no runtime metrics in the scrape after 10 s:\n${text}`);
  }
}

function promtoolCheck(text: string): { code: number | null; output: string } {
  const run = spawnSync(promtool as string, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { code: run.status, output: run.stdout + run.stderr };
}

describe('InferSignalInstrumentation in an app’s own NodeSDK', () => {
  it('created before sdk.start(): the queue made at module load is exported, beside instrumentation-runtime-node, without duplicate families', async () => {
    const warnings: string[] = [];
    const infersignal = new InferSignalInstrumentation({
      detectorIntervalMs: 0,
      logger: { warn: (m) => warnings.push(m) },
    });
    cleanup.push(() => infersignal.monitor.close());
    const exporter = new PrometheusExporter({
      preventServerStart: true,
      metricProducers: [infersignal.metricProducer],
    });
    const sdk = sdkWith([exporter], [new RuntimeNodeInstrumentation(), infersignal]);
    serve(infersignal, 4); // before start: recorded into core's aggregates, gauges bound later
    expect(infersignal.bound).toBe(false);
    sdk.start();
    expect(infersignal.bound).toBe(true);
    serve(infersignal, 6);
    infersignal.monitor.internalError('byo-test', new Error('deliberate'));
    const text = await scrapeWithRuntime(await mount(exporter));

    const families = parseExposition(text);
    // The stock exporter's names: no unit suffix, `_total` on counters.
    expect(families.get('infersignal_queue_capacity')?.samples[0]?.value).toBe(8);
    expect(families.get('infersignal_queue_wait_duration')?.type).toBe('histogram');
    const requests = families.get('infersignal_requests_total')?.samples ?? [];
    expect(requests.reduce((sum, s) => sum + s.value, 0)).toBe(10);
    expect(families.get('infersignal_internal_errors_total')?.samples[0]?.value).toBe(1);
    // The runtime families come from instrumentation-runtime-node alone.
    expect(typesOf(text, 'nodejs_eventloop_delay_p99')).toBe(1);
    expect(typesOf(text, 'v8js_gc_duration')).toBe(1);
    for (const line of text.split('\n').filter((l) => l.startsWith('nodejs_eventloop_delay_p99{')))
      expect(line).toContain('otel_scope_name="@opentelemetry/instrumentation-runtime-node"');
    expect(warnings.filter((w) => !w.includes('deliberate'))).toEqual([]);
    if (promtool) expect(promtoolCheck(text)).toMatchObject({ code: 0 });
    else console.warn('[node] promtool not found: the scrape was not checked with promtool check metrics');
  });

  it.skipIf(!promtool)(
    'with runtimeMetrics: true beside instrumentation-runtime-node the scrape is invalid (why the default is false)',
    async () => {
      const infersignal = new InferSignalInstrumentation({
        detectorIntervalMs: 0,
        runtimeMetrics: true,
        thresholds: { eventLoop: { sampleIntervalMs: 20 } },
      });
      cleanup.push(() => infersignal.monitor.close());
      const exporter = new PrometheusExporter({
        preventServerStart: true,
        metricProducers: [infersignal.metricProducer],
      });
      sdkWith([exporter], [new RuntimeNodeInstrumentation(), infersignal]).start();
      const text = await scrapeWithRuntime(
        await mount(exporter),
        (scraped) => typesOf(scraped, 'nodejs_eventloop_delay_p99') === 2,
      );
      expect(typesOf(text, 'v8js_gc_duration')).toBe(2);
      const check = promtoolCheck(text);
      expect(check.code).not.toBe(0);
      expect(check.output).toMatch(
        /second (HELP|TYPE) line for metric name "(nodejs_eventloop_delay_\w+|v8js_gc_duration)"/,
      );
    },
  );

  it('created after sdk.start(): binds to the registered provider at once', async () => {
    const exporter = new PrometheusExporter({ preventServerStart: true });
    sdkWith([exporter], []).start();
    const infersignal = new InferSignalInstrumentation({ detectorIntervalMs: 0, exportMode: 'api' });
    cleanup.push(() => infersignal.monitor.close());
    expect(infersignal.bound).toBe(true);
    serve(infersignal, 3);
    const families = parseExposition(await (await mount(exporter))());
    expect(families.get('infersignal_queue_capacity')?.samples[0]?.value).toBe(8);
    expect(families.get('infersignal_queue_wait_duration')?.samples.find((s) => s.name.endsWith('_count'))?.value).toBe(
      3,
    );
  });

  it('warns once when the SDK collects the gauges but the producer is on no reader', async () => {
    const warnings: string[] = [];
    const infersignal = new InferSignalInstrumentation({
      detectorIntervalMs: 0,
      logger: { warn: (m) => warnings.push(m) },
    });
    cleanup.push(() => infersignal.monitor.close());
    const exporter = new PrometheusExporter({ preventServerStart: true });
    sdkWith([exporter], [infersignal]).start();
    serve(infersignal, 2);
    const scrape = await mount(exporter);
    for (let i = 0; i < 2; i++) await scrape();
    expect(warnings).toEqual([]);
    for (let i = 0; i < 3; i++) await scrape();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/metricProducers: \[infersignal\.metricProducer\]/);
  });

  it('metricProducerFor(exporter) follows a delta OTLP reader: the second export holds only the new requests', async () => {
    const bodies: Buffer[] = [];
    const receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(Buffer.concat(chunks));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise((resolve) => receiver.close(resolve)));
    const infersignal = new InferSignalInstrumentation({ detectorIntervalMs: 0 });
    cleanup.push(() => infersignal.monitor.close());
    const exporter = new OTLPMetricExporter({
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/metrics`,
      temporalityPreference: 0, // AggregationTemporalityPreference.DELTA
    });
    const reader = new PeriodicExportingMetricReader({
      exporter,
      exportIntervalMillis: 60_000,
      metricProducers: [infersignal.metricProducerFor(exporter)],
    });
    sdkWith([reader], [infersignal]).start();
    serve(infersignal, 5);
    await reader.forceFlush();
    serve(infersignal, 2);
    await reader.forceFlush();
    const requests = bodies.map((body) => {
      const metric = decodeMetricsRequest(body)
        .resourceMetrics.flatMap((rm: any) => rm.scopeMetrics)
        .flatMap((sm: any) => sm.metrics)
        .find((m: any) => m.name === METRICS.requests.name);
      return {
        temporality: metric.sum.aggregationTemporality,
        total: metric.sum.dataPoints.reduce((sum: number, p: any) => sum + Number(p.asDouble ?? p.asInt), 0),
      };
    });
    expect(requests).toEqual([
      { temporality: 1, total: 5 },
      { temporality: 1, total: 2 },
    ]);
  });
});
