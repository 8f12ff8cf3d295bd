import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HISTOGRAM_BUCKETS, METRICS, prometheusName, type InstrumentSpec } from '@infersignal/core';
import { start, type InferSignal } from '@infersignal/node';
import { collectorPrometheusName, type PrometheusKind } from '../src/prometheus-naming';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';
import { findBinary } from '../../rules/test/helpers/binaries';
import { parseExposition, samples } from './helpers/exposition';

const promtool = findBinary('promtool');

const running: InferSignal[] = [];
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.shutdown()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

function startTracked(options: Parameters<typeof start>[0]): InferSignal {
  const s = start({ registerGlobals: false, detectorIntervalMs: 0, logger: { warn: () => {} }, ...options });
  running.push(s);
  return s;
}

async function scrape(url: string): Promise<{ body: string; contentType: string | null }> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return { body: await res.text(), contentType: res.headers.get('content-type') };
}

/** Known traffic through the core monitor, with an injected clock (milliseconds). */
async function driveTraffic(s: InferSignal, clock: { now: number }): Promise<void> {
  const { monitor } = s;
  const queue = monitor.queue('main', { capacity: 10 });
  for (const waitMs of [5, 50, 300, 2000]) {
    const ticket = queue.enqueue('llama');
    clock.now += waitMs;
    ticket.start();
    clock.now += 100;
    ticket.end('completed');
  }
  const cancelled = queue.enqueue('llama');
  cancelled.start();
  cancelled.end('cancelled');
  // Left waiting: the gauges show it.
  queue.enqueue('llama');

  const stream = monitor.stream('llama');
  clock.now += 40;
  stream.firstToken();
  stream.token(10);
  clock.now += 100;
  stream.end('completed');

  await monitor.modelLoad('llama', 'load', () => {
    clock.now += 2000;
  });
  await monitor.modelLoad('llama', 'reload', () => {
    clock.now += 7000; // 3.5× the baseline: one spike
  });

  let allocated = 100;
  const memory = monitor.deviceMemory({ allocated: () => allocated, reserved: () => 400, intervalMs: 0 });
  memory.sample();
  allocated = 120;
  clock.now += 1000;
  memory.sample();

  monitor.internalError('test', new Error('boom'));
  monitor.tick();
}

const KIND: Record<InstrumentSpec['type'], PrometheusKind> = {
  counter: 'counter',
  updowncounter: 'updowncounter',
  gauge: 'gauge',
  histogram: 'histogram',
};

describe('Prometheus naming', () => {
  it('names every core instrument exactly as core prometheusName() documents (Collector style)', () => {
    const specs = Object.values(METRICS) as InstrumentSpec[];
    expect(specs.length).toBeGreaterThan(20);
    for (const spec of specs) {
      expect(collectorPrometheusName(spec.name, spec.unit, KIND[spec.type]), spec.name).toBe(prometheusName(spec));
    }
  });

  it('applies the Collector unit rules', () => {
    expect(collectorPrometheusName('a.latency', 'ms', 'histogram')).toBe('a_latency_milliseconds');
    expect(collectorPrometheusName('a.size', 'By', 'gauge')).toBe('a_size_bytes');
    expect(collectorPrometheusName('a.rate', 'By/s', 'gauge')).toBe('a_rate_bytes_per_second');
    expect(collectorPrometheusName('a.hits', '{hit}', 'counter')).toBe('a_hits_total');
    expect(collectorPrometheusName('a.hits.total', '1', 'counter')).toBe('a_hits_total');
    expect(collectorPrometheusName('a.share', '1', 'gauge')).toBe('a_share_ratio');
    expect(collectorPrometheusName('a.share', '1', 'updowncounter')).toBe('a_share');
    expect(collectorPrometheusName('a.wait.seconds', 's', 'histogram')).toBe('a_wait_seconds');
    expect(collectorPrometheusName('2xx', '', 'gauge')).toBe('_2xx');
  });
});

