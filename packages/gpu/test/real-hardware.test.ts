import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ATTR, METRICS } from '@infersignal/core';
import { createGpuSampler } from '@infersignal/gpu';
import { findOnPath } from '../src/nvidia-smi';
import { MiB, recordingLogger, setupMonitor } from './helpers';

/** Whether the real libnvidia-ml.so.1 loads and initializes here; otherwise why not. */
function probeRealNvml(): { ok: true } | { ok: false; reason: string } {
  const path = process.env.INFERSIGNAL_NVML_PATH || 'libnvidia-ml.so.1';
  try {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const lib = koffi.load(path);
    try {
      const rc = lib.func('int nvmlInit_v2()')() as number;
      if (rc !== 0) return { ok: false, reason: `${path} loaded but nvmlInit_v2 returned ${rc} (no usable driver)` };
      lib.func('int nvmlShutdown()')();
      return { ok: true };
    } finally {
      lib.unload();
    }
  } catch (error) {
    return { ok: false, reason: `${path} is not loadable here (${(error as Error).message})` };
  }
}

const probe = probeRealNvml();
if (!probe.ok) console.log(`[gpu] skipping the real-hardware NVML test: ${probe.reason}`);

describe('real NVIDIA GPU (runs only where libnvidia-ml.so.1 loads)', () => {
  it.skipIf(!probe.ok)(
    'reads every GPU through NVML, exports the same figures, and agrees with nvidia-smi',
    async () => {
      const t = setupMonitor();
      const { messages, logger } = recordingLogger();
      const sampler = createGpuSampler(t.monitor, { intervalMs: 0, nvidiaSmiPath: false, logger });
      try {
        expect(sampler.status).toBe('nvml');
        expect(messages).toEqual([]);
        const timings: number[] = [];
        for (let i = 0; i < 20; i++) {
          await sampler.sample();
          timings.push(sampler.stats().lastSampleMs);
        }
        timings.sort((a, b) => a - b);
        const devices = sampler.devices();
        console.log(
          `[gpu] real NVML: ${devices.length} GPU(s); one sample median ${timings[10]!.toFixed(3)} ms, max ${timings[19]!.toFixed(3)} ms of main thread`,
        );
        expect(devices.length).toBeGreaterThan(0);
        const m = await t.collect();
        for (const d of devices) {
          expect(d.uuid).toMatch(/^(GPU|MIG)-/);
          expect(d.totalBytes).toBeGreaterThan(0);
          expect(d.usedBytes + d.freeBytes).toBeLessThanOrEqual(d.totalBytes);
          if (d.utilization !== undefined) expect(d.utilization).toBeGreaterThanOrEqual(0);
          const attrs = { [ATTR.deviceIndex]: d.index, [ATTR.deviceUuid]: d.uuid };
          expect(m.value(METRICS.gpuMemoryLimit.name, attrs)).toBe(d.totalBytes);
          expect(m.value(METRICS.gpuMemoryUsed.name, attrs)).toBe(d.usedBytes);
        }
        const smi = findOnPath('nvidia-smi');
        if (smi) {
          // nvidia-smi prints total memory in whole MiB; NVML's bytes must round to the same number.
          const out = execFileSync(smi, ['--query-gpu=index,uuid,memory.total', '--format=csv,noheader,nounits'], {
            encoding: 'utf8',
          });
          for (const line of out.trim().split('\n')) {
            const [index, uuid, total] = line.split(',').map((s) => s.trim());
            const d = devices.find((x) => x.index === Number(index));
            if (!d) continue;
            expect(d.uuid).toBe(uuid);
            expect(Math.floor(d.totalBytes / MiB)).toBe(Number(total));
          }
        } else {
          console.log('[gpu] nvidia-smi not on PATH: cross-check against it skipped');
        }
      } finally {
        sampler.close();
      }
    },
  );
});
