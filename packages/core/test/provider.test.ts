import { metrics } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { createMonitor, METRICS, type Monitor } from '../src/index';
import { collect, TestReader } from './helpers';

const monitors: Monitor[] = [];
afterEach(async () => {
  for (const monitor of monitors.splice(0)) await monitor.close();
  metrics.disable();
});

function create(options: Parameters<typeof createMonitor>[0] = {}) {
  const warnings: string[] = [];
  const monitor = createMonitor({
    detectorIntervalMs: 0,
    eventLoop: false,
    logger: { warn: (m) => warnings.push(m) },
    ...options,
  });
  monitors.push(monitor);
  return { monitor, warnings };
}

describe('the MeterProvider a monitor records through', () => {
  it('warns once, naming the fix, when created before any SDK registered (the global no-op provider)', () => {
    const { monitor, warnings } = create();
    monitor.queue('q');
    monitor.tick();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/no OpenTelemetry MeterProvider/);
    expect(warnings[0]).toMatch(/sdk\.start\(\)/);
    expect(warnings[0]).toMatch(/InferSignalInstrumentation/);
  });

  it('does not warn with a provider, given or registered globally, and records through it', async () => {
    const reader = new TestReader();
    const given = create({ meterProvider: new MeterProvider({ readers: [reader] }) });
    given.monitor.queue('q', { capacity: 5 });
    expect(given.warnings).toEqual([]);
    expect((await collect(reader)).value(METRICS.queueCapacity.name)).toBe(5);

    const globalReader = new TestReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [globalReader] }));
    const global = create();
    global.monitor.queue('g', { capacity: 7 });
    expect(global.warnings).toEqual([]);
    expect((await collect(globalReader)).value(METRICS.queueCapacity.name)).toBe(7);
  });

  it('setMeterProvider moves every OTel instrument and the batch callback to each provider bound; the no-op one is ignored', async () => {
    const { monitor } = create({ exportMode: 'api', meterProvider: new MeterProvider() });
    const queue = monitor.queue('q', { capacity: 5 });
    const serve = (n: number) => {
      for (let i = 0; i < n; i++) {
        const ticket = queue.enqueue('m');
        ticket.start();
        ticket.end('completed');
      }
    };
    serve(2); // recorded before any bound reader: the histogram's records go to the first provider
    expect(monitor.setMeterProvider(metrics.getMeterProvider())).toBe(false);

    const a = new TestReader();
    const providerA = new MeterProvider({ readers: [a] });
    expect(monitor.setMeterProvider(providerA)).toBe(true);
    expect(monitor.setMeterProvider(providerA)).toBe(false);
    serve(3);
    const onA = await collect(a);
    expect(onA.value(METRICS.queueCapacity.name)).toBe(5);
    expect(onA.count(METRICS.queueWait.name)).toBe(3);
    // Counters are core's aggregates: their totals since the start, whichever provider reads them.
    expect(onA.sum(METRICS.requests.name)).toBe(5);

    const b = new TestReader();
    expect(monitor.setMeterProvider(new MeterProvider({ readers: [b] }))).toBe(true);
    expect(monitor.meter).not.toBe(providerA.getMeter('@infersignal/core'));
    serve(1);
    const onB = await collect(b);
    expect(onB.value(METRICS.queueCapacity.name)).toBe(5);
    expect(onB.count(METRICS.queueWait.name)).toBe(1);
    expect(onB.sum(METRICS.requests.name)).toBe(6);
    // A gets nothing new: its histogram keeps its 3, its callback is gone (the counter's last total stays).
    const again = await collect(a);
    expect(again.count(METRICS.queueWait.name)).toBe(3);
    expect(again.sum(METRICS.requests.name)).toBe(5);
  });
});
