import { existsSync } from 'node:fs';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { METRICS } from '../src/index';
import {
  EXHAUSTION_SHARE,
  HeapSignal,
  type HeapSource,
  LeakTrend,
  LiveHeapDetector,
  nodeHeap,
  oldGenerationBytes,
  oldGenerationLimit,
} from '../src/signals/heap';
import { seededRandom } from '../../../test/support/random';
import { setup } from './helpers';

setFlagsFromString('--expose-gc');
const fullGc = runInNewContext('gc') as () => void;

const MiB = 1024 * 1024;

/** A heap whose figures the test sets, and whose major GCs the test runs. */
class InjectedHeap implements HeapSource {
  oldSpace = 20 * MiB;
  newSpace = 4 * MiB;
  private listener: ((oldGenerationBytes: number, exact: boolean) => void) | undefined;
  /** What the signal asked: the bytes from which readings must be exact. */
  exactFrom = Number.NaN;
  private errorListener: ((error: unknown) => void) | undefined;
  constructor(
    private readonly limit: number,
    private readonly flagList: string[] = [],
  ) {}
  heapSizeLimit(): number {
    return this.limit;
  }
  spaces() {
    return [
      { name: 'read_only_space', used: 0.2 * MiB },
      { name: 'new_space', used: this.newSpace },
      { name: 'old_space', used: this.oldSpace },
      { name: 'code_space', used: 1 * MiB },
      { name: 'large_object_space', used: 1 * MiB },
      { name: 'new_large_object_space', used: 0 },
    ];
  }
  onMajorGc(
    fn: (oldGenerationBytes: number, exact: boolean) => void,
    onError: (error: unknown) => void,
    exactFrom: number,
  ): () => void {
    this.listener = fn;
    this.exactFrom = exactFrom;
    this.errorListener = onError;
    return () => {
      this.listener = undefined;
    };
  }
  flags(): string[] {
    return this.flagList;
  }
  /** The thread's run-queue wait in all (ms) the signal reads at each major GC; NaN: the platform does not say. */
  waited = Number.NaN;
  waitedMs(): number {
    return this.waited;
  }
  /** A major GC whose figures could not be read. */
  failedRead(error: Error): void {
    this.errorListener?.(error);
  }
  /** The old generation holds `mib` now (between major GCs: live objects and garbage not yet collected). */
  holding(mib: number): void {
    this.oldSpace = (mib - 2) * MiB;
  }
  /** A major GC that leaves `liveMiB` in the old generation (old space + 2 MiB of code and large objects). */
  majorGc(liveMiB: number, exact = true): void {
    this.oldSpace = (liveMiB - 2) * MiB;
    this.newSpace = 0.5 * MiB;
    this.listener?.(liveMiB * MiB, exact);
  }
}

describe('the old-generation limit', () => {
  // heap_size_limit as measured on Node 20.20.2 and 24.22.3 (see oldGenerationLimit).
  it('is --max-old-space-size where the process was given it, whatever the young-generation reserve', () => {
    expect(oldGenerationLimit(144 * MiB, ['--max-old-space-size=96'])).toEqual({
      bytes: 96 * MiB,
      source: 'max-old-space-size',
    });
    expect(oldGenerationLimit(288 * MiB, ['--max-old-space-size', '96']).bytes).toBe(96 * MiB);
    // The last one wins, as for Node; underscores are V8's own spelling.
    expect(oldGenerationLimit(288 * MiB, ['--max_old_space_size=64', '--max-old-space-size=96']).bytes).toBe(96 * MiB);
  });

  it('is heap_size_limit less three semi-spaces with --max-semi-space-size, else less the largest default reserve', () => {
    expect(oldGenerationLimit(108 * MiB, ['--max-semi-space-size=4'])).toEqual({
      bytes: 96 * MiB,
      source: 'max-semi-space-size',
    });
    const node24 = oldGenerationLimit(4288 * MiB, []);
    expect(node24.source).toBe('estimate');
    expect(node24.bytes / MiB).toBeCloseTo(4096, 0);
    // Node 20's smaller reserve: the estimate reads the share at most 3.5 % high.
    expect(4096 / (oldGenerationLimit(4144 * MiB, []).bytes / MiB)).toBeLessThan(1.035);
  });

  it('ignores a flag that is not a size or is larger than the whole heap', () => {
    expect(oldGenerationLimit(4144 * MiB, ['--max-old-space-size=abc']).source).toBe('estimate');
    expect(oldGenerationLimit(144 * MiB, ['--max-old-space-size=8192']).source).toBe('estimate');
  });
});

