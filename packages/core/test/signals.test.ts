import type { Histogram } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '../src/index';
import { setup } from './helpers';

describe('streaming outcomes', () => {
  function runStreams(total: number, cancelled: number) {
    const t = setup();
    for (let i = 0; i < total; i++) {
      const stream = t.monitor.stream('llama');
      t.advance(40);
      stream.token();
      t.advance(10);
      stream.token(2);
      stream.end(i < cancelled ? 'cancelled' : 'completed');
    }
    t.monitor.tick();
    return t;
  }

  it('1 cancelled of 150 streams (0.67 %) raises the 0.5 % alert', async () => {
    const t = runStreams(150, 1);
    const alerts = t.alerts.filter((a) => a.signal === 'stream_interruptions');
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ level: 'warn', threshold: 0.005, labels: { model: 'llama' } });
    expect(alerts[0].value).toBeCloseTo(1 / 150, 9);
    const metrics = await t.collect();
    expect(metrics.sum(METRICS.streams.name, { [ATTR.outcome]: 'cancelled' })).toBe(1);
    expect(metrics.sum(METRICS.streams.name, { [ATTR.outcome]: 'completed' })).toBe(149);
    expect(metrics.points<number>(METRICS.streamInterruptedRatio.name)[0].value).toBeCloseTo(1 / 150, 9);
  });

  it('1 cancelled of 300 streams (0.33 %) does not alert', () => {
    const t = runStreams(300, 1);
    expect(t.alerts.filter((a) => a.signal === 'stream_interruptions')).toHaveLength(0);
  });

  it('below minSamples nothing is judged: 1 of 3 does not alert', () => {
    const t = runStreams(3, 1);
    expect(t.alerts).toHaveLength(0);
    expect(t.monitor.snapshot().streams.llama.interruptedRatio).toBe(0);
  });

  it('records TTFT once per stream and one time-per-output-token sample', async () => {
    const t = runStreams(10, 0);
    const metrics = await t.collect();
    const [ttft] = metrics.points<Histogram>(METRICS.timeToFirstToken.name);
    expect(ttft.value.count).toBe(10);
    expect(ttft.value.sum).toBeCloseTo(0.4, 9);
    const [tpot] = metrics.points<Histogram>(METRICS.timePerOutputToken.name);
    // 3 tokens, last one 10 ms after the first → 5 ms per token after the first.
    expect(tpot.value.count).toBe(10);
    expect(tpot.value.sum).toBeCloseTo(0.05, 9);
    expect(metrics.sum(METRICS.streamTokens.name)).toBe(30);
  });

  it('a stream tied to a ticket measures TTFT from arrival, and ends once', async () => {
    const t = setup();
    const ticket = t.monitor.queue('q').enqueue('m');
    t.advance(100);
    ticket.start();
    const stream = ticket.stream();
    t.advance(20);
    stream.token();
    stream.end('completed');
    stream.end('cancelled');
    const metrics = await t.collect();
    expect(metrics.points<Histogram>(METRICS.timeToFirstToken.name)[0].value.sum).toBeCloseTo(0.12, 9);
    expect(metrics.sum(METRICS.streams.name)).toBe(1);
    expect(metrics.sum(METRICS.streams.name, { [ATTR.outcome]: 'completed' })).toBe(1);
  });
});

