import type { Attributes } from '@opentelemetry/api';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { GCProfiler, getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import type { Gauge, GaugeObserver, Signal, SignalContext } from '../contract';
import { SlidingWindow } from '../detectors/sliding-window';
import { type LinearFit, linearFit } from '../detectors/drift';
import { ThresholdDetector } from '../detectors/threshold';
import { ATTR } from '../attributes';
import { threadQueueReader } from './run-queue';
import { runtimeSignal } from '../definitions/runtime';
import type { Level } from '../contract';

const MiB = 1024 * 1024;

/** How often the GC profiler is emptied when no major GC did (a few hundred scavenges at most). */
const PROFILER_DRAIN_MS = 10_000;

/**
 * Spaces outside the old generation: the young generation (collected by
 * scavenges, and not what runs out) and the read-only snapshot.
 */
const NOT_OLD_GENERATION: ReadonlySet<string> = new Set(['new_space', 'new_large_object_space', 'read_only_space']);

/** Bytes in use in one V8 heap space. */
interface HeapSpaceUse {
  readonly name: string;
  readonly used: number;
}

/** Where the signal reads the heap. `nodeHeap()` in a process; tests inject figures. */
export interface HeapSource {
  /** V8's `heap_size_limit` (bytes). */
  heapSizeLimit(): number;
  /** Bytes in use per heap space now. */
  spaces(): readonly HeapSpaceUse[];
  /**
   * Calls `fn`, soon after each major GC, with the old-generation bytes in
   * use at its end, and `onError` where reading them failed; returns a stop
   * function. `exact` says whether they are the collection's own figures;
   * where not (below `exactFrom` bytes, see nodeHeap), they were read after
   * it and are high by what the process allocated since.
   */
  onMajorGc(
    fn: (oldGenerationBytes: number, exact: boolean) => void,
    onError: (error: unknown) => void,
    exactFrom: number,
  ): () => void;
  /** The Node and V8 flags the process runs with (`process.execArgv`, then `NODE_OPTIONS`). */
  flags(): readonly string[];
  /**
   * Milliseconds this thread has waited for a CPU while ready to run, in
   * all (Linux's run-queue delay); NaN where the platform does not say.
   * What a starved process's own work is stretched by, and its wall-clock
   * pace (timers, traffic) is not.
   */
  waitedMs(): number;
}

/** One collection in a `v8.GCProfiler` report (the fields read here). */
export interface ProfiledGc {
  gcType: string;
  afterGC: { heapSpaceStatistics: { spaceName: string; spaceUsedSize: number }[] };
}

/** Old-generation bytes in use at the end of one profiled collection. */
export function oldGenerationBytes(gc: ProfiledGc): number {
  return oldGenerationInUse(gc.afterGC.heapSpaceStatistics.map((s) => ({ name: s.spaceName, used: s.spaceUsedSize })));
}

/** Old-generation bytes in use of a heap's spaces. */
function oldGenerationInUse(spaces: readonly HeapSpaceUse[]): number {
  let bytes = 0;
  for (const space of spaces) if (!NOT_OLD_GENERATION.has(space.name)) bytes += space.used;
  return bytes;
}

/**
 * The process's own V8 heap. Major GCs are seen by a PerformanceObserver.
 * Read in its callback, the heap includes what the process allocated since
 * the collection: a Node 24 process churning a cache read up to 79 % there,
 * 73 % at the collection's end. The collection's own figures come from a
 * `v8.GCProfiler`, but it writes every collection's statistics, scavenges
 * included, as JSON inside the pause (10–20 µs a scavenge on Node 24 here,
 * 1–2 % of an allocation-bound loop's CPU under perf, and a few hundred
 * fresh pages a second for its growing buffer): so it runs only from
 * the first reading at `exactFrom` bytes, where a level is near enough for
 * a few points to matter, until an exact one falls below half of that.
 */
export function nodeHeap(): HeapSource {
  const spaces = (): HeapSpaceUse[] =>
    getHeapSpaceStatistics().map((s) => ({ name: s.space_name, used: s.space_used_size }));
  // Open while major GCs are observed: read once per collection.
  let queue: ReturnType<typeof threadQueueReader>;
  return {
    heapSizeLimit: () => getHeapStatistics().heap_size_limit,
    spaces,
    waitedMs: () => queue?.read() ?? Number.NaN,
    onMajorGc(fn, onError, exactFrom) {
      queue?.close();
      queue = threadQueueReader();
      let profiler: GCProfiler | undefined;
      let bound: ReturnType<typeof setInterval> | undefined;
      const stopProfiler = (): void => {
        clearInterval(bound);
        bound = undefined;
        profiler?.stop();
        profiler = undefined;
      };
      // Hands on what the profiler holds since its last stop: a reading per mark-compact, scavenges dropped.
      // It runs in a timer and in the observer's callback: nothing may be thrown from there.
      const drain = (): void => {
        try {
          if (profiler === undefined) return;
          const profile = profiler.stop() as { statistics: ProfiledGc[] } | undefined;
          profiler.start();
          let last = Number.NaN;
          for (const gc of profile?.statistics ?? [])
            if (gc.gcType === 'MarkSweepCompact') fn((last = oldGenerationBytes(gc)), true);
          if (last < exactFrom / 2) stopProfiler();
        } catch (error) {
          onError(error);
        }
      };
      const afterMajorGc = (): void => {
        if (profiler !== undefined) {
          drain();
          return;
        }
        try {
          const live = oldGenerationInUse(spaces());
          if (live >= exactFrom) {
            profiler = new GCProfiler();
            profiler.start();
            // The profiler keeps every scavenge too: without a major GC for hours, it would grow without bound.
            bound = setInterval(drain, PROFILER_DRAIN_MS);
            bound.unref();
          }
          fn(live, false);
        } catch (error) {
          onError(error);
        }
      };
      const observer = new PerformanceObserver((list) => {
        for (const entry of list.getEntries())
          if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)
            return afterMajorGc();
      });
      observer.observe({ entryTypes: ['gc'] });
      return () => {
        observer.disconnect();
        stopProfiler();
        queue?.close();
        queue = undefined;
      };
    },
    flags: () => [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)],
  };
}