describe('LiveHeapDetector', () => {
  const levels = { warn: 0.8, critical: 0.9, majorGcs: 2 };

  it('raises WARN, then CRITICAL, only after two major GCs in a row passed the bound', () => {
    const detector = new LiveHeapDetector(levels);
    const seen = [0.5, 0.82, 0.6, 0.83, 0.85, 0.91, 0.92, 0.95].map((share, i) => detector.update(share, i * 1000));
    expect(seen).toEqual(['ok', 'ok', 'ok', 'ok', 'warn', 'warn', 'critical', 'critical']);
  });

  it('keeps a level until the live share falls 10 % below its bound', () => {
    const detector = new LiveHeapDetector(levels);
    for (const share of [0.85, 0.85]) detector.update(share, 0);
    expect(detector.level).toBe('warn');
    expect(detector.update(0.75, 1)).toBe('warn');
    expect(detector.update(0.71, 2)).toBe('ok');
  });

  it('never alerts on a sawtooth that returns to the same live set, however high the teeth', () => {
    const detector = new LiveHeapDetector(levels);
    // Live after each major GC: 40 % give or take 1 %, for a thousand collections.
    for (let i = 0; i < 1000; i++) expect(detector.update(0.4 + 0.01 * Math.sin(i), i * 1000)).toBe('ok');
  });

  it('does not raise on the first reading, however high', () => {
    expect(new LiveHeapDetector(levels).update(0.99, 0)).toBe('ok');
    expect(new LiveHeapDetector({ ...levels, majorGcs: 1 }).update(0.99, 0)).toBe('critical');
  });
});

describe('oldGenerationBytes', () => {
  it('sums what a collection left in every space but the young generation and read-only space', () => {
    // A v8.GCProfiler entry's afterGC spaces (Node 24's names), with a young generation still 40 MiB full.
    const spaces = [
      ['read_only_space', 0.2],
      ['new_space', 40],
      ['old_space', 48],
      ['code_space', 1],
      ['shared_space', 0],
      ['trusted_space', 0.5],
      ['large_object_space', 1.5],
      ['new_large_object_space', 6],
    ].map(([name, mib]) => ({ spaceName: name as string, spaceUsedSize: (mib as number) * MiB }));
    expect(oldGenerationBytes({ gcType: 'MarkSweepCompact', afterGC: { heapSpaceStatistics: spaces } })).toBe(51 * MiB);
  });
});

