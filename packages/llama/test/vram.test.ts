import type { Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchVram } from '../src/vram';
import { cpuLlama, monitorFor, until } from './helpers';

// The GPU path runs here on the CPU build: the same node-llama-cpp calls, which answer 0 without a GPU.
// What a GPU would report is not tested on these machines.
describe('VRAM source (node-llama-cpp memory API, CPU build)', () => {
  let llama: Llama;
  beforeAll(async () => {
    ({ llama } = await cpuLlama());
  });
  afterAll(async () => {
    await llama.dispose();
  });

  it('reads getLlamaMemoryUsage() as allocated and getVramState().used as reserved, refreshed off the request path', async () => {
    const t = monitorFor({ clock: undefined });
    const handle = watchVram(t.monitor, llama, { intervalMs: 20 });
    try {
      const [usage, state] = await Promise.all([llama.getLlamaMemoryUsage(), llama.getVramState()]);
      await until(
        () => {
          handle.sample();
          return t.monitor.snapshot().deviceMemory['llama-vram']?.allocated !== null;
        },
        2000,
        'a VRAM sample',
      );
      expect(t.monitor.snapshot().deviceMemory['llama-vram']).toMatchObject({
        allocated: usage.gpuVram,
        reserved: state.used,
        fragmentation: null, // nothing reserved on a CPU build: no ratio, no alert
      });
    } finally {
      handle.stop();
      await t.close();
    }
  });

  it('one source per Llama instance, shared by its models, gone when the last stops; reserved can come from elsewhere', async () => {
    const t = monitorFor({ clock: undefined });
    try {
      const a = watchVram(t.monitor, llama, { intervalMs: 20, reserved: () => 4096 });
      const b = watchVram(t.monitor, llama);
      await until(
        () => {
          a.sample();
          return t.monitor.snapshot().deviceMemory['llama-vram']?.reserved === 4096;
        },
        2000,
        'the given reserved figure',
      );
      expect(Object.keys(t.monitor.snapshot().deviceMemory)).toEqual(['llama-vram']);
      a.stop();
      a.stop(); // idempotent: b still holds it
      expect(Object.keys(t.monitor.snapshot().deviceMemory)).toEqual(['llama-vram']);
      b.stop();
      expect(t.monitor.snapshot().deviceMemory).toEqual({});
    } finally {
      await t.close();
    }
  });
});