/** The last value (MiB) of a V8 size flag, written with dashes or underscores, `=N` or ` N`. */
function flagMiB(flags: readonly string[], name: string): number | undefined {
  let found: number | undefined;
  const spellings = [`--${name}`, `--${name.replaceAll('-', '_')}`];
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i]!;
    for (const spelling of spellings) {
      let text: string | undefined;
      if (flag.startsWith(`${spelling}=`)) text = flag.slice(spelling.length + 1);
      else if (flag === spelling) text = flags[i + 1];
      const value = Number(text);
      if (text !== undefined && text !== '' && Number.isFinite(value) && value > 0) found = value;
    }
  }
  return found;
}

export interface OldGenerationLimit {
  bytes: number;
  /** Where the figure comes from. */
  source: 'max-old-space-size' | 'max-semi-space-size' | 'estimate';
}

/**
 * What "full" means for the live set: the old generation's limit, which is
 * what a leak exhausts, not `heap_size_limit`. V8's `heap_size_limit` is
 * the old generation plus a young-generation reserve of three semi-spaces.
 * Measured (`node --max-old-space-size=N -p 'v8.getHeapStatistics().heap_size_limit'`):
 *
 * | Node     | N = 64  | N = 96  | N = 512 | no flag          |
 * |----------|---------|---------|---------|------------------|
 * | 20.20.2  | 112 MiB | 144 MiB | 560 MiB | 4144 MiB (+48)   |
 * | 24.22.3  | 256 MiB | 288 MiB | 704 MiB | 4288 MiB (+192)  |
 *
 * (`--max-semi-space-size=4` gives N + 12 on both.) So with N = 96 on
 * Node 24, a heap that is 96 % full of live objects reads 33 % of
 * `heap_size_limit`; and a leak killed a Node 20 process with 95 MiB live
 * in a 96 MiB old space (96 % of N, 66 % of `heap_size_limit`).
 *
 * `--max-old-space-size` (in execArgv or NODE_OPTIONS) is the limit
 * itself. Without it, `heap_size_limit` less three semi-spaces when
 * `--max-semi-space-size` is given; else less the largest default reserve
 * measured (192 MiB in 4288 MiB, 3/67), which reads Node 20's live share at
 * most 3.5 % high.
 */