describe('model load / reload', () => {
  it('a reload at 3.5× the baseline raises exactly one spike alert; a normal one recovers', async () => {
    const t = setup();
    const load = (ms: number, kind: 'load' | 'reload') =>
      t.monitor.modelLoad('resnet', kind, async () => {
        t.advance(ms);
        return 'session';
      });
    await expect(load(2000, 'load')).resolves.toBe('session');
    await load(2100, 'reload');
    await load(1900, 'reload');
    expect(t.alerts).toHaveLength(0);
    await load(7000, 'reload'); // baseline = median(2.0, 2.1, 1.9) = 2.0 → 3.5×
    const spikes = t.alerts.filter((a) => a.signal === 'model_load');
    expect(spikes).toHaveLength(1);
    expect(spikes[0]).toMatchObject({ level: 'warn', labels: { model: 'resnet' } });
    expect(spikes[0].value).toBeCloseTo(7, 9);
    expect(spikes[0].threshold).toBeCloseTo(6, 9);
    expect(spikes[0].details).toMatchObject({ kind: 'reload' });
    expect(spikes[0].details?.baselineSeconds).toBeCloseTo(2, 9);
    await load(2050, 'reload');
    expect(t.alerts.filter((a) => a.signal === 'model_load').map((a) => a.level)).toEqual(['warn', 'ok']);
    const metrics = await t.collect();
    expect(metrics.sum(METRICS.modelLoadSpikes.name)).toBe(1);
    const reloads = metrics.points<Histogram>(METRICS.modelLoadDuration.name, {
      [ATTR.loadKind]: 'reload',
      [ATTR.outcome]: 'success',
    });
    expect(reloads[0].value.count).toBe(4);
    expect(reloads[0].value.sum).toBeCloseTo(2.1 + 1.9 + 7 + 2.05, 9);
  });

  it('a configured baseline is used from the first load', async () => {
    const t = setup({ thresholds: { modelLoad: { baselineSeconds: { bert: 1 } } } });
    await t.monitor.modelLoad('bert', 'load', () => {
      t.advance(4000);
    });
    expect(t.alerts.map((a) => a.signal)).toEqual(['model_load']);
  });

  it('records a failed load with outcome error and rethrows the same error', async () => {
    const t = setup();
    const failure = new Error('ENOENT: model.onnx');
    await expect(t.monitor.modelLoad('m', 'load', () => Promise.reject(failure))).rejects.toBe(failure);
    const metrics = await t.collect();
    expect(metrics.points<Histogram>(METRICS.modelLoadDuration.name, { [ATTR.outcome]: 'error' })[0].value.count).toBe(
      1,
    );
    expect(t.monitor.snapshot().models.m).toMatchObject({ failures: 1, loads: 0, loading: 0 });
  });
});

