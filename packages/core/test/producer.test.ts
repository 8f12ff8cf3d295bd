import {
  AggregationTemporality,
  MeterProvider,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { LabelTable, OVERFLOW_LABEL } from '../src/aggregates/label-table';
import { SLAB_BLOCK_SERIES } from '../src/aggregates/series-slab';
import {
  AggregateCounter,
  AggregateHistogram,
  CoreMetricProducer,
  MAX_SERIES,
  POINTS_PER_TURN,
  seriesCapOf,
} from '../src/export/producer';
import type { SeriesCopy } from '../src/types';
import { ATTR, createMonitor, METRICS, type Monitor } from '../src/index';
import type { CoreMetricProducerLike as MetricProducer } from '../src/types';
import { OPT_IN_NAMES } from '../src/opt-in';
import { collect, TestReader } from './helpers';

function drive(monitor: Monitor, advance: (ms: number) => void) {
  const queue = monitor.queue('gen', { capacity: 100 });
  for (let i = 0; i < 200; i++) {
    const ticket = queue.enqueue(`model-${i % 3}`);
    advance((i * 7) % 120);
    ticket.start();
    const stream = ticket.stream();
    advance(15);
    stream.token();
    advance(5);
    stream.token(3);
    stream.end(i % 50 === 0 ? 'cancelled' : 'completed');
    ticket.end(i % 40 === 0 ? 'error' : 'completed');
  }
}

function normalise(metric: MetricData | undefined) {
  if (!metric) return undefined;
  return (metric.dataPoints as DataPoint<number | Histogram>[])
    .map((p) => ({ attributes: p.attributes, value: p.value }))
    .sort((a, b) => JSON.stringify(a.attributes).localeCompare(JSON.stringify(b.attributes)));
}

describe('producer export mode', () => {
  it('exports exactly the same values as the API path, through a real MetricReader', async () => {
    const run = async (exportMode: 'api' | 'producer') => {
      let now = 0;
      const box: { monitor?: Monitor } = {};
      // The reader is created before the monitor, as in an application: the producer is bound lazily.
      const producer: MetricProducer = {
        collect: (o) => box.monitor!.metricProducer!.collect(o),
        forTemporality: (t) => box.monitor!.metricProducer!.forTemporality(t),
      };
      const reader = new TestReader(exportMode === 'producer' ? { metricProducers: [producer as never] } : undefined);
      box.monitor = createMonitor({
        // Every instrument exported, the opt-in ones too: this file compares what each records.
        optInMetrics: OPT_IN_NAMES,
        meterProvider: new MeterProvider({ readers: [reader] }),
        clock: () => now,
        detectorIntervalMs: 0,
        traces: false,
        eventLoop: false,
        exportMode,
      });
      drive(box.monitor, (ms) => (now += ms));
      return collect(reader);
    };
    const api = await run('api');
    const producer = await run('producer');
    const hotPath = [
      METRICS.queueWait,
      METRICS.inferenceDuration,
      METRICS.requestDuration,
      METRICS.timeToFirstToken,
      METRICS.timePerOutputToken,
      METRICS.requests,
      METRICS.streams,
      METRICS.streamTokens,
      // Gauges: read from the signals by the producer, as the API path's observable gauges read them.
      METRICS.queueCapacity,
      METRICS.queueWaiting,
      METRICS.queueInFlight,
      METRICS.queueOccupancy,
    ];
    for (const spec of hotPath) {
      const a = normalise(api.metric(spec.name));
      const p = normalise(producer.metric(spec.name));
      expect(a, spec.name).toBeDefined();
      expect(p, spec.name).toEqual(a);
      expect(producer.metric(spec.name)!.descriptor).toMatchObject({ name: spec.name, unit: spec.unit });
    }
  });

  it("registers nothing on the meter: a reader without the producer gets none of the monitor's metrics", async () => {
    const reader = new TestReader();
    const monitor = createMonitor({
      meterProvider: new MeterProvider({ readers: [reader] }),
      exportMode: 'producer',
      detectorIntervalMs: 0,
      traces: false,
      eventLoop: false,
      heap: false,
    });
    monitor.queue('q', { capacity: 3 });
    expect((await collect(reader)).names()).toEqual([]);
    const { resourceMetrics } = await monitor.metricProducer!.collect();
    const [gauges] = resourceMetrics.scopeMetrics as { metrics: MetricData[] }[];
    const capacity = gauges!.metrics.find((m) => m.descriptor.name === METRICS.queueCapacity.name);
    expect(capacity?.dataPoints.map((p) => p.value)).toEqual([3]);
    await monitor.close();
  });

  it('a delta producer reports what changed since its last collection, as the SDK does in API mode', async () => {
    // Each mode runs with a DELTA reader; the producer is made for it with forTemporality.
    const run = async (exportMode: 'api' | 'producer') => {
      let now = 0;
      const box: { monitor?: Monitor } = {};
      let delta: MetricProducer | undefined;
      const producer: MetricProducer = {
        collect: (o) => {
          delta ??= box.monitor!.metricProducer!.forTemporality(() => 'delta');
          return delta.collect(o);
        },
        forTemporality: () => producer,
      };
      const reader = new TestReader({
        aggregationTemporalitySelector: () => AggregationTemporality.DELTA,
        ...(exportMode === 'producer' ? { metricProducers: [producer as never] } : {}),
      });
      box.monitor = createMonitor({
        // Every instrument exported, the opt-in ones too: this file compares what each records.
        optInMetrics: OPT_IN_NAMES,
        meterProvider: new MeterProvider({ readers: [reader] }),
        clock: () => now,
        detectorIntervalMs: 0,
        traces: false,
        eventLoop: false,
        exportMode,
      });
      const collections = [];
      drive(box.monitor, (ms) => (now += ms));
      collections.push(await collect(reader));
      // Only one model and one outcome move in the second interval.
      const queue = box.monitor.queue('gen');
      for (let i = 0; i < 7; i++) {
        const ticket = queue.enqueue('model-1');
        now += 30;
        ticket.start();
        now += 10;
        ticket.end('completed');
      }
      collections.push(await collect(reader));
      // Nothing recorded: no point at all for the per-request instruments.
      collections.push(await collect(reader));
      return collections;
    };
    const api = await run('api');
    const producer = await run('producer');
    // Delta sums are differences of running sums: equal to the SDK's to rounding. No min/max in delta points.
    // API mode's counters are observable: the SDK reports a 0 delta for every unchanged series, the producer none.
    const comparable = (metric: MetricData | undefined) =>
      normalise(metric)
        ?.filter(({ value }) => value !== 0)
        .map(({ attributes, value }) =>
          typeof value === 'number'
            ? { attributes, value }
            : { attributes, counts: value.buckets.counts, count: value.count, sum: value.sum?.toFixed(9) },
        );
    for (const [i, spec] of [METRICS.queueWait, METRICS.requestDuration, METRICS.requests].entries()) {
      for (let c = 0; c < 3; c++) {
        const a = comparable(api[c].metric(spec.name));
        const p = comparable(producer[c].metric(spec.name));
        expect(p ?? [], `${spec.name} collection ${c}`).toEqual(a ?? []);
        if (c < 2) expect(producer[c].metric(spec.name)?.aggregationTemporality).toBe(AggregationTemporality.DELTA);
      }
      if (i === 0) {
        // Second interval: 7 waits of 30 ms for model-1 only, the start of the point is the first collection's end.
        const [point] = producer[1].points<Histogram>(spec.name);
        expect(producer[1].points(spec.name)).toHaveLength(1);
        expect(point.value.count).toBe(7);
        expect(point.value.sum).toBeCloseTo(0.21, 9);
        expect(point.startTime).toEqual(producer[0].points(spec.name)[0].endTime);
      }
    }
    expect(producer[2].metric(METRICS.queueWait.name)).toBeUndefined();
    // The cumulative producer beside it is unchanged by the delta one's reads.
    expect(api[1].sum(METRICS.requests.name)).toBe(7);
  });

  it('api mode has no producer; an invalid mode names the field', () => {
    expect(
      createMonitor({ meterProvider: new MeterProvider(), detectorIntervalMs: 0, eventLoop: false }).metricProducer,
    ).toBeUndefined();
    expect(() => createMonitor({ exportMode: 'fast' as never })).toThrow(/exportMode/);
  });

  describe('a large collection', () => {
    const OUTCOMES = ['completed', 'error', 'cancelled'] as const;
    /** A producer-mode monitor with every (queue, model, outcome) series of `queues` × `models` recorded once. */
    function filled(queues: number, models: number) {
      const monitor = createMonitor({
        // Every instrument exported, the opt-in ones too: this file compares what each records.
        optInMetrics: OPT_IN_NAMES,
        meterProvider: new MeterProvider(),
        detectorIntervalMs: 0,
        traces: false,
        eventLoop: false,
        exportMode: 'producer',
      });
      for (let q = 0; q < queues; q++) {
        const queue = monitor.queue(`queue-${q}`);
        for (let m = 0; m < models; m++) {
          for (const outcome of OUTCOMES) {
            const ticket = queue.enqueue(`model-${m}`);
            ticket.start();
            ticket.end(outcome);
          }
        }
      }
      return monitor;
    }
    type Collected = {
      resourceMetrics: {
        scopeMetrics: { metrics: { descriptor: { name: string }; dataPoints: { value: unknown }[] }[] }[];
      };
    };
    const pointsOf = (result: Collected) =>
      result.resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).reduce((n, m) => n + m.dataPoints.length, 0);
    const requestTotal = (result: Collected) =>
      result.resourceMetrics.scopeMetrics
        .flatMap((s) => s.metrics)
        .filter((m) => m.descriptor.name === METRICS.requests.name)
        .flatMap((m) => m.dataPoints)
        .reduce((n, p) => n + (p.value as number), 0);
    const waitCount = (result: Collected) =>
      result.resourceMetrics.scopeMetrics
        .flatMap((s) => s.metrics)
        .filter((m) => m.descriptor.name === METRICS.queueWait.name)
        .flatMap((m) => m.dataPoints)
        .reduce((n, p) => n + (p.value as { count: number }).count, 0);
    /** Collects while a probe re-arms setImmediate: how many times the event loop turned meanwhile. */
    async function collectCountingTurns(producer: MetricProducer, during?: () => void) {
      let turns = 0;
      let collecting = true;
      const probe = () => {
        if (!collecting) return;
        turns++;
        during?.();
        setImmediate(probe);
      };
      setImmediate(probe);
      const result = (await producer.collect()) as Collected;
      collecting = false;
      return { result, turns };
    }

    it('builds its points a bounded number per turn of the event loop', async () => {
      const monitor = filled(4, 50);
      const { result, turns } = await collectCountingTurns(monitor.metricProducer!);
      const points = pointsOf(result);
      expect(points).toBeGreaterThanOrEqual(4 * POINTS_PER_TURN);
      // One turn after each full chunk: never more than POINTS_PER_TURN points built without the loop turning.
      const chunks = Math.ceil(points / POINTS_PER_TURN);
      expect(turns).toBeGreaterThanOrEqual(chunks - 1);
      expect(turns).toBeLessThanOrEqual(chunks + 1);
      await monitor.close();
    });

    it('reports every series as of one instant, whatever is recorded between its turns', async () => {
      const monitor = filled(4, 50);
      const before = 4 * 50 * OUTCOMES.length;
      const queue = monitor.queue('queue-0');
      let recorded = 0;
      // Each turn of the probe is a whole request: one queue wait and one request more, together.
      const { result, turns } = await collectCountingTurns(monitor.metricProducer!, () => {
        const ticket = queue.enqueue('model-7');
        ticket.start();
        ticket.end('completed');
        recorded++;
      });
      expect(turns).toBeGreaterThan(2);
      expect(recorded).toBe(turns);
      // Requests recorded after the copy are not in it: it was taken before the last of them.
      const seen = requestTotal(result) - before;
      expect(seen).toBeGreaterThanOrEqual(0);
      expect(seen).toBeLessThan(recorded);
      expect(waitCount(result) - before).toBe(seen);
      // The next collection sees them all.
      const next = (await monitor.metricProducer!.collect()) as Collected;
      expect(requestTotal(next)).toBe(before + recorded);
      expect(waitCount(next)).toBe(before + recorded);
      await monitor.close();
    });

    it('stays one synchronous stretch below the budget', async () => {
      const monitor = filled(1, 5);
      const { result, turns } = await collectCountingTurns(monitor.metricProducer!);
      expect(pointsOf(result)).toBeGreaterThan(0);
      expect(pointsOf(result)).toBeLessThanOrEqual(POINTS_PER_TURN);
      expect(turns).toBe(0);
      await monitor.close();
    });

    it('runs overlapping collections of a delta producer one after another: no change reported twice or lost', async () => {
      const monitor = filled(4, 50);
      const delta = monitor.metricProducer!.forTemporality(() => 'delta');
      const queue = monitor.queue('queue-1');
      const request = () => {
        const ticket = queue.enqueue('model-3');
        ticket.start();
        ticket.end('error');
      };
      const first = delta.collect();
      for (let i = 0; i < 5; i++) request();
      const second = delta.collect();
      setImmediate(() => {
        for (let i = 0; i < 7; i++) request();
      });
      const [a, b] = (await Promise.all([first, second])) as Collected[];
      const third = (await delta.collect()) as Collected;
      expect(requestTotal(a) + requestTotal(b) + requestTotal(third)).toBe(4 * 50 * OUTCOMES.length + 12);
      expect(requestTotal(a)).toBeGreaterThanOrEqual(4 * 50 * OUTCOMES.length);
      // The third sees only what came after the second's copy.
      expect(requestTotal(third)).toBeLessThanOrEqual(7);
      await monitor.close();
    });
  });
});

