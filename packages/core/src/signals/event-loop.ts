import type { Attributes } from '@opentelemetry/api';
import { performance, PerformanceObserver, constants, type EventLoopUtilization } from 'node:perf_hooks';
import type { Gauge, GaugeObserver, HistogramRecorder, Signal, SignalContext } from '../contract';
import { LoopBlockProbe } from '../detectors/loop-block';
import { threadQueueReader } from './run-queue';
import { SlidingWindow } from '../detectors/sliding-window';
import { levelRank, ThresholdDetector } from '../detectors/threshold';
import { runtimeSignal } from '../definitions/runtime';
import type { Level } from '../contract';

const GC_TYPES: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/**
 * How the event_loop signal judges blocks, for code that predicts its
 * verdicts (the fidelity suite): the probe timer's period, the factor of
 * WARN at which one block raises the level on its own, and the sample
 * periods within which a moderate block must come again to count.
 */
export const EVENT_LOOP_RULE = Object.freeze({
  /** Period of the probe timer (ms), the signal's one timer: a block may read up to this much short. */
  resolutionMs: 20,
  /**
   * Period of the probe (ms) while the loop rests: a sample period in which
   * the loop was busy, and the process on CPU, under `restUtilization` of the
   * time, the loop went round for other work than the probe under
   * `restIterations` − 1 times per rest period, and no request arrived or
   * was in flight. A block is then read from
   * the loop's busy time since the last firing where the loop went round at
   * most `restIterations` times in it, so it reads in full, and up to the
   * loop's other work of that interval long; after more turns (many short
   * runs, not one block), from the probe's lateness alone. The probe
   * returns to `resolutionMs` on the first request to arrive, and on the
   * first firing after more turns or with the process on CPU for
   * `restUtilization` of the interval.
   */
  restPeriodMs: 200,
  /** Loop turns between two resting firings up to which the busy time reads as one block (see `restPeriodMs`). */
  restIterations: 4,
  /** The loop rests while it and the process are busy under this share of the time (see `restPeriodMs`). */
  restUtilization: 0.05,
  /** A single block at least this many times the WARN threshold raises the level on its own. */
  aloneFactor: 2,
  /** A moderate block (above WARN, under aloneFactor × WARN and CRITICAL) raises the level only if another came within this many sample periods. */
  recurPeriods: 10,
});
const {
  resolutionMs: PROBE_MS,
  restPeriodMs: REST_PROBE_MS,
  restUtilization: REST_UTILIZATION,
  restIterations: REST_ITERATIONS,
  aloneFactor: ALONE_FACTOR,
  recurPeriods: RECUR_PERIODS,
} = EVENT_LOOP_RULE;
/**
 * Probe lateness values kept per sample period for its percentiles: the
 * latest ones, 10 s of probes (a default 1 s period holds 50).
 */
const LATENESS_SAMPLES = 512;
/**
 * The run-queue figure (a read of /proc, the dearest part of a firing) is
 * taken on a firing this late (ms) or later, and on every QUEUE_READ_EVERY-th
 * one: a block's wait for a CPU is then measured from a reading up to
 * 100 ms before it began, which adds at most what the thread waited for a
 * CPU in those 100 ms of an otherwise quiet loop. A block shorter than this
 * has no queue figure (its cause then reads as unknown), and none is
 * judged: WARN is far above it.
 */
const QUEUE_READ_LATE_MS = 2;
const QUEUE_READ_EVERY = 5;

/**
 * Where the signal reads the loop: its timer, clock and utilization.
 * `nodeLoop()` in a process; tests drive a simulated loop.
 */
export interface LoopSource {
  /** Monotonic milliseconds. */
  now(): number;
  /** Calls `fn` `ms` after the previous call returned, without keeping the process alive. */
  every(ms: number, fn: () => void): LoopTimer;
  /** Share of the time since the last call the loop was busy. */
  utilization(): number;
  /**
   * Time (ms) the loop has been busy so far (not waiting for events). Where
   * a source has it and `iterations`, the probe slows down while the loop rests.
   */
  activeMs?(): number;
  /** Times the loop has gone round so far. */
  iterations?(): number;
  /** CPU time (ms, user + system) the process has used so far. */
  cpuMs(): number;
  /**
   * Time (ms) the loop's thread has spent runnable but waiting for a CPU so
   * far (the run queue: a loaded machine, a CPU quota); NaN where unknown.
   */
  queuedMs?(): number;
  close(): void;
}

/** A periodic call of `LoopSource.every`. */
export interface LoopTimer {
  /** From now on, every `ms` (the next call `ms` from now). */
  every(ms: number): void;
  stop(): void;
}

