import type { Attributes } from '@opentelemetry/api';
import {
  monitorEventLoopDelay,
  performance,
  PerformanceObserver,
  constants,
  type EventLoopUtilization,
  type IntervalHistogram,
} from 'node:perf_hooks';
import type { Gauge, GaugeObserver, HistogramRecorder, Signal, SignalContext } from '../contract';
import { SlidingWindow } from '../detectors/sliding-window';
import { ThresholdDetector } from '../detectors/threshold';
import { METRICS } from '../names';
import type { Level } from '../types';

const GC_TYPES: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/** Resolution of the libuv delay histogram (ms). */
const RESOLUTION_MS = 10;

/**
 * Event-loop delay and utilization, and GC pauses. In a Node inference
 * server the loop is the CPU-jitter precursor: onnxruntime-node runs
 * inference on the main thread, so a long run stalls every timer and
 * socket — a saturated server even with an empty queue. Sampled on its own
 * unref()'d timer; the delay histogram is libuv's, reset every period.
 * Thresholds: `eventLoop`. No snapshot section (the level is announced).
 */
export class EventLoopSignal implements Signal {
  readonly name = 'eventLoop';
  private readonly gcDuration: HistogramRecorder;
  private readonly gauges: Record<'p50' | 'p99' | 'max' | 'utilization', Gauge>;
  private readonly delay: IntervalHistogram;
  private elu: EventLoopUtilization;
  private readonly gcObserver: PerformanceObserver | undefined;
  private readonly gcAttributes = new Map<string, Attributes>();
  /** GC pauses (s) with their end times, for attribution. */
  readonly gcPauses = new SlidingWindow(512);
  private readonly detector: ThresholdDetector;
  private timer: NodeJS.Timeout | undefined;
  private scheduledAt = 0;
  private lateness = 0;
  private periodStart = 0;
  p50 = Number.NaN;
  p99 = Number.NaN;
  max = Number.NaN;
  utilization = Number.NaN;
  /** Level of the delay P99 as last sampled (announced as `event_loop`; queues read it as backpressure). */
  delayLevel: Level = 'ok';
  readonly labels: Record<string, string> = {};

  constructor(private readonly ctx: SignalContext) {
    const t = ctx.thresholds.eventLoop;
    this.gcDuration = ctx.histogram(METRICS.gcDuration);
    this.gauges = {
      p50: ctx.gauge(METRICS.eventLoopDelayP50),
      p99: ctx.gauge(METRICS.eventLoopDelayP99),
      max: ctx.gauge(METRICS.eventLoopDelayMax),
      utilization: ctx.gauge(METRICS.eventLoopUtilization),
    };
    this.detector = new ThresholdDetector({
      warn: t.delayWarnSeconds,
      critical: t.delayCriticalSeconds,
      hysteresis: 0.2,
    });
    this.delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.delay.enable();
    this.periodStart = performance.now();
    this.elu = performance.eventLoopUtilization();
    try {
      this.gcObserver = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) this.onGc(entry);
      });
      this.gcObserver.observe({ entryTypes: ['gc'] });
    } catch (error) {
      ctx.internalError('eventLoop.gc', error);
    }
    this.scheduledAt = performance.now() + t.sampleIntervalMs;
    this.timer = setTimeout(() => {
      // Our own timer's lateness is a delay sample too: libuv's histogram
      // records a long block only when its next 10 ms timer fires, which may
      // come after this sample's reset.
      this.lateness = Math.max(0, performance.now() - this.scheduledAt) / 1000;
      this.sample();
      this.scheduledAt = performance.now() + t.sampleIntervalMs;
      this.timer?.refresh();
    }, t.sampleIntervalMs);
    this.timer.unref();
  }

  private onGc(entry: import('node:perf_hooks').PerformanceEntry): void {
    const kind = GC_TYPES[(entry as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'other';
    let attributes = this.gcAttributes.get(kind);
    if (!attributes) this.gcAttributes.set(kind, (attributes = { 'v8js.gc.type': kind }));
    const seconds = entry.duration / 1000;
    this.ctx.recordSeconds(this.gcDuration, seconds, attributes);
    this.gcPauses.push(seconds, this.ctx.clock());
  }

  /** GC pause time (s) within the last `windowMs`. */
  gcPauseSeconds(now: number, windowMs: number): number {
    let total = 0;
    this.gcPauses.forEach((s) => {
      total += s;
    }, now - windowMs);
    return total;
  }

  sample(): void {
    try {
      const now = this.ctx.clock();
      // Three views of one stall, because each can miss it: libuv's delay
      // histogram; our own timer's lateness; and a histogram starved of
      // ticks — seen here under CPU contention, a 200 ms block left only 4
      // of the expected 25 ticks in a period yet no long delay sample. A
      // loop merely busy with short runs still ticks every 10–20 ms, so only
      // a period with under a quarter of its ticks counts as one stall, of
      // the length the ticks do not account for.
      const sampled = this.delay.count > 0;
      const elapsedMs = performance.now() - this.periodStart;
      this.periodStart = performance.now();
      const expectedTicks = Math.floor(elapsedMs / RESOLUTION_MS);
      const starved =
        expectedTicks >= 8 && this.delay.count <= expectedTicks / 4
          ? Math.max(0, elapsedMs - Math.max(0, this.delay.count - 1) * RESOLUTION_MS) / 1000
          : 0;
      const stall = Math.max(this.lateness, starved);
      if (sampled || stall > 0) {
        this.p50 = sampled ? this.delay.percentile(50) / 1e9 : stall;
        this.p99 = Math.max(sampled ? this.delay.percentile(99) / 1e9 : 0, stall);
        this.max = Math.max(sampled ? this.delay.max / 1e9 : 0, stall);
      }
      this.lateness = 0;
      this.delay.reset();
      const elu = performance.eventLoopUtilization();
      this.utilization = performance.eventLoopUtilization(elu, this.elu).utilization;
      this.elu = elu;
      if (!Number.isNaN(this.p99)) {
        this.delayLevel = this.detector.update(this.p99, now);
        const t = this.ctx.thresholds.eventLoop;
        this.ctx.report(
          'event_loop',
          this.delayLevel,
          this.p99,
          this.delayLevel === 'critical' ? t.delayCriticalSeconds : t.delayWarnSeconds,
          this.labels,
          this.delayLevel === 'ok'
            ? undefined
            : `event-loop delay P99 ${(this.p99 * 1000).toFixed(0)} ms (max ${(this.max * 1000).toFixed(0)} ms, utilization ${(this.utilization * 100).toFixed(0)} %)`,
        );
      }
    } catch (error) {
      this.ctx.internalError('eventLoop.sample', error);
    }
  }

  observe(observer: GaugeObserver): void {
    if (Number.isNaN(this.p99)) return;
    observer.observe(this.gauges.p50, this.p50);
    observer.observe(this.gauges.p99, this.p99);
    observer.observe(this.gauges.max, this.max);
    observer.observe(this.gauges.utilization, this.utilization);
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.delay.disable();
    this.gcObserver?.disconnect();
  }
}
