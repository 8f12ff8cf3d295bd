/**
 * The series a generated rule reads exist at 0 from the moment their queue
 * or model is known, in both export modes: a real SDK MeterProvider and
 * pull reader (the api path through observable instruments, the producer
 * path through core's MetricProducer).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '../src/index';
import { createRequestGate } from '../src/signals';
import { setup } from './helpers';

const OUTCOMES = ['completed', 'cancelled', 'error', 'unavailable', 'deadline_exceeded'];
const QUEUE_GAUGES = [
  METRICS.queueOccupancy,
  METRICS.queueWaitOldest,
  METRICS.backpressureLevel,
  METRICS.queueUtilization,
  METRICS.queueWaiting,
  METRICS.queueInFlight,
];

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

describe.each(['api', 'producer'] as const)('series at zero (%s export)', (exportMode) => {
  it('exports every stream outcome and load-spike series of a labelled model at 0 before its first stream', async () => {
    const t = setup({ exportMode });
    close = t.close;
    const before = await t.collect();
    expect(before.points(METRICS.streams.name)).toHaveLength(0);

    // A server that names its model at startup (or loads it): no request, no stream yet.
    expect(t.monitor.label('model', 'llama')).toBe('llama');
    const known = await t.collect();
    const streams = known.points<number>(METRICS.streams.name, { [ATTR.model]: 'llama' });
    expect(streams.map((p) => p.attributes[ATTR.outcome]).sort()).toEqual(
      // The write-stall cancels are their own series (error.type write_stall), also at 0.
      [...OUTCOMES, 'cancelled'].sort(),
    );
    expect(streams.every((p) => p.value === 0)).toBe(true);
    expect(known.by(METRICS.modelLoadSpikes.name, ATTR.loadKind, { [ATTR.model]: 'llama' })).toEqual({
      load: 0,
      reload: 0,
    });

    // The first burst lands in those series: a cumulative reader sees 0, then 3 cancelled and 1 completed.
    for (let i = 0; i < 3; i++) t.monitor.stream('llama').end('cancelled');
    t.monitor.stream('llama').end('completed');
    const after = await t.collect();
    expect(after.by(METRICS.streams.name, ATTR.outcome, { [ATTR.model]: 'llama' })).toEqual({
      completed: 1,
      cancelled: 3,
      error: 0,
      unavailable: 0,
      deadline_exceeded: 0,
    });
    expect(after.points(METRICS.streams.name, { [ATTR.model]: 'llama' })).toHaveLength(6);
  });

  it('makes the series at a model’s first request, stream or load, not only by label()', async () => {
    const t = setup({ exportMode });
    close = t.close;
    // A queued request names "a"; a stream names "b"; a load names "c".
    t.monitor.queue('gen').enqueue('a');
    t.monitor.stream('b');
    await t.monitor.modelLoad('c', 'load', () => 'loaded');
    const exported = await t.collect();
    for (const model of ['a', 'b', 'c']) {
      expect(exported.sum(METRICS.streams.name, { [ATTR.model]: model }), model).toBe(0);
      expect(exported.points(METRICS.streams.name, { [ATTR.model]: model }), model).toHaveLength(6);
      expect(exported.points(METRICS.modelLoadSpikes.name, { [ATTR.model]: model }), model).toHaveLength(2);
    }
  });

  it('makes them at an adapter’s mount when its model option names the model', async () => {
    const t = setup({ exportMode });
    close = t.close;
    createRequestGate(
      t.monitor,
      { queue: 'chat', model: 'mistral' },
      { source: 'test', queue: 'default', keys: ['queue', 'model'] },
    );
    const exported = await t.collect();
    expect(exported.points(METRICS.streams.name, { [ATTR.model]: 'mistral' })).toHaveLength(6);
    expect(exported.value(METRICS.queueOccupancy.name, { [ATTR.queue]: 'chat' })).toBe(0);
  });

  it('keeps the series within maxModels: past the cap no model adds series', async () => {
    const t = setup({ exportMode, maxModels: 3 });
    close = t.close;
    for (let i = 0; i < 20; i++) t.monitor.label('model', `m${i}`);
    const exported = await t.collect();
    expect(exported.values(METRICS.streams.name, ATTR.model)).toEqual(['m0', 'm1', 'm2']);
    expect(exported.points(METRICS.streams.name)).toHaveLength(3 * 6);
  });

  it('exports the queue gauges the rules read at 0 from monitor.queue(), before any request', async () => {
    const t = setup({ exportMode });
    close = t.close;
    t.monitor.queue('gen', { capacity: 8, concurrency: 2 });
    t.monitor.tick();
    t.advance(1000);
    t.monitor.tick();
    const exported = await t.collect();
    for (const spec of QUEUE_GAUGES) expect(exported.value(spec.name, { [ATTR.queue]: 'gen' }), spec.name).toBe(0);
  });
});
