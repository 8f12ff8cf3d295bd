import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS } from '@infersignal/core';
import { createGpuSampler, type GpuSampler } from '@infersignal/gpu';
import { compileFakeNvml, hasCompiler } from './fake-nvml/compile';
import {
  GiB,
  MiB,
  foreignPids,
  recordingLogger,
  setupMonitor,
  tempDir,
  writeNvmlConfig,
  type FakeDevice,
} from './helpers';

const compiler = hasCompiler();
if (!compiler)
  console.log('[gpu] skipping the fake-NVML tests: no C compiler (`cc`) on PATH to build test/fake-nvml/fake_nvml.c');

const UUID0 = 'GPU-11111111-2222-3333-4444-555555555555';
const UUID1 = 'GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee';
const pid = process.pid;

function device0(over: Partial<FakeDevice> = {}): FakeDevice {
  return {
    uuid: UUID0,
    total: 80 * GiB,
    free: 60 * GiB,
    used: 19 * GiB + 512 * MiB,
    reserved: 512 * MiB,
    util: 37,
    procs: [
      [pid, 6 * GiB + 123],
      [4242, GiB],
    ],
    ...over,
  };
}
function device1(over: Partial<FakeDevice> = {}): FakeDevice {
  return {
    uuid: UUID1,
    total: 40 * GiB,
    free: 39 * GiB,
    used: 768 * MiB,
    reserved: 256 * MiB,
    util: 0,
    procs: [],
    ...over,
  };
}

