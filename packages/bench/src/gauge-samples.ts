import { METRICS, prometheusName, type InstrumentSpec } from '@infersignal/core';
import { WATCHED_METRICS } from './alerts';
import type { PromSample } from './prometheus';

/**
 * Values the visual report draws inside the signal lanes, read from the same
 * scrape that follows the signal levels. Keys are stable: they are written
 * into each timeline point's `values` and read back by the report.
 */
export const SAMPLE_KEYS = {
  queueWaitMean: 'queue_wait_mean_s',
  queueOccupancy: 'queue_occupancy',
  queueUtilization: 'queue_utilization',
  streamInterrupted: 'stream_interrupted_ratio',
  modelLoadSpikes: 'model_load_spikes',
  memoryAllocated: 'memory_allocated_bytes',
  memoryReserved: 'memory_reserved_bytes',
  memoryFragmentation: 'memory_fragmentation',
  eventLoopDelayP99: 'event_loop_delay_p99_s',
} as const;

/**
 * Exporter versions differ on unit suffixes (`_seconds`, `_ratio`, `_bytes`),
 * so each instrument is matched under its bare and its suffixed name.
 */
function names(spec: InstrumentSpec, suffix = ''): string[] {
  const bare = spec.name.replace(/[^a-zA-Z0-9_:]/g, '_');
  const full = prometheusName(spec);
  const out = new Set([bare + suffix, full + suffix]);
  if (spec.unit === '1') out.add(`${bare}_ratio${suffix}`);
  return [...out];
}

/** Gauges: the worst (largest) series of the scrape wins. */
const GAUGES: [string, InstrumentSpec][] = [
  [SAMPLE_KEYS.queueOccupancy, METRICS.queueOccupancy],
  [SAMPLE_KEYS.queueUtilization, METRICS.queueUtilization],
  [SAMPLE_KEYS.streamInterrupted, METRICS.streamInterruptedRatio],
  [SAMPLE_KEYS.memoryAllocated, METRICS.memoryAllocated],
  [SAMPLE_KEYS.memoryReserved, METRICS.memoryReserved],
  [SAMPLE_KEYS.memoryFragmentation, METRICS.memoryFragmentation],
  [SAMPLE_KEYS.eventLoopDelayP99, METRICS.eventLoopDelayP99],
];

const GAUGE_BY_NAME = new Map<string, string>(
  GAUGES.flatMap(([key, spec]) => names(spec).map((n) => [n, key] as [string, string])),
);
const SPIKES = new Set(names(METRICS.modelLoadSpikes));
const WAIT_SUM = new Set(names(METRICS.queueWait, '_sum'));
const WAIT_COUNT = new Set(names(METRICS.queueWait, '_count'));

const SAMPLED_METRICS: ReadonlySet<string> = new Set([...GAUGE_BY_NAME.keys(), ...SPIKES, ...WAIT_SUM, ...WAIT_COUNT]);
/** Everything the scraper keeps from an exposition: levels and alerts, plus the sampled values. */
export const SCRAPED_METRICS: ReadonlySet<string> = new Set([...WATCHED_METRICS, ...SAMPLED_METRICS]);

function seriesKey(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

/**
 * Turns one scrape into a few numbers. The queue wait is the mean wait of
 * the requests that left the queue since the previous scrape (Δsum / Δcount
 * of the histogram), so it moves with the load instead of averaging the
 * whole run. Memory is bounded: one previous (sum, count) per queue series.
 */
export class GaugeSampler {
  private readonly previousWait = new Map<string, { sum: number; count: number }>();
  private scrapes = 0;

  observe(samples: readonly PromSample[]): Record<string, number> {
    const out: Record<string, number> = {};
    const waits = new Map<string, { sum?: number; count?: number }>();
    let spikes: number | null = null;
    for (const s of samples) {
      if (!Number.isFinite(s.value)) continue;
      const gauge = GAUGE_BY_NAME.get(s.name);
      if (gauge) out[gauge] = Math.max(out[gauge] ?? -Infinity, s.value);
      else if (SPIKES.has(s.name)) spikes = (spikes ?? 0) + s.value;
      else if (WAIT_SUM.has(s.name) || WAIT_COUNT.has(s.name)) {
        const key = seriesKey(s.labels);
        if (!waits.has(key) && waits.size >= 1000) continue;
        const entry = waits.get(key) ?? {};
        if (WAIT_SUM.has(s.name)) entry.sum = s.value;
        else entry.count = s.value;
        waits.set(key, entry);
      }
    }
    if (spikes !== null) out[SAMPLE_KEYS.modelLoadSpikes] = spikes;
    let dSum = 0;
    let dCount = 0;
    for (const [key, { sum, count }] of waits) {
      if (sum === undefined || count === undefined) continue;
      const before = this.previousWait.get(key);
      // The first scrape is the baseline (the server may have served before
      // the run); a series that appears later was started by the run, from zero.
      if (this.scrapes > 0 && count > (before?.count ?? 0)) {
        dSum += sum - (before?.sum ?? 0);
        dCount += count - (before?.count ?? 0);
      }
      if (before || this.previousWait.size < 1000) this.previousWait.set(key, { sum, count });
    }
    if (dCount > 0) out[SAMPLE_KEYS.queueWaitMean] = Math.max(0, dSum / dCount);
    this.scrapes++;
    return out;
  }
}
