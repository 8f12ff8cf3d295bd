import type { Attributes } from '@opentelemetry/api';
import { ATTR, METRICS, type Monitor } from '@infersignal/core';
import type { Gauge, GaugeObserver, Signal, SignalContext } from '@infersignal/core/signals';
import type { DeviceSample } from './types';

/** What the gauges read: a sampler's devices as of its last sample. */
export interface DeviceSource {
  current(): readonly DeviceSample[];
}

/**
 * The per-device gauges (used, free, total, driver-reserved, this
 * process's memory, utilization) of every sampler of one monitor, a signal
 * like any other: observed from the last sample at export time, so
 * collecting costs a read of a few numbers, never an NVML call. Attribute
 * sets are one per device (index, uuid), so at most maxDevices per sampler.
 * Levels come from core's device-memory signal (fed by the sampler), so
 * this one only exports.
 */
class GpuSignal implements Signal {
  readonly name = 'gpu';
  readonly sources = new Set<DeviceSource>();
  private readonly gauges: Record<'used' | 'free' | 'total' | 'driverReserved' | 'process' | 'utilization', Gauge>;
  // Built once per (index, uuid), not per export.
  private readonly attributes = new Map<string, Attributes>();

  constructor(ctx: SignalContext) {
    this.gauges = {
      used: ctx.gauge(METRICS.gpuMemoryUsed),
      free: ctx.gauge(METRICS.gpuMemoryFree),
      total: ctx.gauge(METRICS.gpuMemoryLimit),
      driverReserved: ctx.gauge(METRICS.gpuMemoryReservedDriver),
      process: ctx.gauge(METRICS.gpuMemoryProcess),
      utilization: ctx.gauge(METRICS.gpuUtilization),
    };
  }

  private attributesOf(sample: DeviceSample): Attributes {
    const key = `${sample.index}|${sample.uuid}`;
    let attributes = this.attributes.get(key);
    if (attributes === undefined) {
      attributes = { [ATTR.deviceIndex]: sample.index, [ATTR.deviceUuid]: sample.uuid };
      // Bounded by the devices a machine has; a cap guards against a driver that renames them.
      if (this.attributes.size < 256) this.attributes.set(key, attributes);
    }
    return attributes;
  }

  observe(observer: GaugeObserver): void {
    const g = this.gauges;
    for (const source of this.sources) {
      for (const sample of source.current()) {
        const attrs = this.attributesOf(sample);
        observer.observe(g.used, sample.usedBytes, attrs);
        observer.observe(g.free, sample.freeBytes, attrs);
        observer.observe(g.total, sample.totalBytes, attrs);
        if (sample.driverReservedBytes !== undefined)
          observer.observe(g.driverReserved, sample.driverReservedBytes, attrs);
        if (sample.processBytes !== undefined) observer.observe(g.process, sample.processBytes, attrs);
        if (sample.utilization !== undefined) observer.observe(g.utilization, sample.utilization, attrs);
      }
    }
  }
}

const signals = new WeakMap<Monitor, GpuSignal>();

/** Adds a sampler's devices to the monitor's `gpu` signal; the returned function takes them out. */
export function registerDeviceGauges(monitor: Monitor, source: DeviceSource): () => void {
  let signal = signals.get(monitor);
  if (signal === undefined) {
    signal = monitor.register((ctx) => new GpuSignal(ctx));
    signals.set(monitor, signal);
  }
  signal.sources.add(source);
  const registered = signal;
  return () => {
    registered.sources.delete(source);
  };
}
