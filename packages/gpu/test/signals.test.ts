import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { createGpuSampler, type GpuSampler } from '@infersignal/gpu';
import { compileFakeNvml, hasCompiler } from './fake-nvml/compile';
import { GiB, setupMonitor, tempDir, writeNvmlConfig } from './helpers';

const compiler = hasCompiler();
if (!compiler)
  console.log('[gpu] skipping the fragmentation/drift tests: no C compiler (`cc`) on PATH to build the fake NVML');

const MB = 1_000_000;
const pid = process.pid;

/**
 * The sampler only provides the `reserved` source (this process's memory as
 * NVML lists it); core's deviceMemory owns the fragmentation and drift math.
 * These tests drive the whole chain: fake driver → koffi → sampler → core
 * detectors → alert events and exported gauges.
 */
describe.skipIf(!compiler)('GPU memory signals fed by the NVML sampler', () => {
  let lib: string;
  let dir: { dir: string; remove: () => void };
  let config: string;
  let sampler: GpuSampler | undefined;

  beforeAll(() => {
    lib = compileFakeNvml();
    dir = tempDir('infersignal-gpu-signals-');
    config = join(dir.dir, 'nvml.conf');
    process.env.FAKE_NVML_CONFIG = config;
  });
  afterAll(() => {
    delete process.env.FAKE_NVML_CONFIG;
    dir.remove();
  });
  afterEach(() => {
    sampler?.close();
    sampler = undefined;
  });

  function setProcessBytes(bytes: number): void {
    writeNvmlConfig(config, {
      devices: [
        {
          uuid: 'GPU-0',
          total: 80 * GiB,
          free: 80 * GiB - bytes - GiB,
          used: bytes + GiB,
          reserved: 0,
          util: 50,
          procs: [[pid, bytes]],
        },
      ],
    });
  }

  it('reserved growing 50 MB per sample against flat allocated trips memory_drift when the window fills', async () => {
    const t = setupMonitor({ thresholds: { deviceMemory: { driftWindowSamples: 10 } } });
    setProcessBytes(3000 * MB);
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      allocated: () => 2000 * MB,
    });
    const firstDrift: number[] = [];
    for (let k = 0; k < 15; k++) {
      setProcessBytes(3000 * MB + k * 50 * MB);
      t.advance(1000);
      await sampler.sample();
      t.monitor.tick();
      if (t.alerts.some((a) => a.signal === 'memory_drift' && a.level !== 'ok') && firstDrift.length === 0)
        firstDrift.push(k);
    }
    // The 10th sample (k = 9) fills the window: growth 450 MB ≥ 5 % of 3.45 GB, R² = 1.
    expect(firstDrift).toEqual([9]);
    const drift = t.alerts.filter((a) => a.signal === 'memory_drift');
    expect(drift).toHaveLength(1);
    expect(drift[0]!.level).toBe('warn');
    expect(drift[0]!.value).toBeCloseTo(50 * MB, 0);
    expect(drift[0]!.labels).toEqual({ source: 'nvml:0' });
    expect(t.alerts.filter((a) => a.signal === 'gpu_fragmentation')).toHaveLength(0);
    const m = await t.collect();
    expect(m.value(METRICS.memoryReserved.name, { [ATTR.memorySource]: 'nvml:0' })).toBe(3700 * MB);
    expect(m.value(METRICS.memoryGapGrowth.name, { [ATTR.memorySource]: 'nvml:0' })).toBeCloseTo(50 * MB, 0);
    expect(t.monitor.snapshot().deviceMemory['nvml:0']).toMatchObject({
      reserved: 3700 * MB,
      allocated: 2000 * MB,
      drifting: true,
    });
  });

  it('a flat reserved figure with noise does not trip drift', async () => {
    const t = setupMonitor({ thresholds: { deviceMemory: { driftWindowSamples: 10 } } });
    setProcessBytes(3000 * MB);
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      allocated: () => 2000 * MB,
    });
    const noise = [3, -7, 12, -2, 0, 9, -11, 4, -5, 6, -8, 1, 10, -3, 2];
    for (const n of noise) {
      setProcessBytes(3000 * MB + n * MB);
      t.advance(1000);
      await sampler.sample();
      t.monitor.tick();
    }
    expect(t.alerts.filter((a) => a.signal === 'memory_drift')).toEqual([]);
    expect(t.monitor.snapshot().deviceMemory['nvml:0']!.drifting).toBe(false);
  });

  it('reserved 10 GB with 3 GB allocated → fragmentation 0.7 → gpu_fragmentation alert; back to 4 GB → ok', async () => {
    const t = setupMonitor();
    setProcessBytes(10_000 * MB);
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      allocated: () => 3_000 * MB,
    });
    t.advance(1000);
    await sampler.sample();
    t.monitor.tick();
    const alerts = t.alerts.filter((a) => a.signal === 'gpu_fragmentation');
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ level: 'warn', threshold: 0.65, labels: { source: 'nvml:0' } });
    expect(alerts[0]!.value).toBeCloseTo(0.7, 12);
    const m = await t.collect();
    expect(m.value(METRICS.memoryFragmentation.name, { [ATTR.memorySource]: 'nvml:0' })).toBeCloseTo(0.7, 12);
    expect(m.value(METRICS.memoryReserved.name, { [ATTR.memorySource]: 'nvml:0' })).toBe(10_000 * MB);
    expect(m.value(METRICS.memoryAllocated.name, { [ATTR.memorySource]: 'nvml:0' })).toBe(3_000 * MB);

    setProcessBytes(4_000 * MB);
    t.advance(1000);
    await sampler.sample();
    t.monitor.tick();
    const after = t.alerts.filter((a) => a.signal === 'gpu_fragmentation');
    expect(after.map((a) => a.level)).toEqual(['warn', 'ok']);
    expect(after[1]!.value).toBeCloseTo(0.25, 12);
  });

  it('an allocated source that throws is counted, not thrown', async () => {
    const t = setupMonitor();
    setProcessBytes(10_000 * MB);
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      allocated: () => {
        throw new Error('framework counter broke');
      },
    });
    await sampler.sample();
    expect(() => t.monitor.tick()).not.toThrow();
    expect(t.monitor.snapshot().internalErrors).toBe(1);
    expect(t.alerts).toEqual([]);
  });
});
