import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGpuSampler } from '@infersignal/gpu';
import { recordingLogger, setupMonitor, tempDir } from './helpers';

describe('neither NVML nor nvidia-smi', () => {
  let empty: { dir: string; remove: () => void };
  let originalPath: string | undefined;

  beforeAll(() => {
    // PATH is an empty directory: no nvidia-smi, whatever the machine has.
    empty = tempDir('infersignal-gpu-empty-path-');
    originalPath = process.env.PATH;
    process.env.PATH = empty.dir;
  });
  afterAll(() => {
    process.env.PATH = originalPath;
    empty.remove();
  });

  it('library missing: one warning, no throw, no metrics, no core registration', async () => {
    const t = setupMonitor();
    const { messages, logger } = recordingLogger();
    const sampler = createGpuSampler(t.monitor, {
      libraryPath: '/nonexistent/libnvidia-ml.so.1',
      intervalMs: 5,
      logger,
      allocated: () => 123,
    });
    expect(sampler.status).toBe('unavailable');
    expect(sampler.reason).toMatch(
      /^NVML: \/nonexistent\/libnvidia-ml\.so\.1 could not be loaded: .*; nvidia-smi not found on PATH$/,
    );
    expect(messages).toEqual([
      `infersignal/gpu: GPU metrics unavailable (${sampler.reason}); no GPU figures will be reported.`,
    ]);

    await expect(sampler.sample()).resolves.toBeUndefined();
    await new Promise((r) => setTimeout(r, 30));
    t.monitor.tick();
    expect(sampler.reserved()).toBeUndefined();
    expect(sampler.devices()).toEqual([]);
    expect(sampler.memory).toBeUndefined();
    expect(sampler.stats().samples).toBe(0);
    const m = await t.collect();
    expect(
      m.names().filter((name) => name.startsWith('infersignal.gpu.') || name.startsWith('infersignal.device.')),
    ).toEqual([]);
    expect(t.monitor.snapshot().deviceMemory).toEqual({});
    expect(t.monitor.snapshot().internalErrors).toBe(0);
    expect(messages).toHaveLength(1);
    sampler.close();
  });

  it('without a logger option the notice goes to console.warn, once', () => {
    const original = console.warn;
    const seen: unknown[] = [];
    console.warn = (...args: unknown[]) => void seen.push(args);
    try {
      const sampler = createGpuSampler(setupMonitor().monitor, {
        libraryPath: '/nonexistent/libnvidia-ml.so.1',
        intervalMs: 0,
      });
      expect(sampler.status).toBe('unavailable');
      expect(seen).toHaveLength(1);
    } finally {
      console.warn = original;
    }
  });
});