describe('series resolved once (what the hot path records into)', () => {
  const spec = METRICS.queueWait;

  it('a histogram series records into the series its attributes name, made on first use', () => {
    const histogram = new AggregateHistogram(spec, [1, 2, 5]);
    const attributes = { queue: 'gen', model: 'm' };
    const series = histogram.seriesOf(attributes);
    expect(histogram.series.size).toBe(0);
    series.record(0.5);
    series.record(3);
    // A fresh object with the same values is the same series.
    histogram.record(1.5, { model: 'm', queue: 'gen' });
    expect(histogram.series.size).toBe(1);
    const cell = histogram.series.get(attributes)!;
    expect(cell.count).toBe(3);
    expect(cell.sum).toBe(5);
    expect([...cell.counts]).toEqual([1, 1, 1, 0]);
  });

  it('a histogram series refuses a negative or infinite value (counted on its cell) and past the cap drops', () => {
    const histogram = new AggregateHistogram(spec, [1, 2, 5], 1);
    const series = histogram.seriesOf({ s: 'a' });
    series.record(-1);
    series.record(Number.POSITIVE_INFINITY);
    series.record(2);
    const cell = histogram.series.get({ s: 'a' }) ?? [...histogram.series.values()][0]!;
    expect(cell.rejected).toBe(2);
    expect([cell.count, cell.sum, cell.min, cell.max, ...cell.counts]).toEqual([1, 2, 2, 2, 0, 1, 0, 0]);
    const late = histogram.seriesOf({ s: 'late' });
    late.record(1);
    late.record(1);
    expect(histogram.series.size).toBe(1);
    expect(histogram.dropped).toBe(2);
  });

  it('a counter series made but never added to exports no zero series', () => {
    const counter = new AggregateCounter(METRICS.requests);
    const idle = counter.seriesOf({ outcome: 'timeout' });
    const used = counter.seriesOf({ outcome: 'completed' });
    used.add(2);
    used.add(1);
    expect([...counter.series.values()].map((c) => c.value)).toEqual([3]);
    idle.add(1);
    expect(counter.series.size).toBe(2);
  });

  it('past the series cap a series is dropped (counted each time), like a record with attributes', () => {
    const counter = new AggregateCounter(METRICS.requests);
    for (let i = 0; i < MAX_SERIES; i++) counter.add(1, { n: i });
    const late = counter.seriesOf({ n: 'late' });
    late.add(1);
    late.add(1);
    expect(counter.series.size).toBe(MAX_SERIES);
    expect(counter.dropped).toBe(2);
  });

  it("a monitor's cap holds every (queue, model) pair its label caps allow; past it, the drop is counted and told once", async () => {
    expect(seriesCapOf(20, 50)).toBe(21 * 51 * 8);
    expect(seriesCapOf(1, 1)).toBe(MAX_SERIES);
    const warnings: string[] = [];
    const monitor = createMonitor({
      // Every instrument exported, the opt-in ones too: this file compares what each records.
      optInMetrics: OPT_IN_NAMES,
      meterProvider: new MeterProvider(),
      exportMode: 'producer',
      detectorIntervalMs: 0,
      maxQueues: 1,
      maxModels: 1,
      logger: { warn: (message) => warnings.push(message) },
    });
    // The monitor's own instruments (not public): the cap guards attribute sets a caller builds itself.
    const { instruments } = monitor as unknown as { instruments: { histogram(spec: unknown): AggregateHistogram } };
    const histogram = instruments.histogram(METRICS.queueWait);
    for (let i = 0; i <= MAX_SERIES + 5; i++) histogram.record(0.1, { n: i });
    expect(histogram.series.size).toBe(MAX_SERIES);
    expect(histogram.dropped).toBe(6);
    expect(warnings.filter((w) => w.includes('series_cap'))).toHaveLength(1);
    expect(warnings[0]).toContain(`${METRICS.queueWait.name} holds ${MAX_SERIES} series`);
    expect(monitor.snapshot().internalErrors).toBe(1);
    await monitor.close();
  });

  it('api export: a series of an OTel histogram records with its attributes', async () => {
    const reader = new TestReader();
    const monitor = createMonitor({
      // Every instrument exported, the opt-in ones too: this file compares what each records.
      optInMetrics: OPT_IN_NAMES,
      meterProvider: new MeterProvider({ readers: [reader] }),
      detectorIntervalMs: 0,
      traces: false,
      eventLoop: false,
      exportMode: 'api',
    });
    const queue = monitor.queue('gen', { capacity: 10 });
    for (const model of ['a', 'b', 'a']) queue.enqueue(model).end('completed');
    const exported = await collect(reader);
    const counts = normalise(exported.metric(METRICS.requestDuration.name))!.map((p) => [
      p.attributes[ATTR.model],
      (p.value as Histogram).count,
    ]);
    expect(counts).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    await monitor.close();
  });
});

