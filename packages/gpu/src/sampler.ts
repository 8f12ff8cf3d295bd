import { ATTR, type DeviceMemoryHandle, type Monitor } from '@infersignal/core';
import { attribute } from './attribution';
import { registerDeviceGauges } from './gauges';
import { findOnPath } from './nvidia-smi';
import { resolveOptions, type ResolvedOptions } from './options';
import { openNvmlSource, openSmiSource, type GpuSource, type Selection, type SourceResult } from './sources';
import type { DeviceSample, GpuSampler, GpuSamplerOptions, GpuSamplerStats, MemoryAttribution } from './types';

const PREFIX = 'infersignal/gpu:';
const RESOLVED = Promise.resolve();

/**
 * Picks the source once, at creation: NVML in-process (koffi), else the
 * nvidia-smi CLI when it is on PATH, else nothing (reported once; no figure
 * is ever invented). Then samples on an unref()'d timer that re-arms itself
 * after each sample, backing off after failures, and feeds core through
 * observable gauges and, when `allocated` is given, `monitor.deviceMemory`.
 */
export function createGpuSampler(monitor: Monitor, options: GpuSamplerOptions = {}): GpuSampler {
  const o = resolveOptions(options);
  const { source, reason } = openSource(monitor, o);
  if (!source) {
    o.logger.warn(`${PREFIX} GPU metrics unavailable (${reason}); no GPU figures will be reported.`);
    return unavailableSampler(reason);
  }
  if (reason)
    o.logger.warn(
      `${PREFIX} NVML unavailable (${reason}); falling back to nvidia-smi, which forks a process on every sample.`,
    );
  return new Sampler(monitor, o, source, reason);
}

function openSource(monitor: Monitor, o: ResolvedOptions): { source?: GpuSource; reason?: string } {
  const noticed = new Set<string>();
  const selection: Selection = {
    devices: o.devices,
    maxDevices: o.maxDevices,
    notice: (message) => {
      if (noticed.has(message)) return;
      noticed.add(message);
      o.logger.warn(`${PREFIX} ${message}`);
    },
    deviceError: (error) => monitor.internalError('gpu.nvml', error),
  };
  let nvmlReason: string;
  try {
    return { source: openNvmlSource(o.libraryPath, selection) };
  } catch (error) {
    nvmlReason = `NVML: ${(error as Error).message}`;
  }
  if (o.nvidiaSmiPath === false) return { reason: `${nvmlReason}; nvidia-smi fallback disabled` };
  const smi = o.nvidiaSmiPath ?? findOnPath('nvidia-smi');
  if (!smi) return { reason: `${nvmlReason}; nvidia-smi not found on PATH` };
  return { source: openSmiSource(smi, o.nvidiaSmiTimeoutMs, selection), reason: nvmlReason };
}

function unavailableSampler(reason: string | undefined): GpuSampler {
  return {
    status: 'unavailable',
    reason,
    attribution: undefined,
    memory: undefined,
    sample: () => RESOLVED,
    reserved: () => undefined,
    devices: () => [],
    stats: () => ({ samples: 0, failures: 0, consecutiveFailures: 0, nextDelayMs: 0, lastSampleMs: 0 }),
    close() {},
  };
}

class Sampler implements GpuSampler {
  readonly status: 'nvml' | 'nvidia-smi';
  attribution: MemoryAttribution | undefined;
  memory: DeviceMemoryHandle | undefined;
  private current: readonly DeviceSample[] = [];
  private reservedBytes: number | undefined;
  private readonly removeGauges: () => void;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private closed = false;
  /** Registration waits for the first NVML sample (it decides the label). */
  private ready = false;
  private warnedFailure = false;
  private warnedContainer = false;
  private readonly counts: GpuSamplerStats = {
    samples: 0,
    failures: 0,
    consecutiveFailures: 0,
    nextDelayMs: 0,
    lastSampleMs: 0,
  };