describe('HeapSignal', () => {
  let t: ReturnType<typeof setup> | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  function start(heap: InjectedHeap) {
    t = setup({ heap: false });
    const signal = t.monitor.register((ctx) => new HeapSignal(ctx, heap));
    return { t, signal };
  }

  it('announces heap_headroom about the process as the live set grows toward the old-generation limit', async () => {
    // Node 24 with --max-old-space-size=96: heap_size_limit 288 MiB. 72 MiB live is 25 % of that, 75 % of the limit.
    const heap = new InjectedHeap(288 * MiB, ['--max-old-space-size=96']);
    const { t, signal } = start(heap);
    for (const live of [30, 40, 60, 64]) heap.majorGc(live);
    expect(t.alerts).toEqual([]);
    heap.majorGc(68);
    heap.majorGc(71);
    expect(t.alerts.map((a) => [a.signal, a.level])).toEqual([['heap_headroom', 'warn']]);
    const warn = t.alerts[0]!;
    expect(warn.labels).toEqual({});
    expect(warn.value).toBeCloseTo(71 / 96, 6);
    expect(warn.threshold).toBe(0.7);
    expect(warn.message).toContain('heap_headroom WARN on this process');
    expect(warn.message).toContain('71.0 MiB live after a major GC, 74 % of its 96.0 MiB old-generation limit');
    heap.majorGc(80);
    // 80 MiB is the first collection past 75 %: one is not two in a row.
    expect(t.alerts.at(-1)?.level).toBe('warn');
    heap.majorGc(84);
    expect(t.alerts.at(-1)?.level).toBe('critical');
    // All at one instant on the test's clock: no growth over time, so no leak trend.
    expect(t.monitor.snapshot().heap).toEqual({
      level: 'critical',
      liveBytes: 84 * MiB,
      limitBytes: 96 * MiB,
      limitSource: 'max-old-space-size',
      liveRatio: 84 / 96,
      heapSizeLimitBytes: 288 * MiB,
      majorGcs: 8,
      exhaustionLevel: 'ok',
      exhaustionSeconds: null,
      growthBytesPerSecond: null,
    });
    const exported = await t.collect();
    expect(exported.value(METRICS.heapLiveRatio.name)).toBeCloseTo(84 / 96, 6);
    expect(exported.value(METRICS.heapLive.name)).toBe(84 * MiB);
    expect(exported.value(METRICS.heapLiveLimit.name)).toBe(96 * MiB);
    expect(exported.value(METRICS.heapUsed.name, { 'v8js.heap.space.name': 'old_space' })).toBe(82 * MiB);
    expect(signal.majorGcs).toBe(8);
  });

  it('judges a reading taken after its collection only below half the WARN share; exact ones from there on', () => {
    const heap = new InjectedHeap(288 * MiB, ['--max-old-space-size=96']);
    const { t } = start(heap);
    // WARN at 70 % of 96 MiB: readings must be exact from 35 %, 33.6 MiB.
    expect(heap.exactFrom).toBeCloseTo(0.35 * 96 * MiB, 0);
    heap.majorGc(30, false);
    expect(t.monitor.snapshot().heap).toMatchObject({ level: 'ok', liveBytes: 30 * MiB, majorGcs: 1 });
    // Two readings past WARN, taken after their collections: gauges move, the level does not.
    heap.majorGc(80, false);
    heap.majorGc(82, false);
    expect(t.alerts).toEqual([]);
    expect(t.monitor.snapshot().heap).toMatchObject({ level: 'ok', liveBytes: 82 * MiB, majorGcs: 3 });
    // The collections' own figures are judged as they come.
    heap.majorGc(72);
    heap.majorGc(74);
    expect(t.alerts.map((a) => [a.signal, a.level])).toEqual([['heap_headroom', 'warn']]);
  });

  it('a profiler that fails is counted as an internal error; the signal goes on with the next collection', () => {
    const heap = new InjectedHeap(144 * MiB, ['--max-old-space-size=96']);
    const { t } = start(heap);
    heap.failedRead(new Error('GCProfiler stopped'));
    expect(t.monitor.snapshot().internalErrors).toBe(1);
    heap.majorGc(40);
    expect(t.monitor.snapshot().heap).toMatchObject({ level: 'ok', liveBytes: 40 * MiB, majorGcs: 1 });
  });

  it('a config that reverses the levels fails, naming the field', () => {
    expect(() => setup({ thresholds: { heap: { liveWarn: 0.95, liveCritical: 0.9 } } })).toThrow(
      /thresholds\.heap\.liveWarn/,
    );
    expect(() => setup({ thresholds: { heap: { majorGcs: 0 } } })).toThrow(/thresholds\.heap\.majorGcs/);
    expect(() => setup({ heap: 'yes' as never })).toThrow(/"heap"/);
  });
});

/**
 * A heap that behaves as V8's old generation does, on the test's clock:
 * live objects grow by the leak, promoted garbage by `garbageMiBs`, and a
 * major GC comes when the old generation reaches the live set times
 * `growth` (capped at the limit), leaving the live set, give or take
 * `jitterShare` of the limit for what was in flight. The process dies when
 * the live set reaches `deathShare` of the limit.
 */
interface HeapRun {
  limitMiB: number;
  leakMiBs: number;
  garbageMiBs: number;
  baseMiB: number;
  deathShare: number;
  seconds: number;
  seed: number;
  growth?: number;
  jitterShare?: number;
}

interface HeapRunResult {
  /** Seconds from the start (the leak's start) to the death; null when it lived through `seconds`. */
  diedAt: number | null;
  alerts: { at: number; signal: string; level: string; message: string }[];
  majorGcs: number;
}