/** libuv's loop metrics (Node 20.18 and 22.8 on); undefined before. */
function uvMetrics(): { loopCount: number } | undefined {
  return (performance.nodeTiming as { uvMetricsInfo?: { loopCount: number } }).uvMetricsInfo;
}

/**
 * The process's own loop: utilization, an unref()'d timer. No delay
 * histogram of its own: `monitorEventLoopDelay` wakes the process every
 * `resolution` ms with a timer of its own, which at rest costs as much CPU
 * as everything else here; the signal's probe timer gives the delays.
 */
function nodeLoop(): LoopSource {
  let elu: EventLoopUtilization = performance.eventLoopUtilization();
  const queue = threadQueueReader();
  return {
    now: () => performance.now(),
    every(ms, fn) {
      // refresh() re-arms the timer of the moment: one that every() replaced in fn is armed from now again.
      const arm = (delay: number) => setTimeout(run, delay).unref();
      const run = () => {
        fn();
        timer.refresh();
      };
      let timer = arm(ms);
      return {
        every(next) {
          clearTimeout(timer);
          timer = arm(next);
        },
        stop: () => clearTimeout(timer),
      };
    },
    utilization() {
      const now = performance.eventLoopUtilization();
      const share = performance.eventLoopUtilization(now, elu).utilization;
      elu = now;
      return share;
    },
    activeMs: () => performance.eventLoopUtilization().active,
    ...(uvMetrics() ? { iterations: () => uvMetrics()!.loopCount } : {}),
    cpuMs() {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1000;
    },
    queuedMs: () => (queue ? queue.read() : Number.NaN),
    close: () => queue?.close(),
  };
}

/**
 * Event-loop blocking, utilization and GC pauses. In a Node inference
 * server the loop is the CPU-jitter precursor: onnxruntime-node runs
 * inference on the main thread, so a long run stalls every timer and
 * socket — a saturated server even with an empty queue.
 *
 * One timer, unref()'d: a probe due every 20 ms, whose lateness is the
 * loop's delay (what a request arriving then waited for the loop). While
 * the loop rests it is due every 200 ms and also reads the loop's busy
 * time, so a block that begins at rest still reads in full (see
 * EVENT_LOOP_RULE.restPeriodMs): a process doing nothing wakes 5 times a
 * second, not 50. The
 * alerting figure is the longest single block of each sample period: the
 * probe's longest lateness, which also counts a block that ends just as the
 * period does, so a block is judged at the end of the period it happened
 * in. The delay percentiles are those of the period's probe latenesses. A loop busy
 * with many short runs is not blocked: its utilization is exported as a
 * separate figure (and feeds the capacity estimate), never summed into a
 * stall. A block under twice the WARN threshold must recur within 10
 * periods to raise the level (see recurring). Thresholds: `eventLoop`. No
 * snapshot section (the level is announced).
 */
export class EventLoopSignal implements Signal {
  readonly name = 'eventLoop';
  private readonly gcDuration: HistogramRecorder;
  private readonly gauges: Record<'p50' | 'p99' | 'max' | 'utilization', Gauge>;
  private readonly loop: LoopSource;
  private readonly probe: LoopBlockProbe;
  private readonly timer: LoopTimer;
  /** Whether the probe runs at its rest period (EVENT_LOOP_RULE.restPeriodMs). */
  resting = false;
  /** A request arrived, or the probe left its rest, in this sample period (see `wake`). */
  private stirred = false;
  /** The loop's busy time (ms) and turns at the last resting firing (see `busySince`). */
  private lastActive = 0;
  private lastTurns = 0;
  /** The process's CPU time (ms), the loop's turns and the probe's firings at the start of the sample period. */
  private periodCpu: number;
  private periodTurns: number;
  private periodFirings = 0;
  private readonly fineMs: number;
  private readonly restMs: number;
  private readonly gcObserver: PerformanceObserver | undefined;
  private readonly gcAttributes = new Map<string, Attributes>();
  /** GC pauses (s) with their end times, for attribution. */
  readonly gcPauses = new SlidingWindow(512);
  private readonly detector: ThresholdDetector;
  /** This period's probe latenesses (ms), the latest LATENESS_SAMPLES of them, and a scratch copy to sort. */
  private readonly lateness = new Float64Array(LATENESS_SAMPLES);
  private readonly sorted = new Float64Array(LATENESS_SAMPLES);
  private latenessCount = 0;
  /** Firings since the run-queue figure was last read. */
  private sinceQueueRead = 0;
  private periodStart: number;
  p50 = Number.NaN;
  p99 = Number.NaN;
  /** Longest single block (s) of the last period: the figure the level is judged on. */
  max = Number.NaN;
  utilization = Number.NaN;
  /** Sample periods judged so far. */
  samples = 0;
  /** The sample period of the last moderate block (see recurring). */
  private lastModerate = Number.NEGATIVE_INFINITY;
  /** Level of the longest block as last sampled (announced as `event_loop`). */
  delayLevel: Level = 'ok';
  /**
   * What the queues read as backpressure (and shed on): the lower of the
   * last two periods' levels. One block (a start-up, a major GC) is
   * announced but sheds nothing: by the time a request sees it, it is over.
   * A loop blocked period after period sheds from the second one.
   */
  backpressureLevel: Level = 'ok';
  readonly labels: Record<string, string> = {};

