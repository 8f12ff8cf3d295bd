import type { Attributes, BatchObservableCallback, Meter, ObservableGauge } from '@opentelemetry/api';
import { ATTR, METRICS, type InstrumentSpec } from '@infersignal/core';
import type { DeviceSample } from './types';

export interface DeviceGauges {
  remove(): void;
}

/**
 * The per-device gauges (used, free, total, driver-reserved, this
 * process's memory, utilization), observed from the last sample at export
 * time: collecting costs a read of a few numbers, never an NVML call.
 * Attribute sets are one per device (index, uuid), so at most maxDevices.
 */
export function registerDeviceGauges(meter: Meter, current: () => readonly DeviceSample[]): DeviceGauges {
  const gauge = (spec: InstrumentSpec): ObservableGauge =>
    meter.createObservableGauge(spec.name, { unit: spec.unit, description: spec.description });
  const used = gauge(METRICS.gpuMemoryUsed);
  const free = gauge(METRICS.gpuMemoryFree);
  const total = gauge(METRICS.gpuMemoryTotal);
  const driverReserved = gauge(METRICS.gpuMemoryReservedDriver);
  const process = gauge(METRICS.gpuMemoryProcess);
  const utilization = gauge(METRICS.gpuUtilization);

  // Built once per (index, uuid), not per export.
  const attributes = new Map<number, { uuid: string; attributes: Attributes }>();
  const attributesOf = (sample: DeviceSample): Attributes => {
    let entry = attributes.get(sample.index);
    if (!entry || entry.uuid !== sample.uuid) {
      entry = { uuid: sample.uuid, attributes: { [ATTR.deviceIndex]: sample.index, [ATTR.deviceUuid]: sample.uuid } };
      attributes.set(sample.index, entry);
    }
    return entry.attributes;
  };

  const callback: BatchObservableCallback = (result) => {
    for (const sample of current()) {
      const attrs = attributesOf(sample);
      result.observe(used, sample.usedBytes, attrs);
      result.observe(free, sample.freeBytes, attrs);
      result.observe(total, sample.totalBytes, attrs);
      if (sample.driverReservedBytes !== undefined) result.observe(driverReserved, sample.driverReservedBytes, attrs);
      if (sample.processBytes !== undefined) result.observe(process, sample.processBytes, attrs);
      if (sample.utilization !== undefined) result.observe(utilization, sample.utilization, attrs);
    }
  };
  const observables = [used, free, total, driverReserved, process, utilization];
  meter.addBatchObservableCallback(callback, observables);
  return {
    remove() {
      meter.removeBatchObservableCallback(callback, observables);
    },
  };
}
