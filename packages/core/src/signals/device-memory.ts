import type { Attributes } from '@opentelemetry/api';
import { InferSignalConfigError } from '../errors';
import { fieldOrDefault, rejectValue } from '../validate';
import type { Gauge, GaugeObserver, Signal, SignalContext } from '../contract';
import { DriftDetector, type LinearFit } from '../detectors/drift';
import { ThresholdDetector } from '../detectors/threshold';
import { ATTR } from '../attributes';
import { deviceMemorySignal } from '../definitions/device-memory';
import { checkOptionKeys, nameOption } from '../options';
import type { DeviceMemoryHandle, DeviceMemoryOptions, Level, Snapshot } from '../types';

const MAX_SOURCES = 64;
const NOT_DRIFTING: LinearFit & { drifting: boolean } = {
  slope: 0,
  r2: 0,
  count: 0,
  growth: 0,
  spanSeconds: 0,
  t0: Number.NaN,
  intercept: Number.NaN,
  drifting: false,
};
const OPTION_KEYS = ['allocated', 'reserved', 'intervalMs', 'source', 'fragmentationAlert', 'allocatedDriftAlert'];

/**
 * Samples allocated and reserved device memory from plain functions off
 * the request path. Fragmentation = 1 − allocated / reserved; the drift
 * detectors fit a line to the reserved − allocated gap and to allocated,
 * and memory_drift trips when either keeps growing (the leak precursors:
 * memory reserved and never reused, or live blocks never freed). A source that returns undefined is
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
  /** Allocated itself: a leak of live blocks that fill their segments leaves the gap flat. */
  private readonly liveDrift: DriftDetector;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    readonly source: string,
    private readonly options: DeviceMemoryOptions,
    private readonly ctx: SignalContext,
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
    this.liveDrift = new DriftDetector(t.driftWindowSamples, t.driftMinGrowth, t.driftMinR2);
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

  get judgesFragmentation(): boolean {
    return this.options.fragmentationAlert !== false;
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
    if (this.judgesFragmentation) {
      this.level = this.fragmentationDetector.update(this.fragmentation, now);
      ctx.report({
        signal: 'gpu_fragmentation',
        level: this.level,
        value: this.fragmentation,
        threshold: t.fragmentation,
        labels: this.labels,
      });
    }

    this.drift.update(this.reserved - this.allocated, now);
    const fit = this.drift.evaluate(this.reserved);
    let live = NOT_DRIFTING;
    if (this.options.allocatedDriftAlert !== false) {
      this.liveDrift.update(this.allocated, now);
      live = this.liveDrift.evaluate(this.reserved);
    }
    this.gapGrowth = fit.count >= 2 ? fit.slope : null;
    this.drifting = fit.drifting || live.drifting;
    // The gap is reported when it drifts (or nothing does); allocated when only it does.
    const shown = fit.drifting || !live.drifting ? fit : live;
    const what = shown === fit ? 'reserved − allocated gap' : 'allocated memory (live blocks kept, none freed)';
    ctx.report({
      signal: 'memory_drift',
      level: this.drifting ? 'warn' : 'ok',
      value: shown.slope,
      threshold: t.driftMinGrowth,
      labels: this.labels,
      message: this.drifting
        ? `${what} grew ${(shown.growth / 2 ** 20).toFixed(1)} MiB over ${shown.count} samples (${(shown.slope / 2 ** 20).toFixed(2)} MiB/s, R² ${shown.r2.toFixed(2)})`
        : undefined,
      details: this.drifting
        ? { growthBytes: shown.growth, r2: shown.r2, samples: shown.count, of: shown === fit ? 'gap' : 'allocated' }
        : undefined,
    });
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.onStop(this);
  }
}

/**
 * Device-memory sources (`monitor.deviceMemory()`): allocated, reserved,
 * fragmentation and the drift of the reserved − allocated gap, sampled on
 * each source's own timer (or on the tick when its interval is 0).
 * Thresholds: `deviceMemory`. Snapshot section `deviceMemory`.
 */
export class DeviceMemorySignal implements Signal {
  readonly name = 'deviceMemory';
  private readonly sources = new Set<DeviceMemory>();
  private readonly gauges: Record<'allocated' | 'reserved' | 'fragmentation' | 'gapGrowth', Gauge>;

  constructor(private readonly ctx: SignalContext) {
    this.gauges = {
      allocated: ctx.gauge(deviceMemorySignal.metrics.memoryAllocated),
      reserved: ctx.gauge(deviceMemorySignal.metrics.memoryReserved),
      fragmentation: ctx.gauge(deviceMemorySignal.metrics.memoryFragmentation),
      gapGrowth: ctx.gauge(deviceMemorySignal.metrics.memoryGapGrowth),
    };
  }

  add(options: DeviceMemoryOptions): DeviceMemoryHandle {
    checkOptionKeys(options, OPTION_KEYS);
    if (typeof options.allocated !== 'function')
      rejectValue('options.allocated', options.allocated, 'a function returning bytes (or undefined)');
    if (typeof options.reserved !== 'function')
      rejectValue('options.reserved', options.reserved, 'a function returning bytes (or undefined)');
    fieldOrDefault('options.intervalMs', options.intervalMs, { type: 'number', min: 0 }, undefined);
    for (const key of ['fragmentationAlert', 'allocatedDriftAlert'] as const)
      fieldOrDefault(`options.${key}`, options[key], { type: 'boolean' }, undefined);
    const source = nameOption('options.source', options.source, 'default');
    if (this.sources.size >= MAX_SOURCES)
      throw new InferSignalConfigError('options', `more than ${MAX_SOURCES} device memory sources`);
    const handle = new DeviceMemory(source, options, this.ctx, (h) => this.sources.delete(h));
    this.sources.add(handle);
    return handle;
  }

  /** Highest fragmentation of any source; NaN when none is measured (a glitch-attribution factor). */
  get fragmentation(): number {
    let fragmentation = Number.NaN;
    for (const memory of this.sources)
      if (memory.fragmentation !== null && memory.judgesFragmentation)
        fragmentation = Math.max(Number.isNaN(fragmentation) ? 0 : fragmentation, memory.fragmentation);
    return fragmentation;
  }

  /** Sources without a timer of their own are sampled on the tick. */
  evaluate(): void {
    for (const memory of this.sources) if (!memory.timed) memory.sample();
  }

  observe(observer: GaugeObserver): void {
    const g = this.gauges;
    for (const memory of this.sources) {
      if (memory.allocated !== null) observer.observe(g.allocated, memory.allocated, memory.attributes);
      if (memory.reserved !== null) observer.observe(g.reserved, memory.reserved, memory.attributes);
      if (memory.fragmentation !== null) observer.observe(g.fragmentation, memory.fragmentation, memory.attributes);
      if (memory.gapGrowth !== null) observer.observe(g.gapGrowth, memory.gapGrowth, memory.attributes);
    }
  }

  snapshot(): Snapshot['deviceMemory'] {
    const deviceMemory: Snapshot['deviceMemory'] = {};
    for (const memory of this.sources) {
      deviceMemory[memory.source] = {
        level: memory.level,
        allocated: memory.allocated,
        reserved: memory.reserved,
        fragmentation: memory.fragmentation,
        gapGrowthBytesPerSecond: memory.gapGrowth,
        drifting: memory.drifting,
      };
    }
    return deviceMemory;
  }

  close(): void {
    for (const memory of [...this.sources]) memory.stop();
  }
}
