import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { LateMeterProvider } from '../src/late-meter';
import { collect, TestReader } from '../../../test/support/otel';

function provider() {
  const reader = new TestReader();
  return { reader, provider: new MeterProvider({ readers: [reader] }) };
}

describe('LateMeterProvider', () => {
  it('moves instruments and callbacks to each provider it is bound to; the no-op provider is ignored', async () => {
    let collections = 0;
    const late = new LateMeterProvider(() => collections++);
    const meter = late.getMeter('scope', '1.0.0');
    const counter = meter.createCounter('c');
    const histogram = meter.createHistogram('h', { advice: { explicitBucketBoundaries: [1, 2] } });
    const gauge = meter.createObservableGauge('g');
    const single = meter.createObservableCounter('oc');
    let value = 1;
    meter.addBatchObservableCallback((result) => result.observe(gauge, value), [gauge]);
    single.addCallback((result) => result.observe(10 * value));
    counter.add(5); // unbound: dropped, like any no-op meter
    expect(late.bind(metrics.getMeterProvider())).toBe(false);
    expect(late.bound).toBe(false);

    const a = provider();
    expect(late.bind(a.provider)).toBe(true);
    expect(late.bind(a.provider)).toBe(false);
    counter.add(2);
    histogram.record(1.5);
    const first = await collect(a.reader);
    expect(first.sum('c')).toBe(2);
    expect(first.histogram('h')?.buckets.boundaries).toEqual([1, 2]);
    expect(first.value('g')).toBe(1);
    expect(first.value('oc')).toBe(10);
    expect(collections).toBe(1);

    const b = provider();
    late.bind(b.provider);
    value = 2;
    counter.add(3);
    const onB = await collect(b.reader);
    expect(onB.sum('c')).toBe(3);
    expect(onB.value('g')).toBe(2);
    expect(onB.value('oc')).toBe(20);
    expect(onB.count('h')).toBe(0);
    // A keeps what it had and gets nothing new: its callbacks were removed, so its gauge and observable
    // counter still hold the values of the last collection (the SDK's cumulative last value), not B's.
    const second = await collect(a.reader);
    expect(second.sum('c')).toBe(2);
    expect(second.value('g')).toBe(1);
    expect(second.value('oc')).toBe(10);
    expect(collections).toBe(2);
    // A meter asked for after binding starts on the bound provider.
    late.getMeter('later').createCounter('later.c').add(1);
    expect((await collect(b.reader)).sum('later.c')).toBe(1);
  });
});