  constructor(
    private readonly monitor: Monitor,
    private readonly o: ResolvedOptions,
    private readonly source: GpuSource,
    readonly reason: string | undefined,
  ) {
    this.status = source.kind;
    this.counts.nextDelayMs = o.intervalMs;
    this.removeGauges = registerDeviceGauges(monitor, { current: () => this.current });
    if (source.kind === 'nvml') {
      // NVML answers in microseconds: take the first sample now, so the
      // figures (and whose memory they are) are known before registering.
      void this.sample();
      this.schedule(o.intervalMs);
    } else {
      this.schedule(0);
    }
    this.ready = true;
    this.register();
  }

  sample(): Promise<void> {
    if (this.closed) return RESOLVED;
    if (this.inFlight) return this.inFlight;
    let result: SourceResult | Promise<SourceResult>;
    try {
      result = this.source.read(process.pid);
    } catch (error) {
      result = { readings: [], error, mainThreadMs: 0 };
    }
    if (!(result instanceof Promise)) {
      this.apply(result);
      return RESOLVED;
    }
    const pending = result.then(
      (r) => this.apply(r),
      (error: unknown) => this.apply({ readings: [], error, mainThreadMs: 0 }),
    );
    this.inFlight = pending.finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private apply(result: SourceResult): void {
    if (this.closed) return;
    try {
      const c = this.counts;
      c.lastSampleMs = result.mainThreadMs;
      if (result.readings.length === 0) {
        // No stale figures: a failed sample clears what the gauges and core see.
        this.current = [];
        this.reservedBytes = undefined;
        c.failures++;
        c.consecutiveFailures++;
        c.nextDelayMs = Math.min(this.o.maxBackoffMs, Math.max(this.o.intervalMs, 1) * 2 ** c.consecutiveFailures);
        if (!this.warnedFailure) {
          this.warnedFailure = true;
          const why = result.error instanceof Error ? result.error.message : 'no selected GPU in the output';
          this.o.logger.warn(
            `${PREFIX} ${this.status} sample failed (${why}); backing off (next in ${c.nextDelayMs} ms, at most ${this.o.maxBackoffMs} ms).`,
          );
        }
        return;
      }
      c.samples++;
      c.consecutiveFailures = 0;
      c.nextDelayMs = this.o.intervalMs;
      this.current = result.readings.map((r) => r.sample);
      const previous = this.attribution;
      const next = attribute(result.readings, previous);
      this.attribution = next.attribution;
      this.reservedBytes = next.reserved;
      if (next.attribution === 'device' && !this.warnedContainer) {
        this.warnedContainer = true;
        this.o.logger.warn(
          `${PREFIX} this process (PID ${process.pid}) is not among the ${next.others} compute process(es) ${this.status} lists ` +
            `on GPU ${this.current.map((d) => d.index).join(', ')}: likely a container with its own PID namespace (the driver lists host PIDs). ` +
            `Reporting device-level used memory instead, labelled ${ATTR.memorySource}=device.`,
        );
      }
      if (next.attribution !== previous && (next.attribution === 'device' || previous === 'device')) this.register();
    } catch (error) {
      this.monitor.internalError('gpu.sample', error);
    }
  }

  /** (Re)registers with core's deviceMemory; the label says whose memory it is. */
  private register(): void {
    const allocated = this.o.allocated;
    if (!allocated || this.closed || !this.ready) return;
    this.memory?.stop();
    this.memory = this.monitor.deviceMemory({
      allocated,
      reserved: () => this.reservedBytes,
      intervalMs: this.o.intervalMs,
      source: this.attribution === 'device' ? 'device' : (this.o.source ?? this.source.label),
    });
  }

  private schedule(delayMs: number): void {
    if (this.closed || this.o.intervalMs === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.sample().then(() => this.schedule(this.counts.nextDelayMs));
    }, delayMs);
    this.timer.unref();
  }

  reserved(): number | undefined {
    return this.reservedBytes;
  }

  devices(): DeviceSample[] {
    return [...this.current];
  }

  stats(): GpuSamplerStats {
    return { ...this.counts };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.removeGauges();
    this.memory?.stop();
    this.current = [];
    this.reservedBytes = undefined;
    try {
      this.source.close();
    } catch (error) {
      this.monitor.internalError('gpu.close', error);
    }
  }
}