describe('Prometheus endpoint', () => {
  it('serves core metrics on loopback with Collector-style names, inference buckets and exact values', async () => {
    const clock = { now: 1_000_000 };
    const s = startTracked({
      serviceName: 'prom-test',
      // The scope labels tell core's families from others'; every instrument, the opt-in ones too.
      prometheus: { port: 0, withoutScopeInfo: false },
      optInMetrics: ['gen_ai.server.request.duration', 'infersignal.inference.duration'],
      clock: () => clock.now,
    });
    const address = await s.prometheus!.ready;
    expect(address).not.toBeNull();
    // Default bind address: loopback, asserted on the bound socket.
    expect(address!.host).toBe('127.0.0.1');
    expect(address!.url).toBe(`http://127.0.0.1:${address!.port}/metrics`);

    await driveTraffic(s, clock);
    const { body, contentType } = await scrape(address!.url);
    expect(contentType).toContain('text/plain');
    const families = parseExposition(body);

    // Every core instrument that has data is exported under prometheusName(spec), and nothing else from core is.
    const specs = Object.values(METRICS) as InstrumentSpec[];
    const expectedNames = new Map(specs.map((spec) => [prometheusName(spec), spec]));
    const coreFamilies = [...families.values()].filter((f) =>
      f.samples.some((x) => x.labels.otel_scope_name === '@infersignal/core'),
    );
    for (const f of coreFamilies) expect(expectedNames.has(f.name), `unexpected family ${f.name}`).toBe(true);
    const exported = new Set(coreFamilies.map((f) => f.name));
    const mustHaveData: (keyof typeof METRICS)[] = [
      'queueWait',
      'inferenceDuration',
      'requestDuration',
      'requests',
      'queueWaiting',
      'queueInFlight',
      'queueCapacity',
      'queueOccupancy',
      'backpressureLevel',
      'modelLoadDuration',
      'modelLoadBaseline',
      'modelLoadSpikes',
      'timeToFirstToken',
      'timePerOutputToken',
      'streams',
      'streamTokens',
      'memoryAllocated',
      'memoryReserved',
      'memoryFragmentation',
      'internalErrors',
    ];
    for (const key of mustHaveData)
      expect(exported, `${key} → ${prometheusName(METRICS[key])}`).toContain(prometheusName(METRICS[key]));
    for (const f of coreFamilies) {
      const spec = expectedNames.get(f.name)!;
      expect(f.type).toBe(spec.type === 'updowncounter' ? 'gauge' : spec.type);
      // Text format 0.0.4 has no UNIT line: the unit is the name's suffix.
      expect(f.unit).toBeUndefined();
    }

    // Queue wait: 4 tickets waited 5, 50, 300, 2000 ms; one started at once.
    const wait = 'infersignal_queue_wait_duration_seconds';
    const labels = { infersignal_queue_name: 'main', gen_ai_request_model: 'llama' };
    expect(samples(families, wait, `${wait}_count`, labels)[0].value).toBe(5);
    expect(samples(families, wait, `${wait}_sum`, labels)[0].value).toBeCloseTo(2.355, 9);
    const buckets = samples(families, wait, `${wait}_bucket`, labels);
    expect(buckets.map((b) => b.labels.le)).toEqual([...HISTOGRAM_BUCKETS[METRICS.queueWait.name].map(String), '+Inf']);
    const cumulative = Object.fromEntries(buckets.map((b) => [b.labels.le, b.value]));
    expect(cumulative['0.001']).toBe(1); // the 0 ms wait
    expect(cumulative['0.005']).toBe(2); // upper bounds are inclusive
    expect(cumulative['0.025']).toBe(2);
    expect(cumulative['0.05']).toBe(3);
    expect(cumulative['0.3']).toBe(4);
    expect(cumulative['1']).toBe(4);
    expect(cumulative['2.5']).toBe(5);
    expect(cumulative['60']).toBe(5);
    expect(cumulative['+Inf']).toBe(5);

    // Inference: 4 × 100 ms completed, 1 × 0 ms cancelled; duration buckets.
    const inf = 'infersignal_inference_duration_seconds';
    expect(samples(families, inf, `${inf}_count`, { ...labels, infersignal_outcome: 'completed' })[0].value).toBe(4);
    expect(samples(families, inf, `${inf}_sum`, { ...labels, infersignal_outcome: 'completed' })[0].value).toBeCloseTo(
      0.4,
      9,
    );
    expect(
      samples(families, inf, `${inf}_bucket`, { ...labels, infersignal_outcome: 'completed' }).map((b) => b.labels.le),
    ).toEqual([...HISTOGRAM_BUCKETS[METRICS.inferenceDuration.name].map(String), '+Inf']);
    const requests = 'infersignal_requests_total';
    expect(samples(families, requests, requests, { ...labels, infersignal_outcome: 'completed' })[0].value).toBe(4);
    expect(samples(families, requests, requests, { ...labels, infersignal_outcome: 'cancelled' })[0].value).toBe(1);

    // Gauges: one waiting of capacity 10.
    const q = { infersignal_queue_name: 'main' };
    expect(samples(families, 'infersignal_queue_waiting', 'infersignal_queue_waiting', q)[0].value).toBe(1);
    expect(samples(families, 'infersignal_queue_in_flight', 'infersignal_queue_in_flight', q)[0].value).toBe(0);
    expect(samples(families, 'infersignal_queue_capacity', 'infersignal_queue_capacity', q)[0].value).toBe(10);
    expect(
      samples(families, 'infersignal_queue_occupancy_ratio', 'infersignal_queue_occupancy_ratio', q)[0].value,
    ).toBeCloseTo(0.1, 9);

    // Streams: TTFT 40 ms on the 1 ms–60 s buckets, 10 tokens.
    const ttft = 'gen_ai_server_time_to_first_token_seconds';
    expect(samples(families, ttft, `${ttft}_sum`, { gen_ai_request_model: 'llama' })[0].value).toBeCloseTo(0.04, 9);
    expect(
      samples(families, ttft, `${ttft}_bucket`, { gen_ai_request_model: 'llama' }).map((b) => b.labels.le),
    ).toEqual([...HISTOGRAM_BUCKETS[METRICS.timeToFirstToken.name].map(String), '+Inf']);
    expect(samples(families, 'infersignal_stream_tokens_total', 'infersignal_stream_tokens_total')[0].value).toBe(10);

    // Model loads: 2 s then 7 s, buckets up to 10 min, one spike.
    const load = 'infersignal_model_load_duration_seconds';
    const loadBuckets = samples(families, load, `${load}_bucket`, { infersignal_model_load_kind: 'reload' });
    expect(loadBuckets.map((b) => b.labels.le)).toEqual([
      ...HISTOGRAM_BUCKETS[METRICS.modelLoadDuration.name].map(String),
      '+Inf',
    ]);
    expect(loadBuckets.at(-2)!.labels.le).toBe('600');
    expect(samples(families, load, `${load}_sum`, { infersignal_model_load_kind: 'reload' })[0].value).toBeCloseTo(
      7,
      9,
    );
    // The reload spiked; the load kind's series exists at 0 from the model's first label.
    const spikes = samples(families, 'infersignal_model_load_spikes_total', 'infersignal_model_load_spikes_total');
    expect(Object.fromEntries(spikes.map((s) => [s.labels.infersignal_model_load_kind, s.value]))).toEqual({
      load: 0,
      reload: 1,
    });

    // Device memory in bytes; fragmentation 1 − 120/400.
    expect(
      samples(families, 'infersignal_device_memory_reserved_bytes', 'infersignal_device_memory_reserved_bytes')[0]
        .value,
    ).toBe(400);
    expect(
      samples(
        families,
        'infersignal_device_memory_fragmentation_ratio',
        'infersignal_device_memory_fragmentation_ratio',
      )[0].value,
    ).toBeCloseTo(0.7, 9);

    // Resource: service.name on target_info.
    expect(samples(families, 'target_info', 'target_info')[0].labels.service_name).toBe('prom-test');
  });

  it('answers 404 off the path and serves a custom path', async () => {
    const s = startTracked({ serviceName: 'p', prometheus: { port: 0, path: '/custom' } });
    const address = (await s.prometheus!.ready)!;
    expect((await fetch(`http://127.0.0.1:${address.port}/metrics`)).status).toBe(404);
    expect((await fetch(address.url)).status).toBe(200);
  });

  it('honours OTEL_EXPORTER_PROMETHEUS_HOST/PORT when no option is set; port 0 is a port the OS picks', async () => {
    process.env.OTEL_EXPORTER_PROMETHEUS_HOST = '127.0.0.1';
    process.env.OTEL_EXPORTER_PROMETHEUS_PORT = '0';
    try {
      const s = startTracked({ serviceName: 'p' });
      const address = (await s.prometheus!.ready)!;
      // Linux hands out ephemeral ports from 32768 up: never the 9464 default.
      expect(address.port).toBeGreaterThan(0);
      expect(address.port).not.toBe(9464);
      expect(s.prometheus!.address).toEqual(address);
      expect(address.host).toBe('127.0.0.1');
      expect((await fetch(address.url)).status).toBe(200);
    } finally {
      delete process.env.OTEL_EXPORTER_PROMETHEUS_HOST;
      delete process.env.OTEL_EXPORTER_PROMETHEUS_PORT;
    }
  });

  it('leaves a runtime family to instrumentation-runtime-node when both export it: one family each', async () => {
    const s = startTracked({
      serviceName: 'p',
      prometheus: { port: 0, withoutScopeInfo: false },
      thresholds: { eventLoop: { sampleIntervalMs: 20 } },
    });
    const runtime = new RuntimeNodeInstrumentation();
    runtime.setMeterProvider(s.meterProvider);
    runtime.enable();
    try {
      const address = (await s.prometheus!.ready)!;
      let garbage: unknown[] = [];
      for (let i = 0; i < 200_000; i++) garbage.push({ i, s: `x${i}` });
      garbage = [];
      void garbage;
      let body = '';
      const deadline = Date.now() + 10_000;
      // Both exporters have data: runtime-node's delay (5 samples of its histogram) and a GC pause.
      const fromRuntimeNode = (family: string) =>
        new RegExp(`^${family}\\{[^}]*otel_scope_name="@opentelemetry/instrumentation-runtime-node"`, 'm');
      while (
        !fromRuntimeNode('nodejs_eventloop_delay_p99_seconds').test(body) ||
        !fromRuntimeNode('v8js_gc_duration_seconds_count').test(body)
      ) {
        if (Date.now() > deadline) throw new Error(`no runtime metrics after 10 s:\n${body}`);
        await new Promise((r) => setTimeout(r, 50));
        body = (await scrape(address.url)).body;
      }
      for (const family of [
        'nodejs_eventloop_delay_p99_seconds',
        'nodejs_eventloop_utilization_ratio',
        'v8js_gc_duration_seconds',
      ]) {
        expect(
          body.split('\n').filter((line) => line.startsWith(`# TYPE ${family} `)),
          family,
        ).toHaveLength(1);
        expect(body).not.toMatch(new RegExp(`^${family}[_a-z]*\\{[^}]*otel_scope_name="@infersignal/core"`, 'm'));
      }
      // The whole exposition is one Prometheus accepts (start() writes it itself, not exporter-prometheus).
      if (promtool) {
        const check = spawnSync(promtool, ['check', 'metrics'], { input: body, encoding: 'utf8' });
        expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
      } else console.warn('[node] promtool not found: the exposition was not checked with promtool check metrics');
    } finally {
      runtime.disable();
    }
  });

  it('reports a port already in use once, naming the port, and keeps running', async () => {
    const squatter = createServer();
    servers.push(squatter);
    await new Promise<void>((r) => squatter.listen(0, '127.0.0.1', r));
    const port = (squatter.address() as AddressInfo).port;
    const messages: string[] = [];
    const logger = {
      warn: (m: string) => messages.push(`warn ${m}`),
      error: (m: string) => messages.push(`error ${m}`),
    };
    const clock = { now: 0 };
    const s = startTracked({ serviceName: 'p', prometheus: { port }, logger, clock: () => clock.now });
    expect(await s.prometheus!.ready).toBeNull();
    expect(s.prometheus!.address).toBeNull();
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/^error /);
    expect(messages[0]).toContain(`127.0.0.1:${port}`);
    expect(messages[0]).toContain(`port ${port} is already in use`);
    // The monitor still works.
    const ticket = s.monitor.queue('q').enqueue('m');
    ticket.start();
    ticket.end('completed');
    expect(s.monitor.snapshot().queues.q.completed).toBe(1);
  });
});

