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
});