export function oldGenerationLimit(heapSizeLimit: number, flags: readonly string[]): OldGenerationLimit {
  const oldMiB = flagMiB(flags, 'max-old-space-size');
  if (oldMiB !== undefined && oldMiB * MiB <= heapSizeLimit)
    return { bytes: oldMiB * MiB, source: 'max-old-space-size' };
  const semiMiB = flagMiB(flags, 'max-semi-space-size');
  if (semiMiB !== undefined && 3 * semiMiB * MiB < heapSizeLimit)
    return { bytes: heapSizeLimit - 3 * semiMiB * MiB, source: 'max-semi-space-size' };
  return { bytes: (heapSizeLimit * 64) / 67, source: 'estimate' };
}

export interface LiveHeapLevels {
  warn: number;
  critical: number;
  /** Consecutive readings a level's bound must be passed by before the level is reported. */
  majorGcs: number;
}

/**
 * Judges the live share after each major GC: a level is raised when the
 * last `majorGcs` readings all passed its bound (the smallest of them is
 * what the threshold detector sees), and lowered with the detector's
 * hysteresis. A sawtooth heap that returns to the same live set after
 * each collection reads the same share every time, however high the
 * teeth; one collection that met a burst of in-flight objects raises
 * nothing on its own.
 */
export class LiveHeapDetector {
  private readonly recent: Float64Array;
  private next = 0;
  private readonly detector: ThresholdDetector;

  constructor(levels: LiveHeapLevels) {
    // Zeros until `majorGcs` readings came: nothing is raised before.
    this.recent = new Float64Array(levels.majorGcs);
    this.detector = new ThresholdDetector({ warn: levels.warn, critical: levels.critical, hysteresis: 0.1 });
  }

  get level(): Level {
    return this.detector.level;
  }

  /** Feeds the live share of one major GC at `now` (ms); returns the level. */
  update(share: number, now: number): Level {
    if (Number.isNaN(share)) return this.detector.level;
    this.recent[this.next] = share;
    this.next = (this.next + 1) % this.recent.length;
    let lowest = Number.POSITIVE_INFINITY;
    for (const value of this.recent) lowest = Math.min(lowest, value);
    return this.detector.update(lowest, now);
  }
}

/**
 * The live share of the old-generation limit from which V8 may abort a
 * process: it gives up ("Ineffective mark-compacts near heap limit") after
 * four mark-compacts in a row that leave the old generation at 80 % or
 * more of its maximum while the collector takes over 60 % of the time. A
 * leak of large objects with little else allocating lives on to 96–99 %
 * ("Reached heap limit"); a busy server with a leak of small objects dies
 * from about 80 % (calibration in docs/runbook.md#heap-exhaustion). The
 * precursor aims at the earlier one.
 */
export const EXHAUSTION_SHARE = 0.8;

/**
 * Readings (major GCs) a growth trend needs, at the least. Two: a small
 * heap leaking fast gets only four or five major GCs in its life (each
 * comes when the old generation grew by half again), and the third comes
 * too late; the rise of MIN_GROWTH_SHARE of the limit is what tells a
 * leak from a flat live set then.
 */
const MIN_READINGS = 2;
/**
 * The fitted rise over the readings must be at least this share of the
 * limit: what a busy server has in flight at a collection moves a flat
 * live set by a few percent.
 */
