import type { Attributes } from '@opentelemetry/api';
import type { MonitorContext } from '../context';
import { DriftDetector } from '../detectors/drift';
import { ThresholdDetector } from '../detectors/threshold';
import { ATTR } from '../names';
import type { DeviceMemoryHandle, DeviceMemoryOptions, Level } from '../types';

/**
 * Samples allocated and reserved device memory from plain functions off
 * the request path. Fragmentation = 1 − allocated / reserved; the drift
 * detector fits a line to the reserved − allocated gap and trips when it
 * keeps growing (the leak precursor). A source that returns undefined is
 * "not measured": nothing is invented in its place.
 */
export class DeviceMemory implements DeviceMemoryHandle {
  readonly attributes: Attributes;
  readonly labels: Record<string, string>;
  allocated: number | null = null;
  reserved: number | null = null;
  fragmentation: number | null = null;
  gapGrowth: number | null = null;
  drifting = false;
  level: Level = 'ok';
  private readonly fragmentationDetector: ThresholdDetector;
  private readonly drift: DriftDetector;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    readonly source: string,
    private readonly options: DeviceMemoryOptions,
    private readonly ctx: MonitorContext,
    private readonly onStop: (handle: DeviceMemory) => void,
  ) {
    const t = ctx.thresholds.deviceMemory;
    this.attributes = { [ATTR.memorySource]: source };
    this.labels = { source };
    // Fragmentation has a single level: above the bound is WARN (critical set out of reach).
    this.fragmentationDetector = new ThresholdDetector({
      warn: t.fragmentation,
      critical: Number.POSITIVE_INFINITY,
      forSeconds: t.fragmentationForSeconds,
      hysteresis: 0.05,
    });
    this.drift = new DriftDetector(t.driftWindowSamples, t.driftMinGrowth, t.driftMinR2);
    const intervalMs = options.intervalMs ?? 1000;
    if (intervalMs > 0) {
      const tick = () => {
        this.sample();
        if (!this.stopped) this.timer?.refresh();
      };
      this.timer = setTimeout(tick, intervalMs);
      this.timer.unref();
    }
  }

  get timed(): boolean {
    return this.timer !== undefined;
  }

  private read(fn: () => number | undefined, what: string): number | null {
    try {
      const value = fn();
      return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;
    } catch (error) {
      this.ctx.internalError(`deviceMemory.${what}`, error);
      return null;
    }
  }

  sample(): void {
    if (this.stopped) return;
    const ctx = this.ctx;
    const now = ctx.clock();
    this.allocated = this.read(this.options.allocated, 'allocated');
    this.reserved = this.read(this.options.reserved, 'reserved');
    const t = ctx.thresholds.deviceMemory;
    if (this.allocated === null || this.reserved === null || this.reserved === 0) {
      this.fragmentation = null;
      return;
    }
    this.fragmentation = Math.max(0, 1 - this.allocated / this.reserved);
    this.level = this.fragmentationDetector.update(this.fragmentation, now);
    ctx.hub.set('gpu_fragmentation', this.level, this.fragmentation, t.fragmentation, this.labels);

    this.drift.update(this.reserved - this.allocated, now);
    const fit = this.drift.evaluate(this.reserved);
    this.gapGrowth = fit.count >= 2 ? fit.slope : null;
    this.drifting = fit.drifting;
    ctx.hub.set(
      'memory_drift',
      fit.drifting ? 'warn' : 'ok',
      fit.slope,
      t.driftMinGrowth,
      this.labels,
      fit.drifting
        ? `reserved − allocated gap on ${this.source} grew ${(fit.growth / 2 ** 20).toFixed(1)} MiB over ${fit.count} samples (${(fit.slope / 2 ** 20).toFixed(2)} MiB/s, R² ${fit.r2.toFixed(2)})`
        : undefined,
      fit.drifting ? { growthBytes: fit.growth, r2: fit.r2, samples: fit.count } : undefined,
    );
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.onStop(this);
  }
}
