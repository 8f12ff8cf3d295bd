import type { Llama } from 'node-llama-cpp';
import { watchAsyncMemory, type DeviceMemoryHandle, type Monitor } from './glue';
import type { VramWatchOptions } from './types';

/** One VRAM source per Llama instance (its figures are per process), shared by the models on it. */
const vramWatches = new WeakMap<Llama, { handle: DeviceMemoryHandle; users: number }>();

/**
 * VRAM where llama.cpp runs on a GPU: allocated = what node-llama-cpp accounts for its models and contexts
 * (`getLlamaMemoryUsage().gpuVram`), reserved = VRAM in use on the device (`getVramState().used`, every
 * process) unless `reserved` is given. A growing gap is memory llama.cpp's accounting does not explain.
 */
export function watchVram(monitor: Monitor, llama: Llama, options: VramWatchOptions = {}): DeviceMemoryHandle {
  const existing = vramWatches.get(llama);
  if (existing) {
    existing.users++;
    return sharedHandle(llama, existing);
  }
  const handle = watchAsyncMemory(
    monitor,
    async () => {
      const [usage, state] = await Promise.all([llama.getLlamaMemoryUsage(), llama.getVramState()]);
      return { allocated: usage.gpuVram, reserved: options.reserved ? options.reserved() : state.used };
    },
    { source: options.source ?? 'llama-vram', intervalMs: options.intervalMs },
  );
  const watch = { handle, users: 1 };
  vramWatches.set(llama, watch);
  return sharedHandle(llama, watch);
}

function sharedHandle(llama: Llama, watch: { handle: DeviceMemoryHandle; users: number }): DeviceMemoryHandle {
  let stopped = false;
  return {
    sample: () => watch.handle.sample(),
    stop: () => {
      if (stopped) return;
      stopped = true;
      if (--watch.users === 0) {
        watch.handle.stop();
        vramWatches.delete(llama);
      }
    },
  };
}