async function simulate(run: HeapRun): Promise<HeapRunResult> {
  const { limitMiB, leakMiBs, garbageMiBs, baseMiB, deathShare, seconds } = run;
  const growth = run.growth ?? 1.5;
  const jitter = (run.jitterShare ?? 0.01) * limitMiB;
  const random = seededRandom(run.seed);
  const heap = new InjectedHeap(limitMiB * MiB + 48 * MiB, [`--max-old-space-size=${limitMiB}`]);
  const t = setup({ heap: false });
  try {
    t.monitor.register((ctx) => new HeapSignal(ctx, heap));
    const start = t.now();
    const stepMs = 100;
    let live = baseMiB;
    let garbage = 0;
    let nextGc = Math.min(limitMiB, live * growth);
    let diedAt: number | null = null;
    let gcs = 0;
    for (let ms = 0; ms <= seconds * 1000; ms += stepMs) {
      t.advance(stepMs);
      live += (leakMiBs * stepMs) / 1000;
      garbage += (garbageMiBs * stepMs) / 1000;
      if (live >= deathShare * limitMiB) {
        diedAt = ms / 1000;
        break;
      }
      if (live + garbage >= nextGc) {
        garbage = 0;
        gcs++;
        // What was in flight at the collection survives it: the reading is the live set and up to `jitter` more.
        const reading = live + random() * jitter;
        heap.majorGc(reading);
        nextGc = Math.min(limitMiB, Math.max(reading * growth, reading + 4));
      } else heap.holding(live + garbage);
      if (ms % 1000 === 0) t.monitor.tick();
    }
    return {
      diedAt,
      majorGcs: gcs,
      alerts: t.alerts.map((a) => ({
        at: (a.at - start) / 1000,
        signal: a.signal,
        level: a.level,
        message: a.message,
      })),
    };
  } finally {
    await t.close();
  }
}

