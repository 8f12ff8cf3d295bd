/**
 * The device-memory signals of a memory source (a GPU allocator, a
 * runtime's pool): `gpu_fragmentation`, the share of reserved memory no
 * allocation uses, and `memory_drift`, a reserved − allocated gap (or an
 * allocated total) that keeps growing, the leak precursor.
 */
import { ATTR } from '../attributes';
import { defineSignal, type RuleKit } from '../definition';
import type { DeviceMemoryThresholds } from '../thresholds';

const metrics = {
  memoryAllocated: {
    name: 'infersignal.device.memory.allocated',
    type: 'gauge',
    unit: 'By',
    description: 'Device memory in live allocations (tensors) of this process.',
    attributes: [ATTR.memorySource],
  },
  memoryReserved: {
    name: 'infersignal.device.memory.reserved',
    type: 'gauge',
    unit: 'By',
    description: 'Device memory held by this process (allocator pools included).',
    attributes: [ATTR.memorySource],
  },
  memoryFragmentation: {
    name: 'infersignal.device.memory.fragmentation',
    type: 'gauge',
    unit: '1',
    description: '1 − allocated / reserved.',
    attributes: [ATTR.memorySource],
    feeds: 'deviceMemory.fragmentation',
  },
  memoryGapGrowth: {
    name: 'infersignal.device.memory.gap.growth',
    type: 'gauge',
    unit: 'By/s',
    description: 'Least-squares slope of (reserved − allocated) over the drift window.',
    attributes: [ATTR.memorySource],
    feeds: 'deviceMemory.driftMinGrowth',
  },
} as const;

/** The recorded reserved − allocated gap per process and memory source (the dashboard reads it too). */
function memoryGapRecord(k: Pick<RuleKit, 'recordName' | 'recordBase' | 'label'>): string {
  return k.recordName(
    ['job', 'instance', k.label(ATTR.memorySource)],
    k.recordBase(metrics.memoryReserved),
    `minus_${metrics.memoryAllocated.name.split('.').pop()}`,
  );
}

export const deviceMemorySignal = defineSignal({
  name: 'device_memory',
  metrics,
  thresholds: {
    group: 'deviceMemory',
    fields: {
      fragmentation: { default: 0.65, accepts: { type: 'number', min: 0, max: 1 } },
      fragmentationForSeconds: { default: 0, accepts: { type: 'number', min: 0 } },
      driftWindowSamples: { default: 60, accepts: { type: 'integer', min: 1, max: 10_000 } },
      driftMinGrowth: { default: 0.05, accepts: { type: 'number', min: 0, max: 1 } },
      driftMinR2: { default: 0.8, accepts: { type: 'number', min: 0, max: 1 } },
    },
  },
  alerts: [
    {
      name: 'InferSignalGpuFragmentation',
      signal: 'gpu_fragmentation',
      severity: 'warning',
      runbook: 'gpu-fragmentation',
      doc: '`max by (job, instance, infersignal_memory_source) (infersignal_device_memory_fragmentation_ratio) > 0.65`',
    },
    {
      name: 'InferSignalMemoryDrift',
      signal: 'memory_drift',
      severity: 'warning',
      runbook: 'memory-drift',
      doc: '`deriv(gap[30m]) * 1800 / reserved > 0.05` (gap = reserved − allocated)',
    },
  ],

  rules(k) {
    const d = k.thresholds.deviceMemory as unknown as DeviceMemoryThresholds;
    const o = k.options;
    const source = k.label(ATTR.memorySource);
    const keys = [...k.replicaKeys, source];
    const gap = memoryGapRecord(k);
    const reserved = `sum ${k.by(...keys)} (${k.metric(metrics.memoryReserved)})`;
    const where = `replica ${k.replica} ({{ $labels.job }}, source {{ $labels.${source} }})`;
    return {
      name: 'infersignal.device_memory',
      rules: [
        { record: gap, expr: `${reserved} - sum ${k.by(...keys)} (${k.metric(metrics.memoryAllocated)})` },
        k.alert(
          'InferSignalGpuFragmentation',
          `max ${k.by(...keys)} (${k.metric(metrics.memoryFragmentation)}) > ${d.fragmentation}`,
          k.hold(d.fragmentationForSeconds),
          `Device memory fragmentation above ${k.humanPercent(d.fragmentation)}`,
          `Fragmentation (1 - allocated / reserved) of ${where} is {{ $value | humanizePercentage }}, above ${k.humanPercent(d.fragmentation)} (thresholds.deviceMemory.fragmentation): the allocator holds memory no tensor uses; large allocations may fail although memory looks free.`,
        ),
        k.alert(
          'InferSignalMemoryDrift',
          `deriv(${gap}[${o.driftWindow}]) * ${o.driftWindowSeconds} / ${reserved} > ${d.driftMinGrowth}`,
          k.hold(0),
          'Reserved-minus-allocated device memory keeps growing',
          `The reserved - allocated gap of ${where} grew by {{ $value | humanizePercentage }} of reserved memory over ${o.driftWindow} (linear fit), above ${k.humanPercent(d.driftMinGrowth)} (thresholds.deviceMemory.driftMinGrowth): a leak precursor.`,
        ),
      ],
    };
  },

  panels(k) {
    const d = k.thresholds.deviceMemory as unknown as DeviceMemoryThresholds;
    const source = k.label(ATTR.memorySource);
    const job = k.select.job;
    const bySource = `instance, ${source}`;
    const gap = memoryGapRecord(k);
    k.row('Device memory');
    k.add({
      title: 'Allocated vs reserved',
      w: 8,
      unit: 'bytes',
      targets: [
        {
          expr: `sum by (${bySource}) (${k.metric(metrics.memoryAllocated)}{${job}})`,
          legend: `allocated {{instance}} {{${source}}}`,
        },
        {
          expr: `sum by (${bySource}) (${k.metric(metrics.memoryReserved)}{${job}})`,
          legend: `reserved {{instance}} {{${source}}}`,
        },
      ],
    });
    k.add({
      title: 'Fragmentation (1 − allocated / reserved)',
      description: 'Line: thresholds.deviceMemory.fragmentation.',
      w: 8,
      unit: 'percentunit',
      lines: [d.fragmentation],
      targets: [
        {
          expr: `max by (${bySource}) (${k.metric(metrics.memoryFragmentation)}{${job}})`,
          legend: `{{instance}} {{${source}}}`,
        },
      ],
      fieldConfig: { defaults: { min: 0, max: 1 } },
    });
    k.add({
      title: 'Reserved − allocated gap and its growth',
      description: `The gap (left) and its growth rate: Prometheus deriv over ${k.options.driftWindow} (rules) and the in-process least-squares slope.`,
      w: 8,
      unit: 'bytes',
      targets: [
        { expr: `${gap}{${job}}`, legend: `gap {{instance}} {{${source}}}` },
        { expr: `deriv(${gap}{${job}}[${k.options.driftWindow}])`, legend: `growth/s (deriv) {{instance}}` },
        {
          expr: `max by (${bySource}) (${k.metric(metrics.memoryGapGrowth)}{${job}})`,
          legend: `growth/s (in-process) {{instance}}`,
        },
      ],
    });
  },
});