const MIN_GROWTH_SHARE = 0.1;
/**
 * Seconds the readings must span: a process filling its working set at
 * start (a cache, a tokenizer, a model's weights on the JS heap) rises by
 * tens of MiB within a second or two, as fast as no leak that lives long
 * enough to be announced does.
 */
const MIN_SPAN_SECONDS = 3;
/**
 * Seconds of readings a fill's rate is judged over: two collections close
 * together near the limit differ by what each met in flight, a rate no
 * trend has.
 */
const FILL_MIN_SPAN_SECONDS = 1;
/**
 * The least warning worth giving, and with MIN_SPAN_SECONDS what bounds the
 * fastest rise taken for a leak: a live set that would go from nothing to
 * EXHAUSTION_SHARE of the limit in under FILL_SECONDS is a process filling
 * its working set (a cache, a tokenizer, a model's weights loaded at
 * start), not a leak: while it rises the two look alike, and a leak that
 * fast could not be announced MIN_LEAD_SECONDS ahead once a trend had been
 * seen over MIN_SPAN_SECONDS anyway. A fill's seconds are those the
 * process could run (see LeakTrend.reading).
 */
const MIN_LEAD_SECONDS = 10;
const FILL_SECONDS = MIN_SPAN_SECONDS + MIN_LEAD_SECONDS;
/**
 * Share of the limit below which nothing is projected. A leak at just under
 * the fill rate, projected from here, still has MIN_LEAD_SECONDS before it
 * reaches EXHAUSTION_SHARE. A floor tied to the live share's own levels
 * (half of WARN) would leave a small heap leaking fast no time: a leak that
 * kills a 128 MiB process within 15 s passes 35 % of it 5 s before the end.
 * Fills faster than that are told apart by their rate (FILL_SECONDS), not by
 * the level they reach: a process may well load 40 % of its heap at start.
 */
const TREND_FLOOR_SHARE = EXHAUSTION_SHARE * (1 - MIN_LEAD_SECONDS / FILL_SECONDS);
/** A trend is a line through the readings, not noise around a flat one (one high reading after two: R² 0.75). */
const MIN_R2 = 0.8;
/** Major GCs kept for the fit (a heap near its limit collects several times a second). */
const READINGS = 512;
/** A level is lowered once the projection is this much longer than its bound (a leak's estimate wobbles). */
const EXHAUSTION_HYSTERESIS = 1.5;

export interface ExhaustionEstimate {
  /** Whether the readings show a rising live set (the floor aside). */
  rising: boolean;
  /** Seconds until the live set reaches EXHAUSTION_SHARE of the limit; +Infinity without a rising trend. */
  seconds: number;
  /** Growth of the live set, bytes/s (the fit's slope; 0 without a rising trend). */
  bytesPerSecond: number;
  /** The live set now as the trend carries it forward from the last major GC (bytes). */
  projectedBytes: number;
  /** Readings the fit used. */
  readings: number;
  /** Seconds the readings span. */
  spanSeconds: number;
}

/**
 * The leak precursor's arithmetic: a least-squares line through the live
 * set of the major GCs in the window, carried forward to now (a leak does
 * not wait for the next collection, and a heap that leaks slowly with
 * little garbage can go minutes between two), but never above what the
 * old generation holds now, and never below the last reading. A trend
 * counts once it rests on MIN_READINGS readings over MIN_SPAN_SECONDS,
 * rose by MIN_GROWTH_SHARE of the limit, fits a line (R² ≥ MIN_R2) and
 * the live set is past `floorBytes`: a healthy heap's sawtooth comes back
 * to the same live set after each collection and has no such line. A rise
 * at a fill's rate (FILL_SECONDS) is no trend: the readings start again
 * from where it got to.
 */
export class LeakTrend {
  private readonly readings = new SlidingWindow(READINGS);
  /** The same readings on the clock of the time the thread could run: the wall clock less its waits for a CPU. */
  private readonly runnable = new SlidingWindow(READINGS);
  private runnableAt = 0;
  private lastAt = Number.NaN;
  private lastWaited = Number.NaN;
  private last = Number.NaN;