describe('heap_exhaustion: the leak precursor', () => {
  const cells: [number, number][] = [];
  for (const limitMiB of [128, 256, 512, 1024]) for (const leakMiBs of [0.5, 1, 2, 5]) cells.push([limitMiB, leakMiBs]);

  it.each(cells)(
    'a steady leak at %d MiB, %d MiB/s: announced at least 10 s and 30 %% of its life before it dies at 80 %%',
    async (limitMiB, leakMiBs) => {
      for (const [seed, garbageMiBs] of [
        [1, 0.1],
        [2, 2],
        [3, 8],
      ] as const) {
        const result = await simulate({
          limitMiB,
          leakMiBs,
          garbageMiBs,
          baseMiB: 12 + 0.05 * limitMiB,
          deathShare: EXHAUSTION_SHARE,
          seconds: 4000,
          seed,
        });
        const context = JSON.stringify({ garbageMiBs, ...result, alerts: result.alerts.slice(0, 3) });
        expect(result.diedAt, context).not.toBeNull();
        const first = result.alerts.find((a) => a.signal === 'heap_exhaustion' && a.level !== 'ok');
        expect(first, context).toBeDefined();
        const lead = result.diedAt! - first!.at;
        expect(lead, context).toBeGreaterThanOrEqual(10);
        expect(lead / result.diedAt!, context).toBeGreaterThanOrEqual(0.3);
        expect(first!.message, context).toMatch(
          new RegExp(
            `^heap_exhaustion (WARN|CRITICAL) on this process: process \\d+ leaks JS heap: its live set grows [\\d.]+ MiB/s \\(least squares over \\d+ major GCs in \\d+ s\\) and, at that rate, reaches 80 % of its ${limitMiB}\\.0 MiB old-generation limit \\(--max-old-space-size\\)`,
          ),
        );
        // Once raised, it is not lowered while the leak goes on.
        expect(
          result.alerts.filter((a) => a.signal === 'heap_exhaustion' && a.level === 'ok'),
          context,
        ).toEqual([]);
      }
    },
  );

  it('goes CRITICAL before a fast leak kills the process, with the projection near the truth', async () => {
    const result = await simulate({
      limitMiB: 256,
      leakMiBs: 5,
      garbageMiBs: 2,
      baseMiB: 25,
      deathShare: EXHAUSTION_SHARE,
      seconds: 300,
      seed: 7,
    });
    const levels = result.alerts.filter((a) => a.signal === 'heap_exhaustion').map((a) => a.level);
    expect(levels).toEqual(['critical']);
    expect(result.diedAt! - result.alerts[0]!.at).toBeGreaterThan(10);
  });

  it.each([
    [128, 0.3, 5],
    [256, 0.45, 20],
    [512, 0.6, 2],
    [1024, 0.65, 50],
  ])(
    'a healthy sawtooth at %d MiB, live %d of the limit, %d MiB/s of garbage: 10 minutes, nothing raised',
    async (limitMiB, liveShare, garbageMiBs) => {
      for (const seed of [11, 12, 13]) {
        const result = await simulate({
          limitMiB,
          leakMiBs: 0,
          garbageMiBs,
          baseMiB: liveShare * limitMiB,
          deathShare: EXHAUSTION_SHARE,
          seconds: 600,
          seed,
          // A busy server's live set at each collection varies with what is in flight: 3 % of the limit here.
          jitterShare: 0.03,
        });
        expect(result.majorGcs).toBeGreaterThan(5);
        expect(result.diedAt).toBeNull();
        expect(result.alerts).toEqual([]);
      }
    },
  );

  it('says nothing of a live set that grew once and stays: a larger working set, not a leak', async () => {
    const heap = new InjectedHeap(304 * MiB, ['--max-old-space-size=256']);
    const t = setup({ heap: false });
    try {
      t.monitor.register((ctx) => new HeapSignal(ctx, heap));
      // Cache fills 60 → 150 MiB in 30 s, then stays; a major GC every 5 s.
      for (let s = 0; s <= 900; s += 5) {
        t.advance(5000);
        heap.majorGc(Math.min(150, 60 + 3 * s) + (s % 3));
        t.monitor.tick();
      }
      const raised = t.alerts.filter((a) => a.signal === 'heap_exhaustion');
      // While it filled it looked like a leak (a CRITICAL or WARN then), and was lowered when the growth stopped.
      expect(raised.at(-1)?.level ?? 'ok').toBe('ok');
      expect(t.monitor.snapshot().heap).toMatchObject({ exhaustionLevel: 'ok', exhaustionSeconds: null });
    } finally {
      await t.close();
    }
  });

  /**
   * A 128 MiB process on the test's clock: `liveAt(s)` is its live set (MiB) at second s; a major GC every
   * `gcEvery` s reads it, and the detector ticks every second, with the old generation holding the live set and
   * 10 MiB of garbage between collections.
   */
  async function run128(liveAt: (s: number) => number, seconds: number, gcEvery: number) {
    const heap = new InjectedHeap(176 * MiB, ['--max-old-space-size=128']);
    const t = setup({ heap: false });
    try {
      t.monitor.register((ctx) => new HeapSignal(ctx, heap));
      const start = t.now();
      for (let ms = 100; ms <= seconds * 1000; ms += 100) {
        t.advance(100);
        const live = liveAt(ms / 1000);
        if (ms % Math.round(gcEvery * 1000) === 0) heap.majorGc(live);
        else heap.holding(live + 10);
        if (ms % 1000 === 0) t.monitor.tick();
      }
      return t.alerts
        .filter((a) => a.signal.startsWith('heap_'))
        .map((a) => ({ at: (a.at - start) / 1000, signal: a.signal, level: a.level }));
    } finally {
      await t.close();
    }
  }

  it('says nothing of a process that fills 40 % of its heap in its first 5 s and then stays', async () => {
    // 6 MiB of runtime, then 51.2 MiB (40 % of 128) loaded over 5 s: a fill, however like a leak while it lasts.
    const fill = (s: number) => 6 + 51.2 * Math.min(1, s / 5);
    for (const gcEvery of [0.5, 1, 2.5]) expect(await run128(fill, 300, gcEvery), `gcEvery ${gcEvery}`).toEqual([]);
    // A working set filled and settled, then a leak from it: measured from the live set the fill reached.
    const leakAfter = (s: number) => fill(s) + (s > 60 ? 0.5 * (s - 60) : 0);
    const alerts = await run128(leakAfter, 140, 2.5);
    expect(alerts[0]?.signal).toBe('heap_exhaustion');
    // 57.2 MiB + 0.5 MiB/s reaches 80 % of 128 MiB 90 s after the leak began: announced 30 % of that before.
    expect(60 + 90 - alerts[0]!.at).toBeGreaterThanOrEqual(0.3 * 90);
  });

  /**
   * A process with `--max-old-space-size=64` whose major GCs read `[seconds, live MiB, waited s]`: when it
   * collected, what it held, and how long its thread had waited for a CPU by then (NaN: the platform does not say).
   * The detector ticks every second. Returns its heap_exhaustion alerts.
   */
  async function run64(gcs: [number, number, number][]) {
    const heap = new InjectedHeap(112 * MiB, ['--max-old-space-size=64']);
    const t = setup({ heap: false });
    try {
      t.monitor.register((ctx) => new HeapSignal(ctx, heap));
      const start = t.now();
      let ms = 0;
      for (const [at, live, waited] of gcs) {
        for (; ms < at * 1000; ms += 100) {
          t.advance(100);
          heap.holding(live + 4);
          if (ms % 1000 === 0) t.monitor.tick();
        }
        heap.waited = waited * 1000;
        heap.majorGc(live);
      }
      return t.alerts
        .filter((a) => a.signal === 'heap_exhaustion')
        .map((a) => ({ at: (a.at - start) / 1000, level: a.level, message: a.message }));
    } finally {
      await t.close();
    }
  }

  it('says nothing of a cache filled on a starved machine: its rate is judged on the time the process could run', async () => {
    // Measured: a child filling 25 MiB of cache (0.5 s on an idle machine) beside CPU-bound neighbours collected at
    // 9.3, 19.2 and 33.1 MiB over 6.1 s, its thread waiting for a CPU 2.2 s and 4.8 s of that, then held 33 MiB.
    const fill: [number, number][] = [
      [0, 9.3],
      [2.46, 19.2],
      [6.14, 33.1],
    ];
    const after = (waitShare: number): [number, number, number][] =>
      Array.from({ length: 75 }, (_, i) => [
        6.14 + 0.8 * (i + 1),
        33 + (i % 3) * 0.6,
        4.77 + waitShare * 0.8 * (i + 1),
      ]);
    const waits = [0, 2.17, 4.77];
    const starved = await run64([
      ...fill.map(([at, live], i): [number, number, number] => [at, live, waits[i]!]),
      ...after(0.5),
    ]);
    expect(starved).toEqual([]);
    // The same readings where the wait is not known: on the wall clock alone the fill's last 13.9 MiB over 3.7 s are
    // 3.8 MiB/s, under a fill's 3.9 (80 % of 64 MiB in 13 s): a leak that reaches 80 % in 5 s, the false alarm the
    // wait prevents. Over the 1.1 s the thread could run they are 12.9 MiB/s.
    const wallOnly = await run64([
      ...fill.map(([at, live]): [number, number, number] => [at, live, Number.NaN]),
      ...after(Number.NaN),
    ]);
    expect(wallOnly[0]?.level).toBe('critical');
  });

  it("announces a leak in a process that waits for a CPU as early: a leak goes at its traffic's pace", async () => {
    // 2 MiB/s from 8 MiB, a major GC every 1.5 s; its thread waits for a CPU 30 % of the time (a process leaking
    // 2 MiB/s waited 12 % beside eight CPU-bound neighbours on two cores).
    const gcs = (waitShare: number): [number, number, number][] =>
      Array.from({ length: 20 }, (_, i) => [1.5 * (i + 1), 8 + 3 * (i + 1), waitShare * 1.5 * (i + 1)]);
    const idle = await run64(gcs(0));
    const waiting = await run64(gcs(0.3));
    expect(idle[0]?.level).toBe('critical');
    expect(waiting[0]).toEqual(idle[0]);
  });

  it('announces a leak that kills a 128 MiB process within 15 s at least 10 s before', async () => {
    // 7 MiB, then 6.4 MiB/s from 2 s: 80 % of the limit at 16 s; a major GC as the live set grows by half.
    const live = (s: number) => 7 + 6.4 * Math.max(0, s - 2);
    const heap = new InjectedHeap(176 * MiB, ['--max-old-space-size=128']);
    const t = setup({ heap: false });
    try {
      t.monitor.register((ctx) => new HeapSignal(ctx, heap));
      const start = t.now();
      let nextGc = 10;
      let diedAt = Number.NaN;
      for (let ms = 100; ms <= 30_000; ms += 100) {
        t.advance(100);
        const s = ms / 1000;
        if (live(s) >= EXHAUSTION_SHARE * 128) {
          diedAt = s;
          break;
        }
        if (live(s) >= nextGc) {
          heap.majorGc(live(s));
          nextGc = live(s) * 1.5;
        } else heap.holding(live(s) + 5);
        if (ms % 1000 === 0) t.monitor.tick();
      }
      const first = t.alerts.find((a) => a.signal === 'heap_exhaustion');
      expect(first?.level).toBe('critical');
      expect(diedAt - (first!.at - start) / 1000).toBeGreaterThanOrEqual(10);
    } finally {
      await t.close();
    }
  });

  it('carries the trend forward between major GCs, no higher than what the old generation holds', () => {
    const trend = new LeakTrend(100 * MiB, 30 * MiB, 600_000);
    // 40, 50, 60 MiB at 0, 10, 20 s: 1 MiB/s.
    for (const [at, mib] of [
      [0, 40],
      [10_000, 50],
      [20_000, 60],
    ])
      trend.reading(mib * MiB, at);
    const atGc = trend.estimate(20_000, Number.NaN);
    expect(atGc.bytesPerSecond / MiB).toBeCloseTo(1, 6);
    expect(atGc.seconds).toBeCloseTo(20, 6);
    // Five seconds on, no collection since: 65 MiB by the trend, 5 s less.
    expect(trend.estimate(25_000, 70 * MiB).seconds).toBeCloseTo(15, 6);
    // The old generation holds only 62 MiB: the live set cannot be more.
    expect(trend.estimate(25_000, 62 * MiB).seconds).toBeCloseTo(18, 6);
    // Past the exhaustion share: 0, not negative.
    expect(trend.estimate(60_000, 95 * MiB).seconds).toBe(0);
    // Below the floor nothing is projected; nor on readings that rose by less than 10 % of the limit.
    const low = new LeakTrend(100 * MiB, 70 * MiB, 600_000);
    for (const [at, mib] of [
      [0, 40],
      [10_000, 50],
      [20_000, 60],
    ])
      low.reading(mib * MiB, at);
    expect(low.estimate(20_000, Number.NaN)).toMatchObject({ rising: true, seconds: Number.POSITIVE_INFINITY });
    const slight = new LeakTrend(100 * MiB, 30 * MiB, 600_000);
    slight.reading(40 * MiB, 0);
    slight.reading(49 * MiB, 10_000);
    expect(slight.estimate(10_000, Number.NaN)).toMatchObject({ rising: false, seconds: Number.POSITIVE_INFINITY });
    // Two readings 10 % of the limit apart are a line: a small heap leaking fast gets few major GCs.
    slight.reading(52 * MiB, 20_000);
    expect(slight.estimate(20_000, Number.NaN)).toMatchObject({ rising: true, readings: 3 });
  });

  it('exports the time to exhaustion while the live set rises, and every other heap series from the first scrape', async () => {
    const heap = new InjectedHeap(176 * MiB, ['--max-old-space-size=128']);
    const t = setup({ heap: false });
    try {
      t.monitor.register((ctx) => new HeapSignal(ctx, heap));
      // Before any major GC: the live gauges read the old generation in use (20 + 2 MiB); no trend, so no time.
      const first = await t.collect();
      expect(first.value(METRICS.heapLive.name)).toBe(22 * MiB);
      expect(first.value(METRICS.heapLiveRatio.name)).toBeCloseTo(22 / 128, 6);
      expect(first.value(METRICS.heapLiveLimit.name)).toBe(128 * MiB);
      expect(first.points(METRICS.heapExhaustionTime.name)).toEqual([]);
      expect(t.monitor.snapshot().heap).toMatchObject({ liveBytes: null, exhaustionSeconds: null });
      for (const mib of [40, 50, 60, 70]) {
        t.advance(5000);
        heap.majorGc(mib);
      }
      // 2 MiB/s; 80 % of 128 is 102.4 MiB: (102.4 − 70) / 2 = 16.2 s.
      const rising = await t.collect();
      expect(rising.value(METRICS.heapExhaustionTime.name)).toBeCloseTo(16.2, 1);
      expect(t.monitor.snapshot().heap).toMatchObject({
        exhaustionLevel: 'critical',
        growthBytesPerSecond: 2 * MiB,
      });
      expect(t.alerts.filter((a) => a.signal === 'heap_exhaustion').map((a) => [a.level, a.threshold])).toEqual([
        ['critical', 120],
      ]);
    } finally {
      await t.close();
    }
  });

  it('a config whose CRITICAL bound is not below WARN fails, naming the field', () => {
    expect(() => setup({ thresholds: { heap: { exhaustionWarnSeconds: 60, exhaustionCriticalSeconds: 60 } } })).toThrow(
      /thresholds\.heap\.exhaustionCriticalSeconds/,
    );
    expect(() => setup({ thresholds: { heap: { trendWindowSeconds: 0 } } })).toThrow(
      /thresholds\.heap\.trendWindowSeconds/,
    );
  });
});

