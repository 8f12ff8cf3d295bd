/**
 * Detector cost: one update of each of core's detectors, per sample, and
 * their periodic evaluations, against one OTel SDK `Histogram.record` with
 * 2 attributes measured in the same rounds; then memory per detector
 * (heap + ArrayBuffers after GC, per instance, at default sizes).
 *
 *   pnpm bench:detectors       (tsx benchmarks/detectors.ts; re-runs itself under node --expose-gc)
 *
 * Per-sample updates run on the request path, evaluations on the detector
 * timer (once a second by default). Goal (ours, the issue asks only for the
 * figures): every per-sample update costs less than the OTel record it
 * sits next to (< 1.0×).
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { HISTOGRAM_BUCKETS, METRICS } from '@infersignal/core';
import { SlidingWindow, ThresholdDetector } from '@infersignal/core/signals';
import { DriftDetector } from '../packages/core/src/detectors/drift';
import { FixedHistogram } from '../packages/core/src/aggregates/histogram';
import { P99GlitchDetector } from '../packages/core/src/detectors/p99-glitch';
import { ZScoreDetector } from '../packages/core/src/detectors/zscore';
import { Bench } from 'tinybench';
import { ROUNDS, SMOKE, TASK_MS } from './lib/env';
import { exposedGc } from './lib/gc';
import { PullReader } from './lib/otel';
import { printVerdict, table, writeSection, type Goal } from './lib/report';
import { fmtBytes, fmtNs, fmtRatio, roundRatios, rotate, spread } from './lib/stats';

const gc = exposedGc(import.meta.url);
/** Calls per tinybench iteration, so the harness's ~0.1 µs per call does not swamp ~10 ns updates. */
const BATCH = 64;

// Inputs prepared once: a noisy latency series (seconds) and timestamps 1 ms apart.
const N = 4096;
const values = Float64Array.from({ length: N }, (_, i) => 0.05 + 0.01 * Math.sin(i) + (i % 97 === 0 ? 0.5 : 0));
let cursor = 0;
/** One clock per detector, so one task's time steps cannot empty another's window. */
const T0 = 1_700_000_000_000;
let windowClock = T0;
let glitchClock = T0;
let driftClock = T0;
let thresholdClock = T0;

interface Task {
  name: string;
  kind: 'per sample' | 'per tick' | 'baseline';
  fn: () => void;
  /** Calls per iteration. */
  calls: number;
}

const reader = new PullReader();
const otelHistogram = new MeterProvider({ readers: [reader] })
  .getMeter('detectors')
  .createHistogram(METRICS.queueWait.name, {
    unit: 's',
    advice: { explicitBucketBoundaries: [...HISTOGRAM_BUCKETS[METRICS.queueWait.name]!] },
  });
const attributes = { 'infersignal.queue.name': 'bench', 'gen_ai.request.model': 'llama' };
const fixed = new FixedHistogram(HISTOGRAM_BUCKETS[METRICS.queueWait.name]!);
const window = new SlidingWindow(2048);
const zscore = new ZScoreDetector(60, 3);
const glitch = new P99GlitchDetector(10_000, 4096, 20);
const drift = new DriftDetector(60);
const threshold = new ThresholdDetector({ warn: 0.2, critical: 0.5, forSeconds: 30, hysteresis: 0.1 });
// Full windows before timing: the steady state, where evaluations do the most work.
for (let i = 0; i < N; i++) {
  window.push(values[i]!, windowClock++);
  zscore.update(values[i]!);
  // 1 ms apart: all 4096 samples stay inside the 10 s glitch window.
  glitch.record(values[i]!, glitchClock++);
  drift.update(values[i]! * 1e9, (driftClock += 1000));
}

const batch = (one: () => void, calls = BATCH) => ({
  calls,
  fn: () => {
    for (let i = 0; i < calls; i++) one();
  },
});
const next = () => values[cursor++ & (N - 1)]!;
const tasks: Task[] = [
  {
    name: 'OTel Histogram.record, 2 attributes',
    kind: 'baseline',
    ...batch(() => otelHistogram.record(next(), attributes)),
  },
  { name: 'FixedHistogram.record', kind: 'per sample', ...batch(() => fixed.record(next())) },
  { name: 'SlidingWindow.push (2048)', kind: 'per sample', ...batch(() => window.push(next(), windowClock++)) },
  { name: 'P99GlitchDetector.record (4096)', kind: 'per sample', ...batch(() => glitch.record(next(), glitchClock++)) },
  { name: 'ZScoreDetector.update (window 60)', kind: 'per tick', ...batch(() => zscore.update(next())) },
  {
    name: 'ThresholdDetector.update (for + hysteresis)',
    kind: 'per tick',
    ...batch(() => threshold.update(next(), (thresholdClock += 1000))),
  },
  {
    name: 'DriftDetector.update + evaluate (60 samples)',
    kind: 'per tick',
    ...batch(() => {
      drift.update(next() * 1e9, (driftClock += 1000));
      drift.evaluate(1e9);
    }, 8),
  },
  {
    name: 'P99GlitchDetector.evaluate (4096 in window)',
    kind: 'per tick',
    ...batch(() => glitch.evaluate(glitchClock), 1),
  },
];