  constructor(
    readonly limitBytes: number,
    /** Below this live set nothing is projected (TREND_FLOOR_SHARE of the limit, from the signal). */
    readonly floorBytes: number,
    private readonly windowMs: number,
  ) {}

  /**
   * The live set one major GC left, at `at` (ms); `waitedMs`: the thread's
   * run-queue wait in all then (HeapSource.waitedMs; NaN where unknown).
   *
   * A fill runs as fast as the process is given a CPU, so its rate is
   * judged on the time the thread could run, not on the wall clock: on a
   * starved machine a cache that fills in 0.5 s took 6 s of wall time, 5 of
   * them waiting for a CPU; its last 14 MiB over 3.7 s of wall time read as
   * a 3.8 MiB/s leak reaching 80 % of 64 MiB in 5 s, and over the 1.1 s the
   * thread could run they are 12.9 MiB/s, a fill. A leak goes at its
   * traffic's pace, which waiting does not slow: its rate reads higher on
   * that clock only by the share of the time its thread waited (2–12 % for
   * a process leaking 2 MiB/s beside two to eight CPU-bound neighbours on
   * two cores), and the trend itself, its span and the projection stay on
   * the wall clock.
   */
  reading(bytes: number, at: number, waitedMs = Number.NaN): void {
    if (!Number.isFinite(bytes)) return;
    this.readings.push(bytes, at);
    // What the wall clock moved since the last reading less what the thread waited in it (none where not known);
    // never backwards: the two are read apart.
    const waited = waitedMs - this.lastWaited;
    const wall = Number.isNaN(this.lastAt) ? 0 : at - this.lastAt;
    this.runnableAt += Math.max(0, wall - (Number.isFinite(waited) ? Math.max(0, waited) : 0));
    this.lastAt = at;
    this.lastWaited = waitedMs;
    this.runnable.push(bytes, this.runnableAt);
    this.last = bytes;
    // A fill is no trend, and the readings that rose with it would lend their slope to the flat live set after it:
    // a leak is measured from the live set the process settled at, so the trend starts again from this reading.
    const fit = this.fit(at);
    if (
      fit.spanSeconds >= FILL_MIN_SPAN_SECONDS &&
      newest(this.runnable, fit.count).slope * FILL_SECONDS >= EXHAUSTION_SHARE * this.limitBytes
    ) {
      this.readings.clear();
      this.readings.push(bytes, at);
      this.runnable.clear();
      this.runnable.push(bytes, this.runnableAt);
    }
  }

  /** The fit over the window, widened to the last MIN_READINGS readings: a large heap leaking slowly collects seldom. */
  private fit(now: number): LinearFit {
    const since = Math.min(now - this.windowMs, stampOf(this.readings, this.readings.length - MIN_READINGS));
    return linearFit(this.readings, since);
  }

  /** The projection at `now` (ms); `usedNow`: old-generation bytes in use now (NaN when unknown). */
  estimate(now: number, usedNow: number): ExhaustionEstimate {
    const fit = this.fit(now);
    const e: ExhaustionEstimate = {
      rising: false,
      seconds: Number.POSITIVE_INFINITY,
      bytesPerSecond: 0,
      projectedBytes: this.last,
      readings: fit.count,
      spanSeconds: fit.spanSeconds,
    };
    if (fit.count < MIN_READINGS || fit.spanSeconds < MIN_SPAN_SECONDS) return e;
    const slope = fit.slope;
    if (!(slope > 0) || fit.r2 < MIN_R2 || fit.growth < MIN_GROWTH_SHARE * this.limitBytes) return e;
    let projected = fit.intercept + (slope * (now - fit.t0)) / 1000;
    if (usedNow >= 0) projected = Math.min(projected, usedNow);
    projected = Math.max(projected, this.last);
    e.projectedBytes = projected;
    e.rising = true;
    if (projected < this.floorBytes) return e;
    e.bytesPerSecond = slope;
    e.seconds = Math.max(0, (EXHAUSTION_SHARE * this.limitBytes - projected) / slope);
    return e;
  }
}