describe('nodeHeap', () => {
  /** Old-generation bytes in use now, as nodeHeap counts them. */
  function oldGenerationNow(): number {
    let bytes = 0;
    for (const s of getHeapSpaceStatistics())
      if (!['new_space', 'new_large_object_space', 'read_only_space'].includes(s.space_name))
        bytes += s.space_used_size;
    return bytes;
  }

  /** A full GC, then the reading it produced (the observer's callback runs soon after, not within). */
  async function majorGcReading(readings: [number, boolean][]): Promise<[number, boolean]> {
    const before = readings.length;
    fullGc();
    for (let waited = 0; readings.length === before; waited += 10) {
      if (waited > 10_000) throw new Error('no reading 10 s after a full GC');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return readings.at(-1)!;
  }

  it("reads the thread's run-queue wait while it observes major GCs, where Linux gives it (NaN elsewhere and after)", () => {
    const heap = nodeHeap();
    expect(heap.waitedMs()).toBeNaN();
    const stop = heap.onMajorGc(
      () => {},
      () => {},
      Number.POSITIVE_INFINITY,
    );
    const first = heap.waitedMs();
    // A total so far: it never goes down.
    for (const end = Date.now() + 20; Date.now() < end; );
    const second = heap.waitedMs();
    stop();
    if (existsSync('/proc/thread-self/schedstat')) {
      expect(first).toBeGreaterThanOrEqual(0);
      expect(second).toBeGreaterThanOrEqual(first);
    } else expect(second).toBeNaN();
    expect(heap.waitedMs()).toBeNaN();
  });

  it("reads after the collection below exactFrom, the collection's own figures from the first reading above it, and stops below half of it", async () => {
    fullGc();
    const baseline = oldGenerationNow();
    const readings: [number, boolean][] = [];
    const errors: unknown[] = [];
    // Past exactFrom only with the array below held: ~baseline + 24 MiB of doubles, in the old generation.
    const exactFrom = 2 * baseline + 8 * MiB;
    const stop = nodeHeap().onMajorGc(
      (bytes, exact) => readings.push([bytes, exact]),
      (error) => errors.push(error),
      exactFrom,
    );
    try {
      const [below, belowExact] = await majorGcReading(readings);
      expect(belowExact).toBe(false);
      expect(below).toBeGreaterThan(0.5 * baseline);
      expect(below).toBeLessThan(exactFrom);

      let held: number[] | undefined = new Array<number>(Math.ceil((baseline + 24 * MiB) / 8)).fill(0.5);
      const [arming, armingExact] = await majorGcReading(readings);
      expect(armingExact).toBe(false);
      expect(arming).toBeGreaterThanOrEqual(exactFrom);
      const [exact, isExact] = await majorGcReading(readings);
      expect(isExact).toBe(true);
      // The same live set, read at the collection's end: within a few MiB of the reading after it.
      expect(Math.abs(exact - arming)).toBeLessThan(8 * MiB);
      expect(held.length).toBeGreaterThan(0);

      held = undefined;
      const [released, releasedExact] = await majorGcReading(readings);
      expect(releasedExact).toBe(true);
      expect(released).toBeLessThan(exactFrom / 2);
      // Below half of exactFrom the profiler stopped: the next reading is taken after the collection again.
      const [, againExact] = await majorGcReading(readings);
      expect(againExact).toBe(false);
      expect(errors).toEqual([]);
    } finally {
      stop();
    }
  });
});
