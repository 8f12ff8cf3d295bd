/**
 * Case 11: NVML absent, NVML failing mid-run (the fake libnvidia-ml.so.1 of
 * packages/gpu, compiled here), nvidia-smi printing garbage. The sampler
 * runs on its own timer while a real Express server serves requests: it
 * disables or backs off, exports no made-up figures, and the rest of the
 * SDK keeps counting every request.
 */
import { writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { METRICS, prometheusName, type Monitor } from '@infersignal/core';
import { start } from '@infersignal/node';
import { inferSignal } from '@infersignal/express';
import { createGpuSampler } from '@infersignal/gpu';
import { compileFakeNvml, hasCompiler } from '../../packages/gpu/test/fake-nvml/compile';
import { GiB, installFakeNvidiaSmi, tempDir, writeNvmlConfig, type FakeDevice } from '../../packages/gpu/test/helpers';
import { figure, httpRequest, monitorWithReader, pool, until, type Exported } from './helpers';
import { listenExpress, newExpress } from './servers';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const compiler = hasCompiler();
if (!compiler)
  console.log(
    '[reliability] case 11 NVML parts skipped: no C compiler (`cc`) to build packages/gpu/test/fake-nvml/fake_nvml.c',
  );

const GPU_NAMES = [
  METRICS.gpuMemoryUsed.name,
  METRICS.gpuMemoryLimit.name,
  METRICS.gpuMemoryFree.name,
  METRICS.gpuMemoryProcess.name,
  METRICS.gpuUtilization.name,
];
const gpuPoints = (e: Exported): number => GPU_NAMES.reduce((n, name) => n + e.points(name).length, 0);

async function serving(monitor: Monitor) {
  const app = newExpress();
  app.use(inferSignal(monitor, { queue: { name: 'http', capacity: 500 } }));
  app.get('/infer', (_req, res) => void res.json({ ok: true }));
  const server = await listenExpress(app);
  cleanup.push(() => server.close());
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  cleanup.push(() => agent.destroy());
  let sent = 0;
  let failed = 0;
  return {
    async load(n: number) {
      await pool(n, 8, async () => {
        sent++;
        if ((await httpRequest(`${server.url}/infer`, { agent })).status !== 200) failed++;
      });
    },
    sent: () => sent,
    failed: () => failed,
  };
}

describe('case 11: GPU sampling failures', () => {
  let dir: { dir: string; remove: () => void };
  let originalPath: string | undefined;
  beforeAll(() => {
    dir = tempDir('infersignal-reliability-gpu-');
    originalPath = process.env.PATH;
  });
  afterAll(() => {
    process.env.PATH = originalPath;
    delete process.env.FAKE_NVML_CONFIG;
    dir.remove();
  });

  it('NVML and nvidia-smi absent: disabled once, no figures, requests unaffected', async () => {
    const t = monitorWithReader();
    cleanup.push(() => t.close());
    const warnings: string[] = [];
    const sampler = createGpuSampler(t.monitor, {
      libraryPath: join(dir.dir, 'no-libnvidia-ml.so.1'),
      nvidiaSmiPath: false,
      intervalMs: 5,
      allocated: () => GiB,
      logger: { warn: (m) => warnings.push(m) },
    });
    cleanup.push(() => sampler.close());
    const http = await serving(t.monitor);
    await http.load(500);
    t.monitor.tick();
    expect(sampler.status).toBe('unavailable');
    expect(warnings).toHaveLength(1);
    expect(sampler.stats().samples).toBe(0);
    expect(sampler.reserved()).toBeUndefined();
    const exported = await t.collect();
    expect(gpuPoints(exported)).toBe(0);
    expect(t.monitor.snapshot().deviceMemory).toEqual({});
    expect(http.failed()).toBe(0);
    expect(exported.sum(METRICS.requests.name)).toBe(http.sent());
    expect(exported.sum(METRICS.internalErrors.name)).toBe(0);
    figure('11 NVML absent', {
      status: sampler.status,
      warnings: warnings.length,
      gpuDataPoints: 0,
      requests: http.sent(),
      failed: http.failed(),
    });
  });

  it.skipIf(!compiler)(
    'NVML returning errors mid-run: backs off, exports nothing in place of the lost figures, recovers',
    async () => {
      const lib = compileFakeNvml();
      const config = join(dir.dir, 'nvml.conf');
      process.env.FAKE_NVML_CONFIG = config;
      const good: FakeDevice = {
        uuid: 'GPU-00000000-1111-2222-3333-444444444444',
        total: 80 * GiB,
        free: 60 * GiB,
        used: 20 * GiB,
        reserved: 0,
        util: 50,
        procs: [[process.pid, 4 * GiB]],
      };
      writeNvmlConfig(config, { devices: [good] });
      // The shipped export path: start()'s Prometheus reader, scraped over HTTP.
      const s = start({
        serviceName: 'gpu',
        prometheus: { port: 0 },
        registerGlobals: false,
        detectorIntervalMs: 0,
        eventLoop: false,
        logger: { warn() {} },
      });
      cleanup.push(() => s.shutdown());
      const scrape = async (): Promise<string[]> => {
        const text = await (await fetch((await s.prometheus!.ready)!.url)).text();
        return text
          .split('\n')
          .filter(
            (l) =>
              !l.startsWith('#') &&
              (l.startsWith('infersignal_gpu_') || l.startsWith(prometheusName(METRICS.memoryReserved))),
          );
      };
      const t = { monitor: s.monitor, tick: () => s.monitor.tick() };
      const warnings: string[] = [];
      const sampler = createGpuSampler(t.monitor, {
        libraryPath: lib,
        nvidiaSmiPath: false,
        intervalMs: 5,
        maxBackoffMs: 200,
        allocated: () => GiB,
        logger: { warn: (m) => warnings.push(m) },
      });
      cleanup.push(() => sampler.close());
      expect(sampler.status).toBe('nvml');
      const http = await serving(t.monitor);
      await until(() => sampler.stats().samples >= 3, 5000, 'good samples');
      expect(sampler.reserved()).toBe(4 * GiB);
      t.tick();
      const before = await scrape();
      expect(before.filter((l) => l.startsWith('infersignal_gpu_memory_used')).length).toBe(1);

      // Mid-run, the driver starts answering NVML_ERROR_GPU_IS_LOST (15) for the memory query.
      writeNvmlConfig(config, { devices: [{ ...good, rc: { memory_v2: 15, memory: 15 } }] });
      const failuresBefore = sampler.stats().failures;
      await http.load(600);
      await until(() => sampler.stats().consecutiveFailures >= 4, 5000, 'failures');
      const during = sampler.stats();
      t.tick();
      const exportedDuring = await scrape();
      expect(during.failures - failuresBefore).toBeGreaterThanOrEqual(4);
      // Backed off: the delay doubled per failure, capped at maxBackoffMs.
      expect(during.nextDelayMs).toBeGreaterThanOrEqual(5 * 2 ** 3);
      expect(during.nextDelayMs).toBeLessThanOrEqual(200);
      // No made-up figures: nothing measured → nothing exported, nothing reported to core.
      expect(sampler.reserved()).toBeUndefined();
      expect(sampler.devices()).toEqual([]);
      // (OTel JS SDK 2.12 under cumulative temporality re-exports an observable gauge's last value for
      // an attribute set the callback no longer observes, with a fresh timestamp: see docs/reliability.md.)
      expect(exportedDuring, 'stale GPU figures exported while the GPU is lost').toEqual([]);
      expect(warnings.filter((w) => w.includes('sample failed'))).toHaveLength(1);

      // The rest of the SDK counted every request meanwhile.
      expect(http.failed()).toBe(0);
      expect(s.monitor.snapshot().queues.http.completed).toBe(http.sent());

      writeNvmlConfig(config, { devices: [good] });
      await until(() => sampler.stats().consecutiveFailures === 0, 5000, 'recovery');
      expect(sampler.reserved()).toBe(4 * GiB);
      figure('11 NVML errors mid-run', {
        failures: during.failures - failuresBefore,
        backoffMs: during.nextDelayMs,
        gpuDataPointsDuring: 0,
        requests: http.sent(),
        failed: http.failed(),
        recovered: 'yes',
      });
    },
  );

  it('nvidia-smi printing garbage: failures counted, backoff, no figures; requests unaffected', async () => {
    installFakeNvidiaSmi(dir.dir);
    writeFileSync(join(dir.dir, 'gpu.csv'), 'Failed to initialize NVML: Driver/library version mismatch\n');
    writeFileSync(join(dir.dir, 'apps.csv'), '\u0000\u0001garbage,,,\n');
    process.env.PATH = `${dir.dir}:${originalPath ?? ''}`;
    const t = monitorWithReader();
    cleanup.push(() => t.close());
    const warnings: string[] = [];
    const sampler = createGpuSampler(t.monitor, {
      libraryPath: join(dir.dir, 'no-libnvidia-ml.so.1'),
      intervalMs: 5,
      maxBackoffMs: 100,
      allocated: () => GiB,
      logger: { warn: (m) => warnings.push(m) },
    });
    cleanup.push(() => sampler.close());
    expect(sampler.status).toBe('nvidia-smi');
    const http = await serving(t.monitor);
    await http.load(300);
    await until(() => sampler.stats().failures >= 3, 5000, 'failures');
    t.monitor.tick();
    const exported = await t.collect();
    expect(sampler.stats().samples).toBe(0);
    expect(sampler.stats().nextDelayMs).toBeGreaterThanOrEqual(20);
    expect(gpuPoints(exported)).toBe(0);
    expect(t.monitor.snapshot().deviceMemory['nvidia-smi']).toMatchObject({ reserved: null, fragmentation: null });
    expect(http.failed()).toBe(0);
    expect(exported.sum(METRICS.requests.name)).toBe(http.sent());
    figure('11 nvidia-smi garbage', {
      failures: sampler.stats().failures,
      samples: 0,
      backoffMs: sampler.stats().nextDelayMs,
      warnings: warnings.length,
      requests: http.sent(),
      failed: http.failed(),
    });
  });
});
