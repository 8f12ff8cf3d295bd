/**
 * The GPU's device gauges (`gpu`), recorded by @infersignal/gpu's NVML
 * sampler (nvidia-smi where NVML is missing) as a registered signal. No
 * threshold or alert of their own: the device-memory signal judges the
 * memory a model runtime reports.
 */
import { ATTR } from '../attributes';
import { defineSignal } from '../definition';

const metrics = {
  gpuMemoryUsed: {
    name: 'infersignal.gpu.memory.used',
    type: 'gauge',
    unit: 'By',
    description: 'Device memory in use on the GPU (all processes), from NVML or nvidia-smi.',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  gpuMemoryFree: {
    name: 'infersignal.gpu.memory.free',
    type: 'gauge',
    unit: 'By',
    description: 'Free device memory on the GPU.',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  gpuMemoryLimit: {
    // `limit`, as the conventions' hw.gpu.memory.limit: a gauge whose name ends in `total` reads as a counter
    // to Prometheus (promtool refuses it where an exporter adds no unit suffix).
    name: 'infersignal.gpu.memory.limit',
    type: 'gauge',
    unit: 'By',
    description: 'Total device memory of the GPU (its limit).',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  gpuMemoryReservedDriver: {
    name: 'infersignal.gpu.memory.driver_reserved',
    type: 'gauge',
    unit: 'By',
    description: 'Device memory reserved by the driver and firmware (NVML v2 only).',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  gpuMemoryProcess: {
    name: 'infersignal.gpu.memory.process',
    type: 'gauge',
    unit: 'By',
    description: 'Device memory used by this process on the GPU (NVML per-process accounting).',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
  gpuUtilization: {
    name: 'infersignal.gpu.utilization',
    type: 'gauge',
    unit: '1',
    description: 'GPU compute utilization over the last sample period (0–1).',
    attributes: [ATTR.deviceIndex, ATTR.deviceUuid],
  },
} as const;

export const gpuSignal = defineSignal({
  name: 'gpu',
  metrics,
  panels(k) {
    const job = k.select.job;
    const device = k.label(ATTR.deviceIndex);
    const by = `instance, ${device}`;
    const of = (spec: (typeof metrics)[keyof typeof metrics], legend: string) => ({
      expr: `max by (${by}) (${k.metric(spec)}{${job}})`,
      legend: `${legend} {{instance}} gpu {{${device}}}`,
    });
    k.row('GPU');
    k.add({
      title: 'GPU memory: used, this process, driver reserved, free, total',
      description:
        'NVML (nvidia-smi where NVML is missing): what every process holds, what this one holds, what the driver keeps, and what is left for a load or a larger batch.',
      w: 12,
      unit: 'bytes',
      targets: [
        of(metrics.gpuMemoryUsed, 'used'),
        of(metrics.gpuMemoryProcess, 'this process'),
        of(metrics.gpuMemoryReservedDriver, 'driver reserved'),
        of(metrics.gpuMemoryFree, 'free'),
        of(metrics.gpuMemoryLimit, 'total'),
      ],
    });
    k.add({
      title: 'GPU utilization',
      description:
        'Share of the last sample period the GPU ran a kernel: near 1 the device, not the queue, is the limit.',
      w: 12,
      unit: 'percentunit',
      targets: [of(metrics.gpuUtilization, '')],
      fieldConfig: { defaults: { min: 0, max: 1 } },
    });
  },
});