  /**
   * `busy`: whether requests are waiting or in flight (the queues); the
   * probe keeps its full rate while they are.
   */
  constructor(
    private readonly ctx: SignalContext,
    loop: LoopSource = nodeLoop(),
    private readonly busy: () => boolean = () => false,
    /** Called at every probe firing: the loop turned (the live board's heartbeat). */
    private readonly turned: () => void = () => {},
  ) {
    const t = ctx.thresholds.eventLoop;
    this.loop = loop;
    this.gcDuration = ctx.histogram(runtimeSignal.metrics.gcDuration);
    this.gauges = {
      p50: ctx.gauge(runtimeSignal.metrics.eventLoopDelayP50),
      p99: ctx.gauge(runtimeSignal.metrics.eventLoopDelayP99),
      max: ctx.gauge(runtimeSignal.metrics.eventLoopDelayMax),
      utilization: ctx.gauge(runtimeSignal.metrics.eventLoopUtilization),
    };
    this.detector = new ThresholdDetector({
      warn: t.delayWarnSeconds,
      critical: t.delayCriticalSeconds,
      hysteresis: 0.2,
    });
    loop.utilization();
    this.periodStart = loop.now();
    const probeMs = Math.min(PROBE_MS, t.sampleIntervalMs);
    this.fineMs = probeMs;
    this.restMs = Math.max(probeMs, Math.min(REST_PROBE_MS, t.sampleIntervalMs));
    this.periodCpu = loop.cpuMs();
    this.periodTurns = loop.iterations ? loop.iterations() : Number.NaN;
    this.probe = new LoopBlockProbe(probeMs, this.periodStart, this.periodCpu, this.queued());
    try {
      this.gcObserver = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) this.onGc(entry);
      });
      this.gcObserver.observe({ entryTypes: ['gc'] });
    } catch (error) {
      ctx.internalError('eventLoop.gc', error);
    }
    // One timer: each firing measures a block; the one that ends a period samples it.
    this.timer = loop.every(probeMs, () => this.fire());
  }

  /** The longest the probe waits between firings (while the loop rests). */
  get restIntervalMs(): number {
    return this.restMs;
  }

  private fire(): void {
    this.periodFirings++;
    this.turned();
    const loop = this.loop;
    const now = loop.now();
    const readQueue =
      this.resting || now - this.probe.dueAt >= QUEUE_READ_LATE_MS || ++this.sinceQueueRead >= QUEUE_READ_EVERY;
    if (readQueue) this.sinceQueueRead = 0;
    const queued = readQueue ? this.queued() : Number.NaN;
    if (this.resting) {
      const sinceLast = now - this.probe.dueAt + this.probe.intervalMs;
      const cpu = loop.cpuMs();
      const cpuSince = cpu - this.probe.lastCpuMs;
      const busyMs = this.busySince();
      this.lateness[this.latenessCount++ % LATENESS_SAMPLES] = this.probe.fired(now, cpu, queued, busyMs);
      // The process at work, or the loop turning often: the busy-time reading would count other work into a block.
      if (Number.isNaN(busyMs) || cpuSince >= REST_UTILIZATION * sinceLast) this.tighten(now);
    } else {
      this.lateness[this.latenessCount++ % LATENESS_SAMPLES] = this.probe.fired(now, loop.cpuMs(), queued);
    }
    if (now - this.periodStart >= this.ctx.thresholds.eventLoop.sampleIntervalMs) this.sample();
  }

  /**
   * Time (ms) the loop was busy since the last resting firing, where it
   * went round at most REST_ITERATIONS times meanwhile (else NaN: many
   * runs, whose sum is no block); starts the next interval.
   */
  private busySince(): number {
    const active = this.loop.activeMs!();
    const turns = this.loop.iterations!();
    const busy = turns - this.lastTurns <= REST_ITERATIONS ? active - this.lastActive : Number.NaN;
    this.lastActive = active;
    this.lastTurns = turns;
    return busy;
  }

  /** Back to the full probe rate from `now`. */
  private tighten(now: number): void {
    this.resting = false;
    this.stirred = true;
    this.probe.rearm(now, this.fineMs);
    this.timer.every(this.fineMs);
  }

  /**
   * A request arrived (the queues call this on every arrival): a resting
   * probe reads the interval so far and returns to its full rate, so the
   * request's own work is measured at full resolution. Never throws.
   */
  wake(): void {
    if (!this.resting) {
      this.stirred = true;
      return;
    }
    try {
      const now = this.loop.now();
      this.probe.fired(now, this.loop.cpuMs(), this.queued(), this.busySince());
      this.tighten(now);
    } catch (error) {
      this.ctx.internalError('eventLoop.wake', error);
    }
  }

  /**
   * At the end of a sample period: whether the probe may rest for the next
   * one (see EVENT_LOOP_RULE.restPeriodMs), and if so, from `now` on.
   */
  private settle(now: number, periodMs: number, cpuMs: number): void {
    const cpuShare = (cpuMs - this.periodCpu) / periodMs;
    this.periodCpu = cpuMs;
    const turns = this.loop.iterations ? this.loop.iterations() : Number.NaN;
    // The loop's turns for anything but the probe: few enough that a resting interval holds one block, not many runs.
    const otherTurns = turns - this.periodTurns - this.periodFirings;
    this.periodTurns = turns;
    this.periodFirings = 0;
    const rest =
      this.loop.activeMs !== undefined &&
      otherTurns <= ((REST_ITERATIONS - 1) * periodMs) / this.restMs &&
      this.utilization < REST_UTILIZATION &&
      cpuShare < REST_UTILIZATION &&
      !this.stirred &&
      !this.busy();
    this.stirred = false;
    if (rest === this.resting) return;
    if (!rest) this.tighten(now);
    else {
      this.resting = true;
      this.probe.rearm(now, this.restMs);
      this.busySince();
      this.timer.every(this.restMs);
    }
  }

  private queued(): number {
    return this.loop.queuedMs ? this.loop.queuedMs() : Number.NaN;
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

  /**
   * Longest block (s) now: the last period's, or a longer one in the
   * period under way (even one the probe has not yet run after). For
   * readers on the detector tick, which may run before the sample does.
   */
  recentBlock(): number {
    const current = this.probe.peek(this.loop.now()) / 1000;
    return Number.isNaN(this.max) ? current : Math.max(this.max, current);
  }

  /** Ends the sample period: judges its longest block and reads utilization. */
  sample(): void {
    try {
      const loopNow = this.loop.now();
      const periodMs = loopNow - this.periodStart;
      this.periodStart = loopNow;
      const cpuNow = this.loop.cpuMs();
      const block = this.probe.take(loopNow, cpuNow, this.queued()) / 1000;
      const blockCpu = Math.min(block, this.probe.cpuOfLongest / 1000);
      const blockQueued = Math.min(block, this.probe.queuedOfLongest / 1000);
      // The block counts as a delay sample even when the probe has not run after it yet; a request arriving in
      // a 1 s period with one 300 ms block waits that long ~30 % of the time, so it is the P99 too.
      this.p50 = this.latenessQuantile(0.5, block);
      this.max = block;
      this.p99 = Math.max(this.latenessQuantile(0.99, block), block);
      this.latenessCount = 0;
      this.utilization = this.loop.utilization();
      this.samples++;
      this.settle(loopNow, periodMs, cpuNow);
      const now = this.ctx.clock();
      const previous = this.delayLevel;
      const t = this.ctx.thresholds.eventLoop;
      const starved = waitedForCpu(this.max, blockCpu, blockQueued);
      // A loop held because the machine gave the process no CPU is judged a level lower: the machine's
      // load, not this process's work, and what it needs is CPU (the message says so when it still alerts).
      const judged = this.recurring(
        starved ? levelBelow(this.max, t.delayWarnSeconds, t.delayCriticalSeconds) : this.max,
        t.delayWarnSeconds,
        t.delayCriticalSeconds,
      );
      this.delayLevel = this.detector.update(judged, now);
      this.backpressureLevel = levelRank(previous) < levelRank(this.delayLevel) ? previous : this.delayLevel;
      this.ctx.report({
        signal: 'event_loop',
        level: this.delayLevel,
        value: this.max,
        threshold: this.delayLevel === 'critical' ? t.delayCriticalSeconds : t.delayWarnSeconds,
        labels: this.labels,
        message:
          this.delayLevel === 'ok'
            ? undefined
            : `the loop was blocked for ${ms(this.max)} at once (${cause(block, blockCpu, blockQueued, starved)}; delay P99 ${ms(this.p99)}, busy ${(this.utilization * 100).toFixed(0)} % of the last ${ms(periodMs / 1000)})`,
        details:
          this.delayLevel === 'ok'
            ? undefined
            : {
                blockSeconds: block,
                blockCpuSeconds: blockCpu,
                ...(Number.isNaN(blockQueued) ? {} : { blockQueuedSeconds: blockQueued }),
              },
      });
    } catch (error) {
      this.ctx.internalError('eventLoop.sample', error);
    }
  }

  /** Quantile `q` (s) of this period's probe latenesses; `fallback` when the probe has not fired in it. */
  private latenessQuantile(q: number, fallback: number): number {
    const n = Math.min(this.latenessCount, LATENESS_SAMPLES);
    if (n === 0) return fallback;
    const sorted = this.sorted.subarray(0, n);
    sorted.set(this.lateness.subarray(0, n));
    sorted.sort();
    return Math.max(0, sorted[Math.min(n - 1, Math.ceil(q * n) - 1)]!) / 1000;
  }

  /**
   * A moderate block (above WARN, under twice WARN and under CRITICAL) is judged at its value only when
   * another came within the last RECUR_PERIODS periods, or while the level is raised; alone, as the WARN
   * threshold itself (ok). One 100–200 ms gap (a major GC; a virtual machine descheduled by its host, which
   * the guest counts as its own CPU time: 105 ms "on CPU" in one 125 ms gap of a healthy server's 10
   * minutes) costs one request once and asks nothing of anyone; gaps that recur are a pattern, and a
   * longer one is announced at once.
   */
  private recurring(value: number, warn: number, critical: number): number {
    if (!(value > warn) || value >= ALONE_FACTOR * warn || value > critical) return value;
    const recurred = this.samples - this.lastModerate <= RECUR_PERIODS;
    this.lastModerate = this.samples;
    return recurred || this.delayLevel !== 'ok' ? value : warn;
  }

  observe(observer: GaugeObserver): void {
    if (Number.isNaN(this.p99)) return;
    observer.observe(this.gauges.p50, this.p50);
    observer.observe(this.gauges.p99, this.p99);
    observer.observe(this.gauges.max, this.max);
    observer.observe(this.gauges.utilization, this.utilization);
  }

  close(): void {
    this.timer.stop();
    this.loop.close();
    this.gcObserver?.disconnect();
  }
}