const ns = new Map<string, number[]>(tasks.map((t) => [t.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  const bench = new Bench({ time: TASK_MS / 2, warmupTime: SMOKE ? 10 : 50 });
  for (const t of rotate(tasks, round)) bench.add(t.name, t.fn);
  await bench.run();
  for (const t of bench.tasks) {
    const mean = t.result?.latency.mean;
    if (mean === undefined) throw new Error(`tinybench produced no result for ${t.name}`);
    ns.get(t.name)!.push((mean * 1e6) / tasks.find((x) => x.name === t.name)!.calls);
  }
  console.log(`round ${round + 1}/${ROUNDS} done`);
}

// Memory per detector: heap + ArrayBuffers after GC, for COUNT instances at default sizes.
const COUNT = SMOKE ? 50 : 500;
function bytesPer(make: () => unknown): number {
  gc();
  gc();
  const m0 = process.memoryUsage();
  const keep: unknown[] = [];
  for (let i = 0; i < COUNT; i++) keep.push(make());
  gc();
  gc();
  const m1 = process.memoryUsage();
  if (keep.length !== COUNT) throw new Error('unreachable');
  return (m1.heapUsed - m0.heapUsed + (m1.arrayBuffers - m0.arrayBuffers)) / COUNT;
}
const memory: Array<[string, number]> = [
  [
    `FixedHistogram (${HISTOGRAM_BUCKETS[METRICS.queueWait.name]!.length + 1} buckets)`,
    bytesPer(() => new FixedHistogram(HISTOGRAM_BUCKETS[METRICS.queueWait.name]!)),
  ],
  ['SlidingWindow (2048)', bytesPer(() => new SlidingWindow(2048))],
  ['ZScoreDetector (window 60)', bytesPer(() => new ZScoreDetector(60, 3))],
  ['P99GlitchDetector (4096 samples)', bytesPer(() => new P99GlitchDetector(10_000, 4096, 20))],
  ['DriftDetector (60 samples)', bytesPer(() => new DriftDetector(60))],
  ['ThresholdDetector', bytesPer(() => new ThresholdDetector({ warn: 0.2, critical: 0.5, forSeconds: 30 }))],
];

const base = ns.get(tasks[0]!.name)!;
const rows = tasks.map((t) => {
  const s = spread(ns.get(t.name)!);
  return [
    t.name,
    t.kind,
    `${fmtNs(s.median)} (${fmtNs(s.min)}–${fmtNs(s.max)})`,
    fmtRatio(roundRatios(ns.get(t.name)!, base)),
  ];
});
const memRows = memory.map(([name, bytes]) => [name, fmtBytes(bytes)]);
console.log(table(['operation', 'runs', 'time, median (range)', 'vs OTel record'], rows));
console.log(table(['detector', 'memory per instance'], memRows));

const perSample = tasks.filter((t) => t.kind === 'per sample');
const worstPerSample = perSample
  .map((t) => ({ name: t.name, ratio: roundRatios(ns.get(t.name)!, base).median }))
  .sort((a, b) => b.ratio - a.ratio)[0]!;
const goals: Goal[] = [
  {
    text: `slowest per-sample update (${worstPerSample.name}) ${worstPerSample.ratio.toFixed(2)}× one OTel record`,
    goal: '< 1.0×',
    met: worstPerSample.ratio < 1,
  },
  {
    text: `largest detector ${fmtBytes(Math.max(...memory.map(([, b]) => b)))} per instance`,
    goal: 'fixed at construction',
    // Fixed-size: P99GlitchDetector's 3 × 4096 Float64Arrays are its bound (96 KiB) plus object overhead.
    met: Math.max(...memory.map(([, b]) => b)) < 128 * 1024,
  },
];
const verdict = printVerdict('detectors', goals);

writeSection('detectors', {
  title: 'detectors: update cost per sample and memory per detector',
  command: 'pnpm bench:detectors',
  packages: ['@infersignal/core', '@opentelemetry/sdk-metrics', 'tinybench'],
  method: `tinybench, ${ROUNDS} rotated rounds, windows full; against one OTel \`Histogram.record\` (2 attributes). *per sample* runs once a request, *per tick* once a second per queue or model. Memory: growth after GC over ${COUNT} instances, all allocated at construction.`,
  results: [
    table(['operation', 'runs', 'time, median (range)', 'vs OTel record'], rows),
    '',
    `Memory per instance: ${memRows.map(([name, bytes]) => `${name} ${bytes}`).join(', ')}.  `,
  ].join('\n'),
  verdict,
});