/** The time of a window's `index`-th reading, oldest first; +Infinity past either end. */
function stampOf(window: SlidingWindow, index: number): number {
  let stamp = Number.POSITIVE_INFINITY;
  let i = 0;
  window.forEach((_, at) => {
    if (i++ === index) stamp = at;
  });
  return stamp;
}

/** The fit over the newest `count` readings of a window (its times never go back). */
function newest(window: SlidingWindow, count: number): LinearFit {
  return linearFit(window, stampOf(window, window.length - count));
}

export interface HeapSnapshot {
  level: Level;
  /** Old-generation bytes in use after the last major GC; null before the first. */
  liveBytes: number | null;
  limitBytes: number;
  limitSource: OldGenerationLimit['source'];
  /** liveBytes / limitBytes; null before the first major GC. */
  liveRatio: number | null;
  /** V8's heap_size_limit (old generation plus the young-generation reserve). */
  heapSizeLimitBytes: number;
  majorGcs: number;
  /** The leak precursor's level (`heap_exhaustion`). */
  exhaustionLevel: Level;
  /** Projected seconds to EXHAUSTION_SHARE of the limit at the live set's trend; null without a rising trend. */
  exhaustionSeconds: number | null;
  /** The live set's growth (bytes/s) of that trend; null without one. */
  growthBytesPerSecond: number | null;
}

/**
 * Heap headroom: the live set (old-generation bytes in use right after a
 * major GC, what the collector could not free) against the old
 * generation's limit. A JS heap leak grows it collection after collection
 * until V8 aborts the process ("JavaScript heap out of memory"), often
 * with GC pauses too short for the event-loop signal to see (a 96 MiB old
 * space filled to exhaustion with pauses under 15 ms). Read on each major
 * GC (v8's heap statistics, a few objects; nothing per request, nothing
 * that walks the heap) and announced then, as `heap_headroom` about the
 * process. The same readings feed the leak precursor, `heap_exhaustion`
 * (LeakTrend), judged on each major GC and carried forward on the
 * detector tick. Thresholds: `heap`.
 */
export class HeapSignal implements Signal {
  readonly name = 'heap';
  readonly limit: OldGenerationLimit;
  readonly heapSizeLimit: number;
  /** Old-generation bytes from which readings must be the collections' own: half the WARN share of the limit. */
  readonly exactFrom: number;
  private readonly detector: LiveHeapDetector;
  private readonly gauges: Record<'used' | 'live' | 'limit' | 'ratio' | 'exhaustion', Gauge>;
  private readonly trend: LeakTrend;
  /** Consecutive major GCs whose fit showed a rising trend (0: the last one did not). */
  private risingReadings = 0;
  exhaustion: ExhaustionEstimate;
  exhaustionLevel: Level = 'ok';
  private readonly spaceAttributes = new Map<string, Attributes>();
  private readonly stop: () => void;
  private readonly labels: Record<string, string> = {};
  liveBytes = Number.NaN;
  liveRatio = Number.NaN;
  majorGcs = 0;
  heapLevel: Level = 'ok';

  constructor(
    private readonly ctx: SignalContext,
    private readonly source: HeapSource = nodeHeap(),
  ) {
    const t = ctx.thresholds.heap;
    this.heapSizeLimit = source.heapSizeLimit();
    this.limit = oldGenerationLimit(this.heapSizeLimit, source.flags());
    this.detector = new LiveHeapDetector({ warn: t.liveWarn, critical: t.liveCritical, majorGcs: t.majorGcs });
    this.gauges = {
      used: ctx.gauge(runtimeSignal.metrics.heapUsed),
      live: ctx.gauge(runtimeSignal.metrics.heapLive),
      limit: ctx.gauge(runtimeSignal.metrics.heapLiveLimit),
      ratio: ctx.gauge(runtimeSignal.metrics.heapLiveRatio),
      exhaustion: ctx.gauge(runtimeSignal.metrics.heapExhaustionTime),
    };
    this.exactFrom = (t.liveWarn / 2) * this.limit.bytes;
    this.trend = new LeakTrend(this.limit.bytes, TREND_FLOOR_SHARE * this.limit.bytes, t.trendWindowSeconds * 1000);
    this.exhaustion = this.trend.estimate(ctx.clock(), Number.NaN);
    this.stop = source.onMajorGc(
      (live, exact) => this.afterMajorGc(live, exact),
      (error) => ctx.internalError('heap.profiler', error),
      this.exactFrom,
    );
  }