/**
 * A block that was almost all a wait for a CPU: the loop's thread sat in the
 * run queue for at least 80 % of the longest block and the process ran for
 * at most 10 % of it. Own work slowed down by a loaded machine still runs a
 * good share of the time (a 2-core machine with 7 busy processes gives each
 * about 28 %), so it is not mistaken for this. Unknown run queue: never.
 */
function waitedForCpu(longest: number, cpu: number, queued: number): boolean {
  return longest > 0 && queued >= 0.8 * longest && cpu <= 0.1 * longest;
}

/** The value one level below the one `value` reads as (CRITICAL → WARN, WARN → ok). */
function levelBelow(value: number, warn: number, critical: number): number {
  return value > critical ? critical : Math.min(value, warn);
}

/**
 * What held the loop: the process's own work spends about the block on CPU;
 * a process kept off the CPUs (a loaded machine, a container's CPU quota)
 * spends little of it, waiting in the run queue where that is known (Linux);
 * off CPU and not waiting for one is a synchronous wait (file or
 * child-process I/O, Atomics.wait).
 */
function cause(block: number, cpu: number, queued: number, starved: boolean): string {
  if (block <= 0) return 'no single block';
  if (starved)
    return `only ${ms(cpu)} of it on CPU, ${ms(queued)} waiting for one: the process waited for a CPU (machine load or CPU quota), judged a level lower`;
  if (cpu >= block / 2) return `${ms(cpu)} of it on CPU: synchronous work in this process`;
  if (Number.isNaN(queued))
    return `only ${ms(cpu)} of it on CPU: the process waited for a CPU (machine load or CPU quota)`;
  if (queued >= block / 2)
    return `only ${ms(cpu)} of it on CPU, ${ms(queued)} waiting for one: the process waited for a CPU (machine load or CPU quota)`;
  return `only ${ms(cpu)} of it on CPU, ${ms(queued)} waiting for one: a synchronous wait in this process (file or child-process I/O, Atomics.wait)`;
}

function ms(seconds: number): string {
  return `${(seconds * 1000).toFixed(0)} ms`;
}
