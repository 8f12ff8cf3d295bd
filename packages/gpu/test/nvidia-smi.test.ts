import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { createGpuSampler, type GpuSampler } from '@infersignal/gpu';
import { parseAppsCsv, parseGpuCsv } from '../src/nvidia-smi';
import { MiB, foreignPids, installFakeNvidiaSmi, recordingLogger, setupMonitor, tempDir } from './helpers';

const pid = process.pid;
const UUID0 = 'GPU-5e1f0000-0000-0000-0000-000000000000';
const UUID1 = 'GPU-5e1f1111-1111-1111-1111-111111111111';
const GPU_CSV = `0, ${UUID0}, 81559, 20480, 61079, 37\n1, ${UUID1}, 40960, 0, 40960, [N/A]\n`;
const APPS_CSV = `${UUID0}, ${pid}, 6144\n${UUID0}, 4242, 1024\n`;

describe('nvidia-smi fallback (fake nvidia-smi script on PATH, NVML not loadable)', () => {
  let dir: { dir: string; remove: () => void };
  let originalPath: string | undefined;
  let sampler: GpuSampler | undefined;
  const file = (name: string) => join(dir.dir, name);
  const missingLib = '/nonexistent/infersignal-test/libnvidia-ml.so.1';

  beforeAll(() => {
    dir = tempDir('infersignal-gpu-smi-');
    installFakeNvidiaSmi(dir.dir);
    originalPath = process.env.PATH;
    process.env.PATH = `${dir.dir}:${originalPath ?? ''}`;
  });
  afterAll(() => {
    process.env.PATH = originalPath;
    dir.remove();
  });
  beforeEach(() => {
    writeFileSync(file('gpu.csv'), GPU_CSV);
    writeFileSync(file('apps.csv'), APPS_CSV);
    writeFileSync(file('calls.log'), '');
    rmSync(file('exit'), { force: true });
    rmSync(file('sleep'), { force: true });
    rmSync(file('pids'), { force: true });
  });
  afterEach(() => {
    sampler?.close();
    sampler = undefined;
  });

  it('reads both CSV queries into the same device figures and gauges, saying once why NVML is not used', async () => {
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, { libraryPath: missingLib, intervalMs: 0, logger });
    expect(sampler.status).toBe('nvidia-smi');
    expect(sampler.reason).toContain(missingLib);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/NVML unavailable .* falling back to nvidia-smi/);
    expect(sampler.devices()).toEqual([]);

    await sampler.sample();
    expect(readFileSync(file('calls.log'), 'utf8').split('\n').filter(Boolean).sort()).toEqual([
      '--query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits',
      '--query-gpu=index,uuid,memory.total,memory.used,memory.free,utilization.gpu --format=csv,noheader,nounits',
    ]);
    expect(sampler.devices().map(({ at: _at, ...d }) => d)).toEqual([
      {
        index: 0,
        uuid: UUID0,
        totalBytes: 81559 * MiB,
        usedBytes: 20480 * MiB,
        freeBytes: 61079 * MiB,
        driverReservedBytes: undefined,
        utilization: 0.37,
        processes: 2,
        processBytes: 6144 * MiB,
      },
      {
        index: 1,
        uuid: UUID1,
        totalBytes: 40960 * MiB,
        usedBytes: 0,
        freeBytes: 40960 * MiB,
        driverReservedBytes: undefined,
        utilization: undefined,
        processes: 0,
        processBytes: undefined,
      },
    ]);
    expect(sampler.reserved()).toBe(6144 * MiB);
    expect(sampler.attribution).toBe('process');

    const m = await t.collect();
    const d0 = { [ATTR.deviceIndex]: 0, [ATTR.deviceUuid]: UUID0 };
    expect(m.value(METRICS.gpuMemoryLimit.name, d0)).toBe(85_520_809_984);
    expect(m.value(METRICS.gpuMemoryUsed.name, d0)).toBe(21_474_836_480);
    expect(m.value(METRICS.gpuMemoryFree.name, d0)).toBe(64_045_973_504);
    expect(m.value(METRICS.gpuMemoryProcess.name, d0)).toBe(6_442_450_944);
    expect(m.value(METRICS.gpuUtilization.name, d0)).toBe(0.37);
    expect(m.value(METRICS.gpuMemoryLimit.name, { [ATTR.deviceIndex]: 1 })).toBe(40960 * MiB);
    // [N/A] utilization and no driver-reserved figure: nothing exported in their place.
    expect(m.points(METRICS.gpuUtilization.name)).toHaveLength(1);
    expect(m.points(METRICS.gpuMemoryReservedDriver.name)).toHaveLength(0);
    expect(messages).toHaveLength(1);
  });

  it('garbage output: no figures, one warning, delay doubling per failure; good output again recovers', async () => {
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: missingLib,
      intervalMs: 0,
      logger,
      allocated: () => 1024 * MiB,
      maxBackoffMs: 5000,
    });
    await sampler.sample();
    expect(sampler.reserved()).toBe(6144 * MiB);

    writeFileSync(file('gpu.csv'), 'Failed to initialize NVML: Driver/library version mismatch\n');
    await sampler.sample();
    expect(sampler.devices()).toEqual([]);
    expect(sampler.reserved()).toBeUndefined();
    expect(sampler.stats()).toMatchObject({ samples: 1, failures: 1, consecutiveFailures: 1, nextDelayMs: 2 });
    t.monitor.tick();
    const m = await t.collect();
    expect(m.points(METRICS.gpuMemoryUsed.name)).toHaveLength(0);
    expect(t.monitor.snapshot().deviceMemory['nvidia-smi']!.reserved).toBeNull();

    writeFileSync(file('gpu.csv'), GPU_CSV);
    writeFileSync(file('apps.csv'), `${UUID0}, not-a-pid, 12\n`);
    await sampler.sample();
    expect(sampler.stats()).toMatchObject({ failures: 2, consecutiveFailures: 2, nextDelayMs: 4 });
    expect(messages.filter((msg) => msg.includes('sample failed'))).toEqual([
      'infersignal/gpu: nvidia-smi sample failed (unexpected nvidia-smi --query-gpu output: "Failed to initialize NVML: Driver/library version mismatch"); backing off (next in 2 ms, at most 5000 ms).',
    ]);

    writeFileSync(file('apps.csv'), APPS_CSV);
    await sampler.sample();
    expect(sampler.stats()).toMatchObject({ samples: 2, consecutiveFailures: 0, nextDelayMs: 0 });
    expect(sampler.reserved()).toBe(6144 * MiB);
  });

  it('a non-zero exit is a failure even with CSV on stdout; the backoff is capped', async () => {
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, { libraryPath: missingLib, intervalMs: 1000, logger, maxBackoffMs: 3000 });
    await sampler.sample();
    writeFileSync(file('exit'), '1');
    for (let i = 0; i < 4; i++) await sampler.sample();
    expect(sampler.devices()).toEqual([]);
    expect(sampler.stats()).toMatchObject({ failures: 4, consecutiveFailures: 4, nextDelayMs: 3000 });
    expect(messages.filter((msg) => msg.includes('nvidia-smi exited with code 1'))).toHaveLength(1);
  });

  it('a hung nvidia-smi is killed at the timeout and counted as a failure', async () => {
    writeFileSync(file('sleep'), '30');
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, { libraryPath: missingLib, intervalMs: 0, logger, nvidiaSmiTimeoutMs: 200 });
    const started = performance.now();
    await sampler.sample();
    expect(performance.now() - started).toBeLessThan(5000);
    expect(sampler.stats().failures).toBe(1);
    expect(messages.some((msg) => msg.includes('did not answer within 200 ms'))).toBe(true);
  });

  it('close() kills an nvidia-smi still running: none outlives its sampler', async () => {
    // Hangs far past the test's own timeout: only the close can end it in time.
    writeFileSync(file('sleep'), '120');
    writeFileSync(file('pids'), '');
    const t = setupMonitor();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: missingLib,
      intervalMs: 0,
      logger: recordingLogger().logger,
      nvidiaSmiTimeoutMs: 120_000,
    });
    const sampling = sampler.sample();
    const started = () => readFileSync(file('pids'), 'utf8').split('\n').filter(Boolean).map(Number);
    let pids: number[] = [];
    for (let i = 0; i < 500 && pids.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 10));
      pids = started();
    }
    expect(pids).toHaveLength(2);
    const alive = (p: number) => {
      try {
        process.kill(p, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(pids.every(alive)).toBe(true);
    sampler.close();
    // Signalled at once; gone once the kernel and Node's SIGCHLD handler are done (bounded, far under the hang).
    for (let i = 0; i < 500 && pids.some(alive); i++) await new Promise((r) => setTimeout(r, 10));
    expect(pids.filter(alive)).toEqual([]);
    await sampling;
    // A failure nobody is told about: the sampler is closed.
    expect(sampler.stats().failures).toBe(0);
  });

  it('samples on its timer off the request path; concurrent sample() calls share one run', async () => {
    const t = setupMonitor();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: missingLib,
      intervalMs: 20,
      logger: recordingLogger().logger,
    });
    for (let i = 0; i < 300 && sampler.stats().samples < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(sampler.stats().samples).toBeGreaterThanOrEqual(2);
    sampler.close();
    sampler = createGpuSampler(t.monitor, { libraryPath: missingLib, intervalMs: 0, logger: recordingLogger().logger });
    writeFileSync(file('calls.log'), '');
    await Promise.all([sampler.sample(), sampler.sample(), sampler.sample()]);
    expect(readFileSync(file('calls.log'), 'utf8').split('\n').filter(Boolean)).toHaveLength(2);
  });

  it('container: our PID absent from nvidia-smi apps → device-level figure, one warning', async () => {
    writeFileSync(file('apps.csv'), `${UUID0}, ${foreignPids(1)[0]}, 2048\n`);
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    sampler = createGpuSampler(t.monitor, {
      libraryPath: missingLib,
      intervalMs: 0,
      logger,
      devices: [0],
      allocated: () => 0,
    });
    await sampler.sample();
    await sampler.sample();
    expect(sampler.attribution).toBe('device');
    expect(sampler.reserved()).toBe(20480 * MiB);
    expect(messages.filter((msg) => msg.includes('PID namespace'))).toHaveLength(1);
    t.monitor.tick();
    expect((await t.collect()).value(METRICS.memoryReserved.name, { [ATTR.memorySource]: 'device' })).toBe(20480 * MiB);
  });

  it('parses withheld figures and rejects malformed lines', () => {
    expect(parseGpuCsv(`3, MIG-x, [N/A], [N/A], [N/A], [N/A]\n0, GPU-a, 10, 4, 6, 0\n`)).toEqual([
      { index: 0, uuid: 'GPU-a', totalBytes: 10 * MiB, usedBytes: 4 * MiB, freeBytes: 6 * MiB, utilization: 0 },
    ]);
    expect(() => parseGpuCsv('')).toThrow('listed no GPU');
    expect(() => parseGpuCsv('0, GPU-a, 10, 4, 6\n')).toThrow('unexpected nvidia-smi --query-gpu output');
    expect(() => parseGpuCsv('0, GPU-a, 10 MiB, 4, 6, 0\n')).toThrow('unexpected');
    expect(parseAppsCsv('')).toEqual([]);
    expect(parseAppsCsv('No running processes found\n')).toEqual([]);
    expect(parseAppsCsv('GPU-a, 12, [N/A]\n')).toEqual([{ gpuUuid: 'GPU-a', pid: 12, usedBytes: undefined }]);
    expect(() => parseAppsCsv('GPU-a, 12\n')).toThrow('unexpected nvidia-smi --query-compute-apps output');
  });
});