describe('series copies (one memory copy per slab block)', () => {
  type WithSeries = { resourceMetrics: { scopeMetrics: { metrics: { series: SeriesCopy }[] }[] } };
  const copies = async (producer: CoreMetricProducer) =>
    ((await producer.collectSeries()) as WithSeries).resourceMetrics.scopeMetrics[0]!.metrics.map((m) => m.series);

  it('copies series spread over several blocks, each with its own numbers, and the copy stays as it was', async () => {
    const histogram = new AggregateHistogram(METRICS.queueWait, [1, 2, 5]);
    const counter = new AggregateCounter(METRICS.requests);
    const n = 3 * SLAB_BLOCK_SERIES + 5;
    for (let i = 0; i < n; i++) {
      for (let r = 0; r <= i % 3; r++) histogram.record((i % 4) * 1.5 + r, { n: i });
      counter.add(i + 1, { n: i });
    }
    const producer = new CoreMetricProducer([histogram], [counter], () => 0, 0);
    const [h, c] = await copies(producer);
    expect(h!.length).toBe(n);
    expect(h!.stride).toBe(3 + 1 + 4);
    for (let i = 0; i < n; i++) {
      expect(h!.attributes[i]).toEqual({ n: i });
      const cell = histogram.series.get(h!.attributes[i]!)!;
      const at = i * h!.stride;
      expect([...h!.values.subarray(at, at + h!.stride)]).toEqual([
        cell.count,
        cell.sum,
        cell.min,
        cell.max,
        ...cell.counts,
      ]);
      expect(h!.values[at]).toBe((i % 3) + 1);
      expect(c!.values[i]).toBe(i + 1);
    }
    // A copy, not a view: what is recorded afterwards is in the next copy only.
    histogram.record(0.5, { n: 0 });
    counter.add(10, { n: n - 1 });
    expect(h!.values[0]).toBe(1);
    expect(c!.values[n - 1]).toBe(n);
    // A series made after the copy is not in it: its length and numbers stay those of the copy.
    histogram.record(1, { n: 'new' });
    counter.add(1, { n: 'new' });
    expect([h!.length, h!.values.length, c!.length, c!.values.length]).toEqual([n, n * h!.stride, n, n]);
    const [h2, c2] = await copies(producer);
    expect(h2!.values[0]).toBe(2);
    expect(c2!.values[n - 1]).toBe(n + 10);
    expect([h2!.length, c2!.length]).toEqual([n + 1, n + 1]);
    expect(h2!.attributes[n]).toEqual({ n: 'new' });
  });

  it('a released copy lends its array to the next copy; one still held is never written over', async () => {
    const counter = new AggregateCounter(METRICS.requests);
    for (let i = 0; i < 40; i++) counter.add(i + 1, { n: i });
    const producer = new CoreMetricProducer([], [counter], () => 0, 0);
    const [first] = await copies(producer);
    const [held] = await copies(producer);
    // Two copies alive at once: two arrays.
    expect(held!.values.buffer).not.toBe(first!.values.buffer);
    first!.release!();
    first!.release!();
    counter.add(100, { n: 0 });
    const [next] = await copies(producer);
    expect(next!.values.buffer).toBe(first!.values.buffer);
    expect(next!.values[0]).toBe(101);
    expect([...next!.values.subarray(1)]).toEqual(Array.from({ length: 39 }, (_, i) => i + 2));
    // The held copy kept its numbers, and a second release of `first` did not hand its array out twice.
    expect(held!.values[0]).toBe(1);
    const [another] = await copies(producer);
    expect(another!.values.buffer).not.toBe(next!.values.buffer);
  });

  it('leaves out a series whose every value was refused; the series after it keep their numbers', async () => {
    const histogram = new AggregateHistogram(METRICS.queueWait, [1, 2, 5]);
    histogram.record(1, { s: 'a' });
    histogram.record(-1, { s: 'refused' });
    histogram.record(3, { s: 'c' });
    histogram.record(7, { s: 'c' });
    const [h] = await copies(new CoreMetricProducer([histogram], [], () => 0, 0));
    expect(h!.length).toBe(2);
    expect(h!.attributes).toEqual([{ s: 'a' }, { s: 'c' }]);
    expect([...h!.values]).toEqual([1, 1, 1, 1, 1, 0, 0, 0, 2, 10, 3, 7, 0, 0, 1, 1]);
  });
});

