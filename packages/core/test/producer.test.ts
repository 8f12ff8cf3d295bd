import { MeterProvider, type DataPoint, type Histogram, type MetricData } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { createMonitor, METRICS, type Monitor, type MetricProducer } from '../src/index';
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
      const producer: MetricProducer = { collect: (o) => box.monitor!.metricProducer!.collect(o) };
      const reader = new TestReader(exportMode === 'producer' ? { metricProducers: [producer as never] } : undefined);
      box.monitor = createMonitor({
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
    ];
    for (const spec of hotPath) {
      const a = normalise(api.metric(spec.name));
      const p = normalise(producer.metric(spec.name));
      expect(a, spec.name).toBeDefined();
      expect(p, spec.name).toEqual(a);
      expect(producer.metric(spec.name)!.descriptor).toMatchObject({ name: spec.name, unit: spec.unit });
    }
    // Gauges still come through the API observables in producer mode.
    expect(producer.metric(METRICS.queueCapacity.name)).toBeDefined();
  });

  it('api mode has no producer; an invalid mode names the field', () => {
    expect(createMonitor({ detectorIntervalMs: 0, eventLoop: false }).metricProducer).toBeUndefined();
    expect(() => createMonitor({ exportMode: 'fast' as never })).toThrow(/exportMode/);
  });
});