  /**
   * Judges the live set one major GC left (old-generation bytes at its end) and announces the level.
   * `exact`: the collection's own figures (see HeapSource.onMajorGc).
   */
  afterMajorGc(live: number, exact = true): void {
    try {
      this.liveBytes = live;
      this.liveRatio = live / this.limit.bytes;
      this.majorGcs++;
      // Read after the collection, high by what was allocated since: judged only where far below WARN,
      // which the first reading at or above exactFrom is not (the source's next ones are exact).
      if (!exact && live >= this.exactFrom) return;
      const now = this.ctx.clock();
      this.trend.reading(live, now, this.source.waitedMs());
      this.judgeExhaustion(now, Number.NaN, true);
      this.heapLevel = this.detector.update(this.liveRatio, now);
      const t = this.ctx.thresholds.heap;
      this.ctx.report({
        signal: 'heap_headroom',
        level: this.heapLevel,
        value: this.liveRatio,
        threshold: this.heapLevel === 'critical' ? t.liveCritical : t.liveWarn,
        labels: this.labels,
        message:
          this.heapLevel === 'ok'
            ? undefined
            : `the heap holds ${mib(live)} live after a major GC, ${(this.liveRatio * 100).toFixed(0)} % of its ${mib(this.limit.bytes)} old-generation limit (${this.limitText()}); the process dies of heap exhaustion at 100 %, or sooner while it keeps allocating`,
        details: this.heapLevel === 'ok' ? undefined : { liveBytes: live, limitBytes: this.limit.bytes },
      });
    } catch (error) {
      this.ctx.internalError('heap.gc', error);
    }
  }

  /**
   * Detector tick: carries the live set's trend forward from the last
   * major GC, so that a leak's projection keeps shortening between
   * collections (capped by the old generation's bytes in use now).
   */
  evaluate(now: number): void {
    try {
      this.judgeExhaustion(now, oldGenerationInUse(this.source.spaces()), false);
    } catch (error) {
      this.ctx.internalError('heap.trend', error);
    }
  }