describe('device memory', () => {
  const GB = 1e9;

  it('reserved 10 GB with 3 GB allocated → fragmentation 0.7 → alert, exported as gauges', async () => {
    const t = setup();
    const handle = t.monitor.deviceMemory({
      allocated: () => 3 * GB,
      reserved: () => 10 * GB,
      intervalMs: 0,
      source: 'gpu0',
    });
    handle.sample();
    const alerts = t.alerts.filter((a) => a.signal === 'gpu_fragmentation');
    expect(alerts).toHaveLength(1);
    expect(alerts[0].value).toBeCloseTo(0.7, 9);
    const metrics = await t.collect();
    expect(
      metrics.points<number>(METRICS.memoryFragmentation.name, { [ATTR.memorySource]: 'gpu0' })[0].value,
    ).toBeCloseTo(0.7, 9);
    expect(metrics.points<number>(METRICS.memoryReserved.name)[0].value).toBe(10 * GB);
    expect(metrics.points<number>(METRICS.memoryAllocated.name)[0].value).toBe(3 * GB);
  });

  it('a linearly growing gap trips the drift detector within the window', () => {
    const t = setup({ thresholds: { deviceMemory: { driftWindowSamples: 30 } } });
    let reserved = 4 * GB;
    const handle = t.monitor.deviceMemory({ allocated: () => 3 * GB, reserved: () => reserved, intervalMs: 0 });
    let trippedAt = -1;
    for (let i = 0; i < 30; i++) {
      handle.sample();
      if (trippedAt < 0 && t.alerts.some((a) => a.signal === 'memory_drift')) trippedAt = i;
      reserved += 50e6;
      t.advance(1000);
    }
    expect(trippedAt).toBe(29); // the first moment the window is full
    const snapshot = t.monitor.snapshot().deviceMemory.default;
    expect(snapshot.drifting).toBe(true);
    expect(snapshot.gapGrowthBytesPerSecond).toBeCloseTo(50e6, 0);
  });

  it('a flat noisy gap does not trip the drift detector', () => {
    const t = setup({ thresholds: { deviceMemory: { driftWindowSamples: 30 } } });
    let seed = 7;
    const noise = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5) * 200e6;
    const handle = t.monitor.deviceMemory({ allocated: () => 3 * GB, reserved: () => 4 * GB + noise(), intervalMs: 0 });
    for (let i = 0; i < 120; i++) {
      handle.sample();
      t.advance(1000);
    }
    expect(t.alerts.filter((a) => a.signal === 'memory_drift')).toHaveLength(0);
  });

  it('allocated growing with the gap flat (a leak of blocks that fill their segments) trips the drift detector', () => {
    const t = setup({ thresholds: { deviceMemory: { driftWindowSamples: 30 } } });
    let allocated = 3 * GB;
    // Each 20 MB leaked fills a 20 MB segment: reserved follows allocated exactly.
    const handle = t.monitor.deviceMemory({ allocated: () => allocated, reserved: () => allocated, intervalMs: 0 });
    let trippedAt = -1;
    for (let i = 0; i < 30; i++) {
      handle.sample();
      if (trippedAt < 0 && t.alerts.some((a) => a.signal === 'memory_drift')) trippedAt = i;
      allocated += 20e6;
      t.advance(1000);
    }
    expect(trippedAt).toBe(29);
    const alert = t.alerts.find((a) => a.signal === 'memory_drift')!;
    expect(alert.message).toContain('allocated memory');
    expect(alert.value).toBeCloseTo(20e6, 0);
    expect(alert.details).toMatchObject({ of: 'allocated', samples: 30 });
    const snapshot = t.monitor.snapshot().deviceMemory.default;
    expect(snapshot.drifting).toBe(true);
    expect(snapshot.gapGrowthBytesPerSecond).toBeCloseTo(0, 0);
  });

  it('a source registered with allocatedDriftAlert: false judges only the gap (a KV cache filling up)', () => {
    const t = setup({ thresholds: { deviceMemory: { driftWindowSamples: 30 } } });
    let allocated = 1 * GB;
    const handle = t.monitor.deviceMemory({
      allocated: () => allocated,
      reserved: () => allocated,
      intervalMs: 0,
      allocatedDriftAlert: false,
    });
    for (let i = 0; i < 60; i++) {
      handle.sample();
      allocated += 20e6;
      t.advance(1000);
    }
    expect(t.alerts.filter((a) => a.signal === 'memory_drift')).toHaveLength(0);
    expect(() =>
      t.monitor.deviceMemory({ allocated: () => 0, reserved: () => 0, allocatedDriftAlert: 'no' as never }),
    ).toThrow(/options\.allocatedDriftAlert/);
  });

  it('allocated that moves with the requests but does not grow does not trip the drift detector', () => {
    const t = setup({ thresholds: { deviceMemory: { driftWindowSamples: 30 } } });
    let seed = 11;
    const noise = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 1 * GB;
    const handle = t.monitor.deviceMemory({ allocated: () => 3 * GB + noise(), reserved: () => 5 * GB, intervalMs: 0 });
    for (let i = 0; i < 120; i++) {
      handle.sample();
      t.advance(1000);
    }
    expect(t.alerts.filter((a) => a.signal === 'memory_drift')).toHaveLength(0);
  });

  it('sources that return undefined or throw produce no data and no invented zeros', async () => {
    const t = setup();
    t.monitor
      .deviceMemory({
        allocated: () => undefined,
        reserved: () => {
          throw new Error('nvml gone');
        },
        intervalMs: 0,
      })
      .sample();
    const metrics = await t.collect();
    expect(metrics.points(METRICS.memoryReserved.name)).toHaveLength(0);
    expect(metrics.points(METRICS.memoryFragmentation.name)).toHaveLength(0);
    expect(metrics.sum(METRICS.internalErrors.name, { [ATTR.errorSource]: 'deviceMemory.reserved' })).toBe(1);
  });
});
