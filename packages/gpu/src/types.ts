import type { DeviceMemoryHandle, MonitorOptions } from '@infersignal/core';

/** Where warnings go: the monitor's logger shape. */
export type Logger = NonNullable<MonitorOptions['logger']>;

/** Where the figures come from: NVML in-process, the nvidia-smi CLI, or nowhere. */
type GpuSamplerStatus = 'nvml' | 'nvidia-smi' | 'unavailable';

/**
 * Whose memory `reserved()` reports: this process's own (NVML per-process
 * accounting), or the whole device's `used` because this process's PID is
 * not in the driver's list (a container with its own PID namespace).
 */
export type MemoryAttribution = 'process' | 'device';

/** One GPU as of the last sample. Bytes are exact integers from the driver. */
export interface DeviceSample {
  /** NVML / nvidia-smi device index. */
  readonly index: number;
  readonly uuid: string;
  readonly totalBytes: number;
  readonly usedBytes: number;
  readonly freeBytes: number;
  /** Memory the driver and firmware reserve (NVML v2 only; undefined with v1 or nvidia-smi). */
  readonly driverReservedBytes: number | undefined;
  /** Compute utilization over the driver's last period, 0–1; undefined when not supported (e.g. MIG). */
  readonly utilization: number | undefined;
  /** Compute processes the driver lists on this device; undefined when the query failed. */
  readonly processes: number | undefined;
  /** This process's device memory; undefined when its PID is not listed or the driver withholds it. */
  readonly processBytes: number | undefined;
  /** Epoch milliseconds (monitor-independent wall clock). */
  readonly at: number;
}

export interface GpuSamplerOptions {
  /** Sampling period in ms (default 1000). 0: no timer, call `sample()` yourself. */
  intervalMs?: number;
  /** Path of the NVML library (default env `INFERSIGNAL_NVML_PATH`, else `libnvidia-ml.so.1` from the loader path). */
  libraryPath?: string;
  /** Path of nvidia-smi for the fallback (default: looked up on PATH). `false` disables the fallback. */
  nvidiaSmiPath?: string | false;
  /** Time limit of one nvidia-smi run (default 5000 ms); a run past it is killed and counts as a failure. */
  nvidiaSmiTimeoutMs?: number;
  /** Device indices to sample (default: all, up to maxDevices). */
  devices?: readonly number[];
  /** Most devices sampled and labelled (default 16); the cap on the gauges' attribute sets. */
  maxDevices?: number;
  /**
   * Bytes in live allocations of this process (e.g. the framework's own
   * counter). When given, the sampler registers `monitor.deviceMemory` with
   * `reserved` = this process's device memory, which drives core's
   * fragmentation and drift signals.
   */
  allocated?: () => number | undefined;
  /** Label (`infersignal.memory.source`) of the deviceMemory registration (default `nvml:<indices>` / `nvidia-smi[:<indices>]`). */
  source?: string;
  /** Where the sampler's one-time notices go (default `console.warn`). */
  logger?: Logger;
  /** Longest delay between samples after repeated failures (default 60 000 ms). */
  maxBackoffMs?: number;
}

export interface GpuSamplerStats {
  /** Samples that completed with data. */
  samples: number;
  /** Samples that failed (nvidia-smi exit, timeout, garbage; NVML errors on every device). */
  failures: number;
  /** Failures since the last good sample; each one doubles the delay, up to maxBackoffMs. */
  consecutiveFailures: number;
  /** Delay before the next timed sample. */
  nextDelayMs: number;
  /** Main-thread time of the last sample in ms (NVML: the FFI calls; nvidia-smi: spawn + parse). */
  lastSampleMs: number;
}

export interface GpuSampler {
  readonly status: GpuSamplerStatus;
  /** Why the sampler is not using NVML (or is unavailable); undefined on the NVML path. */
  readonly reason: string | undefined;
  /** Whose memory `reserved()` reports; undefined until a sample shows a process on the GPU. */
  readonly attribution: MemoryAttribution | undefined;
  /** The core registration fed by this sampler (only when `allocated` was given). */
  readonly memory: DeviceMemoryHandle | undefined;
  /** Takes one sample now (never rejects). Concurrent calls share the sample in flight. */
  sample(): Promise<void>;
  /** This process's device memory in bytes, summed over the sampled devices; undefined when not measured. */
  reserved(): number | undefined;
  /** The devices as of the last sample (a fresh array; empty when nothing is measured). */
  devices(): DeviceSample[];
  stats(): GpuSamplerStats;
  /** Stops the timer, removes the gauges' callback, stops the core registration, shuts NVML down. Idempotent. */
  close(): void;
}