describe('mountable handler', () => {
  it('serves /metrics from the app’s own server without a second port', async () => {
    const s = startTracked({ serviceName: 'mounted', prometheus: { mount: true } });
    expect(s.prometheus).toBeUndefined();
    expect(typeof s.metricsHandler).toBe('function');
    const app = createServer((req, res) => {
      if (req.url === '/metrics') return s.metricsHandler!(req, res);
      res.end('app');
    });
    servers.push(app);
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    const port = (app.address() as AddressInfo).port;

    const ticket = s.monitor.queue('main').enqueue('m');
    ticket.start();
    ticket.end('completed');
    const { body } = await scrape(`http://127.0.0.1:${port}/metrics`);
    const families = parseExposition(body);
    const requests = 'infersignal_requests_total';
    expect(samples(families, requests, requests, { infersignal_outcome: 'completed' })[0].value).toBe(1);
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('app');
  });
});

describe('prometheus.withoutScopeInfo', () => {
  it('leaves the otel_scope_* labels off every series, the same samples otherwise, and a smaller scrape', async () => {
    const bodies: string[] = [];
    for (const withoutScopeInfo of [false, true]) {
      const s = startTracked({ serviceName: 'scopeless', prometheus: { mount: true, withoutScopeInfo } });
      const app = createServer((req, res) => s.metricsHandler!(req, res));
      servers.push(app);
      await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
      const ticket = s.monitor.queue('main').enqueue('m');
      ticket.start();
      ticket.end('completed');
      bodies.push((await scrape(`http://127.0.0.1:${(app.address() as AddressInfo).port}/metrics`)).body);
    }
    const [scoped, scopeless] = bodies as [string, string];
    expect(scoped).toMatch(/otel_scope_name="@infersignal\/core"/);
    expect(scopeless).not.toMatch(/otel_scope_/);
    const requests = 'infersignal_requests_total';
    const where = { infersignal_outcome: 'completed' };
    expect(samples(parseExposition(scopeless), requests, requests, where)[0].value).toBe(1);
    // The request counter's lines are the scoped scrape's without their scope labels.
    const strip = (line: string) => line.replace(/,?otel_scope_(name|version)="[^"]*"/g, '').replace('{,', '{');
    const lines = (body: string, name = '') =>
      body.split('\n').filter((l) => l !== '' && !l.startsWith('#') && l.startsWith(name));
    expect(lines(scopeless, requests)).toEqual(lines(scoped, requests).map(strip));
    const perLine = (body: string) => Buffer.byteLength(lines(body).join('\n')) / lines(body).length;
    expect(perLine(scopeless)).toBeLessThan(0.8 * perLine(scoped));
  });

  it('refuses a value that is not a boolean, naming the field', () => {
    expect(() => start({ prometheus: { withoutScopeInfo: 'yes' as unknown as boolean } })).toThrow(
      /prometheus\.withoutScopeInfo/,
    );
  });
});

describe('optInMetrics', () => {
  it('exports an opt-in instrument only when start() is asked for it', async () => {
    const bodies: string[] = [];
    for (const optInMetrics of [undefined, ['gen_ai.server.request.duration']]) {
      const s = startTracked({ serviceName: 'opt-in', prometheus: { port: 0 }, optInMetrics });
      const ticket = s.monitor.queue('main').enqueue('llama');
      ticket.start();
      ticket.end('completed');
      bodies.push((await scrape((await s.prometheus!.ready)!.url)).body);
    }
    const [without, withIt] = bodies as [string, string];
    expect(without).not.toContain('gen_ai_server_request_duration_seconds');
    expect(withIt).toMatch(/^gen_ai_server_request_duration_seconds_count\{[^}]*\} 1$/m);
    // The other opt-in instruments stay off.
    expect(withIt).not.toContain('infersignal_inference_duration_seconds');
    expect(() => start({ optInMetrics: ['infersignal.requests'] })).toThrow(/optInMetrics\[0\]/);
  });
});
