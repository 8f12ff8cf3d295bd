import type { DeviceMemoryHandle, Monitor } from '@infersignal/core';
import { checkOptionKeys } from '@infersignal/core/signals';
import type { TfRuntime } from './types';

/** Fields GPU backends add to `tf.memory()` (webgl: numBytesInGPUAllocated; webgpu: numBytesAllocatedInGPU). */
interface GpuMemoryInfo {
  numBytesInGPU?: number;
  numBytesInGPUAllocated?: number;
  numBytesAllocatedInGPU?: number;
}

export interface TfMemoryOptions {
  /** Reserved bytes from elsewhere (e.g. `@infersignal/gpu`'s per-process figure for tfjs-node-gpu). */
  reserved?: () => number | undefined;
  /** Sampling period (default core's 1000 ms; 0: only on `sample()`/`tick()`). */
  intervalMs?: number;
  /** Source label (default `tfjs:<backend>`). */
  source?: string;
}

/**
 * Memory sources read from `tf.memory()`. On a GPU backend that reports
 * its pool (webgl, webgpu): allocated = bytes of live GPU tensors,
 * reserved = bytes the backend holds on the GPU. Otherwise (cpu,
 * tensorflow): allocated = `numBytes` of live tensors and reserved is
 * unknown unless given (the tensorflow backend does not expose its
 * allocator's pool).
 */
function tfMemorySources(tf: Pick<TfRuntime, 'memory'>, reserved?: () => number | undefined) {
  return {
    allocated(): number | undefined {
      const info = tf.memory() as ReturnType<TfRuntime['memory']> & GpuMemoryInfo;
      return typeof info.numBytesInGPU === 'number' ? info.numBytesInGPU : info.numBytes;
    },
    reserved(): number | undefined {
      if (reserved) return reserved();
      const info = tf.memory() as GpuMemoryInfo;
      return info.numBytesInGPUAllocated ?? info.numBytesAllocatedInGPU;
    },
  };
}

/** Registers `tf.memory()` as a core device-memory source. One per process is enough: the figures are process-wide. */
export function watchTfMemory(
  monitor: Monitor,
  tf: Pick<TfRuntime, 'memory' | 'getBackend'>,
  options: TfMemoryOptions = {},
): DeviceMemoryHandle {
  checkOptionKeys(options, ['reserved', 'intervalMs', 'source']);
  const sources = tfMemorySources(tf, options.reserved);
  return monitor.deviceMemory({
    ...sources,
    intervalMs: options.intervalMs,
    source: options.source ?? `tfjs:${tf.getBackend()}`,
  });
}