describe.skipIf(!compiler)('NVML through koffi, against the fake libnvidia-ml.so.1', () => {
  let lib: string;
  let libNoV2: string;
  let dir: { dir: string; remove: () => void };
  let config: string;
  let log: string;
  let sampler: GpuSampler | undefined;

  beforeAll(() => {
    lib = compileFakeNvml();
    libNoV2 = compileFakeNvml(['FAKE_NVML_NO_MEMORY_V2']);
    dir = tempDir('infersignal-gpu-nvml-');
    config = join(dir.dir, 'nvml.conf');
    log = join(dir.dir, 'calls.log');
    process.env.FAKE_NVML_CONFIG = config;
    process.env.FAKE_NVML_LOG = log;
  });
  afterAll(() => {
    delete process.env.FAKE_NVML_CONFIG;
    delete process.env.FAKE_NVML_LOG;
    dir.remove();
  });
  beforeEach(() => writeFileSync(log, ''));
  afterEach(() => {
    sampler?.close();
    sampler = undefined;
  });

  const calls = () => readFileSync(log, 'utf8').split('\n').filter(Boolean);

  it('exports each device figure through the OTel SDK exactly as the library reports it', async () => {
    writeNvmlConfig(config, { devices: [device0(), device1()] });
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, { libraryPath: lib, intervalMs: 0, nvidiaSmiPath: false, logger });

    expect(sampler.status).toBe('nvml');
    expect(sampler.reason).toBeUndefined();
    expect(messages).toEqual([]);
    expect(sampler.attribution).toBe('process');
    expect(sampler.reserved()).toBe(6 * GiB + 123);
    expect(sampler.devices().map(({ at: _at, ...d }) => d)).toEqual([
      {
        index: 0,
        uuid: UUID0,
        totalBytes: 80 * GiB,
        usedBytes: 19 * GiB + 512 * MiB,
        freeBytes: 60 * GiB,
        driverReservedBytes: 512 * MiB,
        utilization: 0.37,
        processes: 2,
        processBytes: 6 * GiB + 123,
      },
      {
        index: 1,
        uuid: UUID1,
        totalBytes: 40 * GiB,
        usedBytes: 768 * MiB,
        freeBytes: 39 * GiB,
        driverReservedBytes: 256 * MiB,
        utilization: 0,
        processes: 0,
        processBytes: undefined,
      },
    ]);

    let m = await t.collect();
    const d0 = { [ATTR.deviceIndex]: 0, [ATTR.deviceUuid]: UUID0 };
    const d1 = { [ATTR.deviceIndex]: 1, [ATTR.deviceUuid]: UUID1 };
    expect(m.value(METRICS.gpuMemoryLimit.name, d0)).toBe(85_899_345_920);
    expect(m.value(METRICS.gpuMemoryUsed.name, d0)).toBe(20_937_965_568);
    expect(m.value(METRICS.gpuMemoryFree.name, d0)).toBe(64_424_509_440);
    expect(m.value(METRICS.gpuMemoryReservedDriver.name, d0)).toBe(536_870_912);
    expect(m.value(METRICS.gpuMemoryProcess.name, d0)).toBe(6_442_450_944 + 123);
    expect(m.value(METRICS.gpuUtilization.name, d0)).toBe(0.37);
    expect(m.value(METRICS.gpuMemoryLimit.name, d1)).toBe(42_949_672_960);
    expect(m.value(METRICS.gpuMemoryUsed.name, d1)).toBe(805_306_368);
    expect(m.value(METRICS.gpuUtilization.name, d1)).toBe(0);
    // This process holds nothing on GPU 1: no figure rather than a made-up 0.
    expect(m.points(METRICS.gpuMemoryProcess.name)).toHaveLength(1);
    expect(m.metric(METRICS.gpuMemoryUsed.name)?.descriptor.unit).toBe('By');

    // The next sample moves the gauges; the collect itself calls no NVML function.
    writeNvmlConfig(config, {
      devices: [device0({ used: 30 * GiB, free: 49 * GiB + 512 * MiB, procs: [[pid, 16 * GiB]] }), device1()],
    });
    await sampler.sample();
    writeFileSync(log, '');
    m = await t.collect();
    expect(calls()).toEqual([]);
    expect(m.value(METRICS.gpuMemoryUsed.name, d0)).toBe(30 * GiB);
    expect(m.value(METRICS.gpuMemoryFree.name, d0)).toBe(49 * GiB + 512 * MiB);
    expect(m.value(METRICS.gpuMemoryProcess.name, d0)).toBe(16 * GiB);
    expect(sampler.reserved()).toBe(16 * GiB);
    expect(sampler.stats()).toMatchObject({ samples: 2, failures: 0, consecutiveFailures: 0 });
  });

  it('calls the NVML entry points in order, with the v2 memory struct, and shuts NVML down on close', async () => {
    writeNvmlConfig(config, { devices: [device0()] });
    const t = setupMonitor();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      logger: recordingLogger().logger,
    });
    expect(calls()).toEqual([
      'nvmlInit_v2',
      'nvmlDeviceGetCount_v2',
      'nvmlDeviceGetHandleByIndex_v2',
      'nvmlDeviceGetUUID',
      'nvmlDeviceGetMemoryInfo_v2',
      'nvmlDeviceGetUtilizationRates',
      'nvmlDeviceGetComputeRunningProcesses_v3',
    ]);
    sampler.close();
    sampler.close();
    expect(calls().filter((c) => c === 'nvmlShutdown')).toHaveLength(1);
    expect(sampler.reserved()).toBeUndefined();
    expect((await t.collect()).points(METRICS.gpuMemoryUsed.name)).toHaveLength(0);
  });

  it('falls back to nvmlDeviceGetMemoryInfo (v1) when v2 is refused, and does not retry v2', async () => {
    writeNvmlConfig(config, { devices: [device0({ rc: { memory_v2: 25 } })] });
    const t = setupMonitor();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      logger: recordingLogger().logger,
    });
    await sampler.sample();
    const memoryCalls = calls().filter((c) => c.startsWith('nvmlDeviceGetMemoryInfo'));
    expect(memoryCalls).toEqual(['nvmlDeviceGetMemoryInfo_v2', 'nvmlDeviceGetMemoryInfo', 'nvmlDeviceGetMemoryInfo']);
    // v1's `used` includes the driver-reserved memory, and there is no separate figure.
    const [d] = sampler.devices();
    expect(d).toMatchObject({ usedBytes: 20 * GiB, driverReservedBytes: undefined, totalBytes: 80 * GiB });
    const m = await t.collect();
    expect(m.value(METRICS.gpuMemoryUsed.name)).toBe(20 * GiB);
    expect(m.points(METRICS.gpuMemoryReservedDriver.name)).toHaveLength(0);
  });

  it('uses v1 when the library has no nvmlDeviceGetMemoryInfo_v2 symbol (driver before R510)', () => {
    writeNvmlConfig(config, { devices: [device0()] });
    const t = setupMonitor();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: libNoV2,
      intervalMs: 0,
      nvidiaSmiPath: false,
      logger: recordingLogger().logger,
    });
    expect(sampler.status).toBe('nvml');
    expect(calls().filter((c) => c.startsWith('nvmlDeviceGetMemoryInfo'))).toEqual(['nvmlDeviceGetMemoryInfo']);
    expect(sampler.devices()[0]).toMatchObject({ usedBytes: 20 * GiB, driverReservedBytes: undefined });
  });

  it('grows the process buffer on NVML_ERROR_INSUFFICIENT_SIZE and keeps the larger size', async () => {
    const others: [number, number][] = Array.from({ length: 39 }, (_, i) => [100_000 + i, MiB * (i + 1)]);
    writeNvmlConfig(config, { devices: [device0({ procs: [...others, [pid, 3 * GiB + 7]] })] });
    const t = setupMonitor();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      logger: recordingLogger().logger,
    });
    const procCalls = () => calls().filter((c) => c === 'nvmlDeviceGetComputeRunningProcesses_v3').length;
    // 40 processes, 32 slots at first: INSUFFICIENT_SIZE, then a retry that fits.
    expect(procCalls()).toBe(2);
    expect(sampler.reserved()).toBe(3 * GiB + 7);
    expect(sampler.devices()[0]!.processes).toBe(40);
    writeFileSync(log, '');
    await sampler.sample();
    expect(procCalls()).toBe(1);
  });

  it('retries when the first process query answers INSUFFICIENT_SIZE (processes started in between)', () => {
    writeNvmlConfig(config, { devices: [device0({ rc: { procs_first: 7 } })] });
    const t = setupMonitor();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      logger: recordingLogger().logger,
    });
    expect(calls().filter((c) => c === 'nvmlDeviceGetComputeRunningProcesses_v3')).toHaveLength(2);
    expect(sampler.reserved()).toBe(6 * GiB + 123);
  });

  it('container: PID not among NVML processes → one warning, device-level memory labelled source=device', async () => {
    const [host1, host2] = foreignPids(2) as [number, number];
    writeNvmlConfig(config, {
      devices: [
        device0({
          procs: [
            [host1, 5 * GiB],
            [host2, GiB],
          ],
        }),
      ],
    });
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      logger,
      allocated: () => 4 * GiB,
    });
    await sampler.sample();
    await sampler.sample();
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain(`PID ${pid}`);
    expect(messages[0]).toContain('PID namespace');
    expect(messages[0]).toContain('infersignal.memory.source=device');
    expect(sampler.attribution).toBe('device');
    expect(sampler.reserved()).toBe(19 * GiB + 512 * MiB);
    t.monitor.tick();
    let m = await t.collect();
    expect(m.value(METRICS.memoryReserved.name, { [ATTR.memorySource]: 'device' })).toBe(19 * GiB + 512 * MiB);
    expect(m.value(METRICS.memoryAllocated.name, { [ATTR.memorySource]: 'device' })).toBe(4 * GiB);
    // No per-process figure is invented for this process.
    expect(m.points(METRICS.gpuMemoryProcess.name)).toHaveLength(0);
    expect(Object.keys(t.monitor.snapshot().deviceMemory)).toEqual(['device']);

    // The process shows up after all (it was another tenant's memory): back to its own figure, its own label.
    writeNvmlConfig(config, {
      devices: [
        device0({
          procs: [
            [host1, 5 * GiB],
            [pid, 2 * GiB],
          ],
        }),
      ],
    });
    await sampler.sample();
    t.monitor.tick();
    expect(sampler.attribution).toBe('process');
    expect(sampler.reserved()).toBe(2 * GiB);
    m = await t.collect();
    expect(m.value(METRICS.memoryReserved.name, { [ATTR.memorySource]: 'nvml:0' })).toBe(2 * GiB);
    expect(Object.keys(t.monitor.snapshot().deviceMemory)).toEqual(['nvml:0']);
    expect(messages).toHaveLength(1);
  });

  it('a GPU shared with a process we can see (same PID namespace) is not mistaken for a container', async () => {
    // The parent (the test runner) stands for another inference server on the same host.
    writeNvmlConfig(config, { devices: [device0({ procs: [[process.ppid, 5 * GiB]] })] });
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      logger,
      allocated: () => 0,
    });
    expect(sampler.attribution).toBeUndefined();
    expect(sampler.reserved()).toBe(0);
    expect(messages).toEqual([]);
    writeNvmlConfig(config, {
      devices: [
        device0({
          procs: [
            [process.ppid, 5 * GiB],
            [pid, 3 * GiB],
          ],
        }),
      ],
    });
    await sampler.sample();
    expect(sampler.attribution).toBe('process');
    expect(sampler.reserved()).toBe(3 * GiB);
    expect(Object.keys(t.monitor.snapshot().deviceMemory)).toEqual(['nvml:0']);
  });

  it('a process list with no process at all means this process holds 0 bytes', () => {
    writeNvmlConfig(config, { devices: [device0({ procs: [] })] });
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, { libraryPath: lib, intervalMs: 0, nvidiaSmiPath: false, logger });
    expect(sampler.reserved()).toBe(0);
    expect(sampler.attribution).toBeUndefined();
    expect(messages).toEqual([]);
  });

  it('a lost GPU is counted as an internal error while the other keeps reporting; all lost → no figures, backoff', async () => {
    writeNvmlConfig(config, { devices: [device0(), device1({ rc: { memory_v2: 15 } })] });
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, { libraryPath: lib, intervalMs: 100, nvidiaSmiPath: false, logger });
    expect(sampler.devices().map((d) => d.index)).toEqual([0]);
    expect(t.monitor.snapshot().internalErrors).toBe(1);
    expect(t.warnings.join('\n')).toContain('GPU is lost');

    writeNvmlConfig(config, { devices: [device0({ rc: { memory_v2: 15 } }), device1({ rc: { memory_v2: 15 } })] });
    await sampler.sample();
    expect(sampler.devices()).toEqual([]);
    expect(sampler.reserved()).toBeUndefined();
    expect(sampler.stats()).toMatchObject({ samples: 1, failures: 1, consecutiveFailures: 1, nextDelayMs: 200 });
    await sampler.sample();
    expect(sampler.stats()).toMatchObject({ failures: 2, consecutiveFailures: 2, nextDelayMs: 400 });
    expect(messages.filter((msg) => msg.includes('sample failed'))).toHaveLength(1);
    expect((await t.collect()).points(METRICS.gpuMemoryUsed.name)).toHaveLength(0);

    writeNvmlConfig(config, { devices: [device0(), device1()] });
    await sampler.sample();
    expect(sampler.stats()).toMatchObject({ samples: 2, consecutiveFailures: 0, nextDelayMs: 100 });
    expect(sampler.devices()).toHaveLength(2);
  });

  it('samples on its own unref()d timer', async () => {
    writeNvmlConfig(config, { devices: [device0()] });
    const t = setupMonitor();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 10,
      nvidiaSmiPath: false,
      logger: recordingLogger().logger,
    });
    for (let i = 0; i < 200 && sampler.stats().samples < 4; i++) await new Promise((r) => setTimeout(r, 10));
    expect(sampler.stats().samples).toBeGreaterThanOrEqual(4);
    // Each sample's main-thread time is measured (how short it is belongs to `pnpm bench:gpu`, not to a unit test).
    expect(sampler.stats().lastSampleMs).toBeGreaterThan(0);
    sampler.close();
    const after = sampler.stats().samples;
    await new Promise((r) => setTimeout(r, 50));
    expect(sampler.stats().samples).toBe(after);
  });

  it('honours devices and caps the labelled devices at maxDevices, saying so once', async () => {
    writeNvmlConfig(config, { devices: [device0(), device1(), device1({ uuid: 'GPU-third' })] });
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      logger,
      maxDevices: 2,
    });
    await sampler.sample();
    expect(sampler.devices().map((d) => d.index)).toEqual([0, 1]);
    expect(messages).toEqual(['infersignal/gpu: 3 GPUs found; sampling the first 2 (maxDevices)']);
    expect((await t.collect()).points(METRICS.gpuMemoryLimit.name)).toHaveLength(2);
    sampler.close();

    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 0,
      nvidiaSmiPath: false,
      logger,
      devices: [2, 5],
    });
    expect(sampler.devices().map((d) => [d.index, d.uuid])).toEqual([[2, 'GPU-third']]);
    expect(messages[1]).toBe('infersignal/gpu: device index(es) 5 not present (found 0, 1, 2); skipped');
  });

  it('finds the library through INFERSIGNAL_NVML_PATH', () => {
    writeNvmlConfig(config, { devices: [device0()] });
    process.env.INFERSIGNAL_NVML_PATH = lib;
    try {
      sampler = createGpuSampler(setupMonitor().monitor, {
        intervalMs: 0,
        nvidiaSmiPath: false,
        logger: recordingLogger().logger,
      });
      expect(sampler.status).toBe('nvml');
    } finally {
      delete process.env.INFERSIGNAL_NVML_PATH;
    }
  });

  it('NVML_ERROR_DRIVER_NOT_LOADED from nvmlInit_v2 without nvidia-smi: unavailable, said once, nothing exported', async () => {
    writeNvmlConfig(config, { devices: [device0()], rc: { init: 9 } });
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: lib,
      intervalMs: 10,
      nvidiaSmiPath: false,
      logger,
      allocated: () => GiB,
    });
    expect(sampler.status).toBe('unavailable');
    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain('nvmlInit_v2 failed: Driver Not Loaded (9)');
    expect(calls()).toEqual(['nvmlInit_v2']);
    await sampler.sample();
    t.monitor.tick();
    expect(sampler.reserved()).toBeUndefined();
    const m = await t.collect();
    expect(
      m.names().filter((name) => name.startsWith('infersignal.gpu.') || name.startsWith('infersignal.device.')),
    ).toEqual([]);
  });

  it('rejects bad options naming the field', () => {
    const { monitor } = setupMonitor();
    const bad: [object, string][] = [
      [{ intervalMs: -1 }, 'options.intervalMs'],
      [{ maxDevices: 0 }, 'options.maxDevices'],
      [{ devices: [0, -1] }, 'options.devices'],
      [{ libraryPath: '' }, 'options.libraryPath'],
      [{ intervalMS: 10 }, 'options.intervalMS'],
      [{ allocated: 5 }, 'options.allocated'],
    ];
    for (const [options, field] of bad) {
      let error: unknown;
      try {
        createGpuSampler(monitor, options as never);
      } catch (e) {
        error = e;
      }
      expect(error, field).toBeInstanceOf(InferSignalConfigError);
      expect((error as InferSignalConfigError).field).toBe(field);
    }
  });
});