describe('label table lookups on the request path', () => {
  it('known() finds only a value stored under its own label: never a raw value to sanitize, nor the overflow slot', () => {
    const table = new LabelTable(2, (label) => ({ label }));
    const a = table.get('a');
    expect(table.known('a')).toBe(a);
    expect(table.known('b')).toBeUndefined();
    table.get('b\u0000');
    // Stored as 'b' (sanitized): the raw value is not a key, the label is.
    expect(table.known('b\u0000')).toBeUndefined();
    expect(table.known('b')).toEqual({ label: 'b' });
    const other = table.get('c');
    expect(other).toEqual({ label: OVERFLOW_LABEL });
    expect(table.known(OVERFLOW_LABEL)).toBeUndefined();
    expect(table.known(7)).toBeUndefined();
  });

  it('a monitor past its model cap puts queue and stream records of new models in _other', async () => {
    const reader = new TestReader();
    const monitor = createMonitor({
      // Every instrument exported, the opt-in ones too: this file compares what each records.
      optInMetrics: OPT_IN_NAMES,
      meterProvider: new MeterProvider({ readers: [reader] }),
      exportMode: 'api',
      detectorIntervalMs: 0,
      traces: false,
      eventLoop: false,
      maxModels: 2,
    });
    const queue = monitor.queue('gen');
    for (const model of ['a', 'b', 'c', 'a', 'd', OVERFLOW_LABEL]) {
      const ticket = queue.enqueue(model);
      ticket.start();
      const stream = ticket.stream();
      stream.token(2);
      stream.end('completed');
      ticket.end('completed');
    }
    const exported = await collect(reader);
    const byModel = (name: string) =>
      Object.fromEntries(
        normalise(exported.metric(name))!.map((p) => [
          p.attributes[ATTR.model],
          (p.value as Histogram).count ?? p.value,
        ]),
      );
    expect(byModel(METRICS.queueWait.name)).toEqual({ a: 2, b: 1, [OVERFLOW_LABEL]: 3 });
    expect(byModel(METRICS.streamTokens.name)).toEqual({ a: 4, b: 2, [OVERFLOW_LABEL]: 6 });
    await monitor.close();
  });
});
