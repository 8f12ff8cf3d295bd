import { SAMPLE_KEYS } from '../gauge-samples';
import type { ValueUnit } from './format';

interface LaneSeries {
  /** Key in a timeline point's `values`. */
  key: string;
  label: string;
  unit: ValueUnit;
  /** Drawn on its own 0–1 scale (dashed) instead of the lane's shared one. */
  ownScale?: boolean;
}

export interface LaneSpec {
  signal: string;
  title: string;
  series: LaneSeries[];
}

const memory: LaneSeries[] = [
  { key: SAMPLE_KEYS.memoryAllocated, label: 'allocated', unit: 'bytes' },
  { key: SAMPLE_KEYS.memoryReserved, label: 'reserved', unit: 'bytes' },
  { key: SAMPLE_KEYS.memoryFragmentation, label: 'fragmentation', unit: 'ratio', ownScale: true },
];

/**
 * The lanes the issue asks for, in this order. Each is drawn when the run
 * saw its signal (a level, an alert or a scraped value); the others are
 * listed once as "not reported", never drawn empty.
 */
export const STANDARD_LANES: readonly LaneSpec[] = [
  {
    signal: 'queue_wait',
    title: 'queue wait',
    series: [{ key: SAMPLE_KEYS.queueWaitMean, label: 'mean wait', unit: 'seconds' }],
  },
  {
    signal: 'queue_occupancy',
    title: 'queue occupancy',
    series: [{ key: SAMPLE_KEYS.queueOccupancy, label: 'occupancy', unit: 'ratio' }],
  },
  {
    signal: 'stream_interruptions',
    title: 'stream interruptions',
    series: [{ key: SAMPLE_KEYS.streamInterrupted, label: 'interrupted', unit: 'ratio' }],
  },
  {
    signal: 'model_load',
    title: 'model load spikes',
    series: [{ key: SAMPLE_KEYS.modelLoadSpikes, label: 'spikes', unit: 'count' }],
  },
  { signal: 'gpu_fragmentation', title: 'device memory', series: memory },
  {
    signal: 'event_loop',
    title: 'event-loop delay',
    series: [{ key: SAMPLE_KEYS.eventLoopDelayP99, label: 'P99', unit: 'seconds' }],
  },
];

/** Other signals core knows: drawn only when the run saw them. */
const EXTRA_LANES: readonly LaneSpec[] = [
  {
    signal: 'capacity',
    title: 'capacity (ρ)',
    series: [{ key: SAMPLE_KEYS.queueUtilization, label: 'ρ', unit: 'number' }],
  },
  { signal: 'memory_drift', title: 'memory drift', series: memory.slice(0, 2) },
  { signal: 'latency_glitch', title: 'P99 glitch', series: [] },
  { signal: 'latency_anomaly', title: 'latency anomaly', series: [] },
];

export function laneSpec(signal: string): LaneSpec {
  return (
    [...STANDARD_LANES, ...EXTRA_LANES].find((l) => l.signal === signal) ?? {
      signal,
      title: signal.replace(/_/g, ' '),
      series: [],
    }
  );
}

export function isStandard(signal: string): boolean {
  return STANDARD_LANES.some((l) => l.signal === signal);
}
