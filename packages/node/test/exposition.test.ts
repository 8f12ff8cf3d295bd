import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createMonitor } from '@infersignal/core';
import { start, type InferSignal } from '@infersignal/node';
import {
  DataPointType,
  MeterProvider,
  type MetricData,
  type MetricProducer,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import { CHUNK_BYTES, ChunkPool, expositionChunks, serializeExposition } from '../src/prometheus-exposition';
import { parseExposition } from './helpers/exposition';
import { referenceExposition } from './helpers/exposition-reference';

const nameOf = (metric: MetricData) => metric.descriptor.name.replace(/\./g, '_');
const time: [number, number] = [1_700_000_000, 0];

function sum(name: string, points: [Record<string, unknown>, number][], isMonotonic = true): MetricData {
  return {
    descriptor: { name, description: `${name} help`, unit: '{request}', type: 'COUNTER', valueType: 1 },
    aggregationTemporality: 1,
    dataPointType: DataPointType.SUM,
    isMonotonic,
    dataPoints: points.map(([attributes, value]) => ({ startTime: time, endTime: time, attributes, value })),
  } as MetricData;
}

function histogram(name: string, points: [Record<string, unknown>, number[], number | undefined][]): MetricData {
  const boundaries = [0.005, 0.1, 1, 2.5, 10];
  return {
    descriptor: {
      name,
      description: 'a "histogram"\nwith a \\ in its help',
      unit: 's',
      type: 'HISTOGRAM',
      valueType: 1,
    },
    aggregationTemporality: 1,
    dataPointType: DataPointType.HISTOGRAM,
    dataPoints: points.map(([attributes, counts, total]) => ({
      startTime: time,
      endTime: time,
      attributes,
      value: {
        buckets: { boundaries, counts },
        count: counts.reduce((a, b) => a + b, 0),
        sum: total,
      },
    })),
  } as MetricData;
}

/** Labels that need mapping, escapes, integer keys, a scope label among a point's attributes, clashing families. */
const tricky = {
  resource: { attributes: { 'service.name': 'svc', 'weird key--2': 'a"b\\c\nd', 'host.cpus': 2, tags: ['x', 1] } },
  scopeMetrics: [
    {
      scope: { name: '@infersignal/core', version: '0.1.0' },
      metrics: [
        sum('infersignal.requests', [
          [{ 'queue.name': 'main', 'gen_ai.request.model': 'llama' }, 5],
          [{}, 0],
          [{ otel_scope_name: 'mine', a: 1 }, 2],
          [{ 7: 'seven', b: true, 'é-ü': 'ünïcode' }, 1e21],
          [{ quote: 'say "hi"\n' }, 0.1 + 0.2],
          // Counts written digit by digit: the largest exact integer, one past it, and -0.
          [{ big: 'safe' }, Number.MAX_SAFE_INTEGER],
          [{ big: 'unsafe' }, 2 ** 53 + 2],
          [{ zero: 'negative' }, -0],
        ]),
        histogram('infersignal.queue.wait.duration', [
          [{ 'queue.name': 'main' }, [1, 2, 3, 4, 5, 6], 12.5],
          [{ 'queue.name': 'other' }, [0, 0, 0, 0, 0, 1], undefined],
        ]),
        sum('infersignal.queue.waiting', [[{ 'queue.name': 'main' }, -3]], false),
        {
          ...sum('process.gauge', [[{ 'queue.name': 'main' }, Number.POSITIVE_INFINITY]]),
          dataPointType: DataPointType.GAUGE,
        } as MetricData,
        sum('infersignal.empty', []),
        {
          ...sum('infersignal.exponential', [[{}, 1]]),
          dataPointType: DataPointType.EXPONENTIAL_HISTOGRAM,
        } as MetricData,
      ],
    },
    {
      scope: { name: 'other-lib' },
      metrics: [
        // Another scope's family wins over InferSignal's own of the same name; a later one of another type is dropped.
        sum('process.gauge', [[{ pid: 1 }, Number.NEGATIVE_INFINITY]], false),
        sum('infersignal.queue.wait.duration', [[{}, 1]]),
        { ...sum('nan.gauge', [[{}, Number.NaN]]), dataPointType: DataPointType.GAUGE } as MetricData,
      ],
    },
  ],
} as unknown as ResourceMetrics;

/** `n` histogram points and `n` counter points over two scopes: many chunks. */
function large(n: number): ResourceMetrics {
  const attrs = (i: number) => ({ 'queue.name': `queue-${i % 20}`, 'gen_ai.request.model': `model-${i}` });
  return {
    resource: { attributes: { 'service.name': 'large' } },
    scopeMetrics: [
      {
        scope: { name: '@infersignal/core', version: '0.1.0' },
        metrics: [
          histogram(
            'infersignal.inference.duration',
            Array.from({ length: n }, (_, i) => [attrs(i), [i % 3, i % 5, 1, 0, i, 2], i * 0.37] as const).map(
              ([a, c, s]) => [a, [...c], s],
            ),
          ),
          sum(
            'infersignal.requests',
            Array.from({ length: n }, (_, i) => [attrs(i), i]),
          ),
        ],
      },
      { scope: { name: 'app' }, metrics: [sum('app.requests', [[{ route: '/' }, 3]])] },
    ],
  } as unknown as ResourceMetrics;
}

describe('Prometheus exposition writer', () => {
  it('writes exactly what the one-string writer wrote: escapes, label names, scope labels, families', () => {
    const expected = referenceExposition(tricky, nameOf);
    expect(serializeExposition(tricky, nameOf)).toBe(expected);
    expect([...expositionChunks(tricky, nameOf)].map((chunk) => chunk.toString('utf8'))).toEqual([expected]);
    // The input exercises what it claims to.
    expect(expected).toContain('weird_key_2="a\\"b\\\\c\\nd"');
    expect(expected).toContain('otel_scope_name="@infersignal/core",a="1"');
    expect(expected).toContain('process_gauge{pid="1",otel_scope_name="other-lib"} -Inf');
    expect(expected).not.toContain('exponential');
  });

  it('writes the same text at every scrape, one attribute object exported by two own scopes labelled with each', () => {
    const expected = referenceExposition(tricky, nameOf);
    expect(serializeExposition(tricky, nameOf)).toBe(expected);
    expect(serializeExposition(tricky, nameOf)).toBe(expected);
    const shared = { 'queue.name': 'main' };
    const twoScopes = {
      resource: { attributes: {} },
      scopeMetrics: [
        { scope: { name: '@infersignal/core', version: '1' }, metrics: [sum('infersignal.a', [[shared, 1]])] },
        { scope: { name: '@infersignal/http', version: '2' }, metrics: [sum('infersignal.b', [[shared, 2]])] },
      ],
    } as unknown as ResourceMetrics;
    for (let i = 0; i < 2; i++) {
      const text = serializeExposition(twoScopes, nameOf);
      expect(text).toBe(referenceExposition(twoScopes, nameOf));
      expect(text).toContain(
        'infersignal_b{queue_name="main",otel_scope_name="@infersignal/http",otel_scope_version="2"} 2',
      );
    }
  });

  it('hands a large exposition out in chunks of about CHUNK_BYTES, byte for byte the same text', () => {
    const input = large(3000);
    const chunks = [...expositionChunks(input, nameOf)];
    const whole = Buffer.concat(chunks).toString('utf8');
    expect(whole).toBe(referenceExposition(input, nameOf));
    expect(chunks.length).toBeGreaterThan(10);
    // Each chunk ends at a line's end, stops at the first point past CHUNK_BYTES (one histogram point is under 2 KB).
    for (const chunk of chunks.slice(0, -1)) {
      expect(chunk.at(-1)).toBe(0x0a);
      expect(chunk.length).toBeGreaterThanOrEqual(CHUNK_BYTES);
      expect(chunk.length).toBeLessThan(CHUNK_BYTES + 2048);
    }
  });
});

describe('chunk buffers', () => {
  it('a pool hands back buffers of written chunks, keeps a few, and only whole chunk buffers', () => {
    const pool = new ChunkPool();
    const chunks = [...expositionChunks(large(3000), nameOf, pool)];
    expect(pool.take()).toBeUndefined();
    for (const chunk of chunks.slice(0, 10)) pool.give(chunk);
    const first = pool.take()!;
    expect(first.buffer).toBe(chunks[7]!.buffer);
    expect(first.length).toBeGreaterThanOrEqual(CHUNK_BYTES + 4096);
    // Eight kept: the ninth and tenth were dropped.
    let kept = 1;
    while (pool.take() !== undefined) kept++;
    expect(kept).toBe(8);
    pool.give(Buffer.alloc(16));
    pool.give(chunks[0]!.subarray(1));
    expect(pool.take()).toBeUndefined();
    // Chunks written from recycled buffers are the same text.
    for (const chunk of chunks.slice(0, 3)) pool.give(chunk);
    const again = Buffer.concat([...expositionChunks(large(3000), nameOf, pool)].map((c) => Buffer.from(c)));
    expect(again.toString('utf8')).toBe(referenceExposition(large(3000), nameOf));
  });
});

describe("core's series written from their copy", () => {
  it('gives byte for byte the text of its data points, with none made', async () => {
    const monitor = createMonitor({
      meterProvider: new MeterProvider(),
      exportMode: 'producer',
      traces: false,
      detectorIntervalMs: 0,
      eventLoop: false,
      // Its gauges move between two collections; the queues' gauges, read by both, do not.
      heap: false,
    });
    const outcomes = ['completed', 'error', 'cancelled'] as const;
    for (let q = 0; q < 6; q++) {
      const queue = monitor.queue(`queue-${q}`);
      for (let m = 0; m < 30; m++) {
        queue.reject(`model-${m}`);
        for (const outcome of outcomes) {
          const ticket = queue.enqueue(`model-${m}`);
          ticket.start();
          const stream = ticket.stream();
          stream.token(q + 1);
          stream.token(m);
          stream.end(outcome);
          ticket.end(outcome);
        }
      }
    }
    await monitor.modelLoad('model-0', 'load', () => undefined);
    const producer = monitor.metricProducer!;
    const asResource = (r: { resourceMetrics: { scopeMetrics: unknown[] } }) =>
      ({
        resource: { attributes: { 'service.name': 'copy' } },
        scopeMetrics: r.resourceMetrics.scopeMetrics,
      }) as unknown as ResourceMetrics;
    const fromPoints = asResource(await producer.collect());
    const fromCopy = asResource(await producer.collectSeries!());
    const metrics = fromCopy.scopeMetrics.flatMap((scope) => scope.metrics);
    // More series than one turn's worth of points: the copy waits a turn, as a collection does.
    expect(
      metrics.reduce((n, m) => n + (m as unknown as { series: { length: number } }).series.length, 0),
    ).toBeGreaterThan(500);
    expect(metrics.every((m) => m.dataPoints.length === 0)).toBe(true);
    const text = serializeExposition(fromCopy, nameOf);
    expect(text).toBe(serializeExposition(fromPoints, nameOf));
    expect(text).toBe(referenceExposition(fromPoints, nameOf));
    const requests = parseExposition(text).get('infersignal_requests')!;
    expect(requests.samples.reduce((n, x) => n + x.value, 0)).toBe(6 * 30 * (outcomes.length + 1));
    await monitor.close();
  });
});

describe('Prometheus handler', () => {
  const running: InferSignal[] = [];
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.shutdown()));
    for (const server of servers) server.closeAllConnections();
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  });

  async function mounted(onResponse: (res: ServerResponse) => void, metricProducers?: MetricProducer[]) {
    const s = start({
      metricProducers,
      serviceName: 'chunked',
      registerGlobals: false,
      detectorIntervalMs: 0,
      prometheus: { mount: true },
      otlp: false,
      traces: false,
      logger: { warn: () => {} },
    });
    running.push(s);
    const server = createServer((req, res) => {
      onResponse(res);
      s.metricsHandler!(req, res);
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { s, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics` };
  }

  it('streams a large exposition one chunk per turn of the event loop, every count intact', async () => {
    // Between two turns of a probe, how many chunks went out: the most the loop waited for.
    const writesPerTurn: number[] = [];
    const written: number[] = [];
    const buffers = new Set<ArrayBufferLike>();
    let turns = 0;
    const { s, url } = await mounted((res) => {
      let writes = 0;
      let open = true;
      const probe = () => {
        writesPerTurn.push(writes);
        writes = 0;
        turns++;
        if (open) setImmediate(probe);
      };
      setImmediate(probe);
      const write = res.write.bind(res) as (chunk: Buffer, done: () => void) => boolean;
      res.write = ((chunk: Buffer, done: () => void) => {
        writes++;
        written.push(chunk.length);
        buffers.add(chunk.buffer);
        return write(chunk, done);
      }) as typeof res.write;
      res.on('finish', () => {
        open = false;
      });
    });
    const queues = 10;
    const models = 40;
    for (let q = 0; q < queues; q++) {
      const queue = s.monitor.queue(`queue-${q}`);
      for (let m = 0; m < models; m++) {
        for (const outcome of ['completed', 'error'] as const) {
          const ticket = queue.enqueue(`model-${m}`);
          ticket.start();
          ticket.end(outcome);
        }
      }
    }
    const response = await fetch(url);
    const body = await response.text();
    expect(response.status).toBe(200);
    expect(response.headers.get('transfer-encoding')).toBe('chunked');
    // Every chunk but the last (the `end()`) is one write of at least CHUNK_BYTES, never two in one turn.
    expect(written.length).toBeGreaterThan(10);
    for (const length of written) expect(length).toBeGreaterThanOrEqual(CHUNK_BYTES);
    expect(written.reduce((a, b) => a + b, 0)).toBeLessThan(Buffer.byteLength(body));
    expect(Math.max(...writesPerTurn)).toBe(1);
    // A chunk's buffer, once written, takes a later chunk: a handful of buffers for the whole body.
    expect(buffers.size).toBeLessThanOrEqual(8);
    expect(turns).toBeGreaterThan(written.length);
    const requests = parseExposition(body).get('infersignal_requests_total')!;
    expect(requests.samples.reduce((n, x) => n + x.value, 0)).toBe(queues * models * 2);
  });

  it('answers a small exposition in one piece, with its length', async () => {
    const { s, url } = await mounted(() => {});
    const ticket = s.monitor.queue('q').enqueue('m');
    ticket.start();
    ticket.end('completed');
    const response = await fetch(url);
    const body = await response.text();
    expect(body.length).toBeLessThan(CHUNK_BYTES);
    expect(response.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
  });

  it('cuts a response off when the exposition fails after its first chunk went out, answers 500 before', async () => {
    // A producer of the app's whose points throw when read: at point `failAt`, once per scrape that asks.
    let failAt = -1;
    const points = Array.from({ length: 5000 }, (_, i) => {
      const attributes = { route: `/route/${i}` };
      return {
        startTime: time,
        endTime: time,
        get attributes() {
          if (i === failAt) throw new Error('unreadable point');
          return attributes;
        },
        value: i,
      };
    });
    const app: MetricProducer = {
      collect: async () => ({
        resourceMetrics: {
          resource: undefined as never,
          scopeMetrics: [
            { scope: { name: 'app' }, metrics: [{ ...sum('app.routes', []), dataPoints: points } as MetricData] },
          ],
        },
        errors: [],
      }),
    };
    const { url } = await mounted(() => {}, [app]);
    failAt = 4000;
    const cut = await fetch(url);
    expect(cut.status).toBe(200);
    await expect(cut.text()).rejects.toThrow();
    failAt = 0;
    const failed = await fetch(url);
    expect(failed.status).toBe(500);
    expect(await failed.text()).toMatch(/metrics exposition failed: unreadable point/);
    failAt = -1;
    const whole = await fetch(url);
    expect(whole.status).toBe(200);
    expect(parseExposition(await whole.text()).get('app_routes_total')?.samples).toHaveLength(5000);
  });
});