  /**
   * The leak precursor: WARN or CRITICAL when the projected time to
   * EXHAUSTION_SHARE of the limit is under its bound, the last major GC's
   * fit showing the rise (between collections the projection only moves
   * on); lowered once the projection is EXHAUSTION_HYSTERESIS times its
   * bound, or at once when a major GC shows no rising trend.
   */
  private judgeExhaustion(now: number, usedNow: number, atReading: boolean): void {
    const t = this.ctx.thresholds.heap;
    const e = (this.exhaustion = this.trend.estimate(now, usedNow));
    const rising = Number.isFinite(e.seconds);
    if (atReading) this.risingReadings = e.rising ? this.risingReadings + 1 : 0;
    const current = this.exhaustionLevel;
    let level: Level = 'ok';
    if (rising && this.risingReadings > 0) {
      if (e.seconds <= t.exhaustionCriticalSeconds) level = 'critical';
      else if (e.seconds <= t.exhaustionWarnSeconds) level = 'warn';
      if (
        current === 'critical' &&
        level !== 'critical' &&
        e.seconds <= EXHAUSTION_HYSTERESIS * t.exhaustionCriticalSeconds
      )
        level = 'critical';
      else if (current !== 'ok' && level === 'ok' && e.seconds <= EXHAUSTION_HYSTERESIS * t.exhaustionWarnSeconds)
        level = 'warn';
    } else if (rising && current !== 'ok') level = current;
    this.exhaustionLevel = level;
    if (level === 'ok' && current === 'ok') return;
    const limit = this.limit.bytes;
    this.ctx.report({
      signal: 'heap_exhaustion',
      level,
      value: e.seconds,
      threshold: level === 'critical' ? t.exhaustionCriticalSeconds : t.exhaustionWarnSeconds,
      labels: this.labels,
      message:
        level === 'ok'
          ? `the live set no longer rises toward its ${mib(limit)} old-generation limit (${this.limitText()}): ${mib(e.projectedBytes)} live`
          : `process ${process.pid} leaks JS heap: its live set grows ${mib(e.bytesPerSecond)}/s (least squares over ${e.readings} major GCs in ${e.spanSeconds.toFixed(0)} s) and, at that rate, reaches ${EXHAUSTION_SHARE * 100} % of its ${mib(limit)} old-generation limit (${this.limitText()}), where V8 may abort it with "heap out of memory", in ${e.seconds.toFixed(0)} s; live now about ${mib(e.projectedBytes)} (${((e.projectedBytes / limit) * 100).toFixed(0)} %)`,
      details:
        level === 'ok'
          ? undefined
          : {
              liveBytes: e.projectedBytes,
              limitBytes: limit,
              bytesPerSecond: e.bytesPerSecond,
              exhaustionShare: EXHAUSTION_SHARE,
            },
    });
  }

  private limitText(): string {
    if (this.limit.source === 'max-old-space-size') return '--max-old-space-size';
    if (this.limit.source === 'max-semi-space-size') return 'heap_size_limit less the young generation';
    return 'estimated from heap_size_limit';
  }

  /**
   * Before the first major GC the live set is not known: the live gauges
   * then read the old generation's bytes in use, everything the live set
   * can be, so that the series exist from the first scrape.
   */
  observe(observer: GaugeObserver): void {
    const spaces = this.source.spaces();
    for (const space of spaces) {
      let attributes = this.spaceAttributes.get(space.name);
      if (!attributes) this.spaceAttributes.set(space.name, (attributes = { [ATTR.heapSpace]: space.name }));
      observer.observe(this.gauges.used, space.used, attributes);
    }
    observer.observe(this.gauges.limit, this.limit.bytes);
    const used = oldGenerationInUse(spaces);
    const live = Number.isNaN(this.liveBytes) ? used : this.liveBytes;
    observer.observe(this.gauges.live, live);
    observer.observe(this.gauges.ratio, live / this.limit.bytes);
    // +Inf without a rising trend: the series is there for `absent()` and dashboards from the first scrape.
    // Absent while no rising trend, as a queue's time to saturation is: +Inf would not survive OTLP's JSON encoding.
    const seconds = this.trend.estimate(this.ctx.clock(), used).seconds;
    if (Number.isFinite(seconds)) observer.observe(this.gauges.exhaustion, seconds);
  }

  snapshot(): HeapSnapshot {
    const known = !Number.isNaN(this.liveBytes);
    return {
      level: this.heapLevel,
      liveBytes: known ? this.liveBytes : null,
      limitBytes: this.limit.bytes,
      limitSource: this.limit.source,
      liveRatio: known ? this.liveRatio : null,
      heapSizeLimitBytes: this.heapSizeLimit,
      majorGcs: this.majorGcs,
      exhaustionLevel: this.exhaustionLevel,
      exhaustionSeconds: Number.isFinite(this.exhaustion.seconds) ? this.exhaustion.seconds : null,
      growthBytesPerSecond: Number.isFinite(this.exhaustion.seconds) ? this.exhaustion.bytesPerSecond : null,
    };
  }

  close(): void {
    this.stop();
  }
}

function mib(bytes: number): string {
  return `${(bytes / MiB).toFixed(1)} MiB`;
}
