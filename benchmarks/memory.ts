/**
 * Memory: heap after GC following 10⁴ and then 10⁶ instrumented requests
 * spread over 20 models, for both export modes, with a real MeterProvider
 * and reader collected along the way. Core's state is fixed-size (capped
 * label tables, typed-array histograms, ring-buffer windows), so the heap
 * must not grow with the number of requests.
 *
 *   pnpm bench:memory          (tsx benchmarks/memory.ts; re-runs itself under node --expose-gc)
 *
 * Goal: growth between the two points ≤ 1 MB.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { MeterProvider, type MetricProducer } from '@opentelemetry/sdk-metrics';
import { createMonitor, METRICS, type Monitor } from '@infersignal/core';
import { SMOKE } from './lib/env';
import { histogramCount, PullReader } from './lib/otel';
import { exposedGc } from './lib/gc';
import { printVerdict, table, writeSection, type Goal } from './lib/report';
import { fmtBytes } from './lib/stats';

const gc = exposedGc(import.meta.url);

const MODELS = Array.from({ length: 20 }, (_, i) => `model-${String(i).padStart(2, '0')}`);
const FIRST = SMOKE ? 1_000 : 10_000;
const TOTAL = SMOKE ? 10_000 : 1_000_000;
const TICK_EVERY = 10_000;
const MB = 1_000_000;

interface Point {
  heapUsed: number;
  arrayBuffers: number;
}

async function settle(reader: PullReader): Promise<Point> {
  // A collection first: the SDK allocates its export structures lazily.
  await reader.collect();
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, arrayBuffers: m.arrayBuffers };
}

async function measure(exportMode: 'api' | 'producer') {
  const box: { monitor?: Monitor } = {};
  const producer: MetricProducer = {
    collect: async (o) =>
      (await box.monitor!.metricProducer!.collect(o)) as Awaited<ReturnType<MetricProducer['collect']>>,
  };
  const reader = new PullReader(exportMode === 'producer' ? [producer] : undefined);
  const monitor = (box.monitor = createMonitor({
    meterProvider: new MeterProvider({ readers: [reader] }),
    exportMode,
    traces: false,
    detectorIntervalMs: 0,
  }));
  const queue = monitor.queue('memory', { capacity: 1024 });
  let done = 0;
  const run = (until: number) => {
    for (; done < until; done++) {
      const ticket = queue.enqueue(MODELS[done % MODELS.length]);
      ticket.start();
      const stream = ticket.stream();
      stream.token(1);
      stream.token(7);
      // 1 in 200 streams is cancelled and 1 in 500 requests errors: every outcome series exists.
      stream.end(done % 200 === 0 ? 'cancelled' : 'completed');
      ticket.end(done % 500 === 0 ? 'error' : 'completed');
      if (done % TICK_EVERY === 0) monitor.tick();
    }
  };
  run(FIRST);
  const first = await settle(reader);
  const t0 = performance.now();
  run(TOTAL);
  const seconds = (performance.now() - t0) / 1000;
  const last = await settle(reader);
  const exported = histogramCount((await reader.collect()).resourceMetrics, METRICS.queueWait.name);
  if (exported !== TOTAL) throw new Error(`${exportMode}: exported ${exported} queue waits, expected ${TOTAL}`);
  await monitor.close();
  return {
    exportMode,
    first,
    last,
    growth: last.heapUsed - first.heapUsed,
    buffersGrowth: last.arrayBuffers - first.arrayBuffers,
    seconds,
  };
}

const results = [await measure('api'), await measure('producer')];
const rows = results.map((r) => [
  r.exportMode,
  fmtBytes(r.first.heapUsed),
  fmtBytes(r.last.heapUsed),
  `**${fmtBytes(r.growth)}**`,
  fmtBytes(r.buffersGrowth),
  `${((TOTAL - FIRST) / r.seconds / 1000).toFixed(0)}k req/s`,
]);
const header = [
  'export mode',
  `heap after ${FIRST.toLocaleString('en')} requests`,
  `heap after ${TOTAL.toLocaleString('en')}`,
  'heap growth',
  'ArrayBuffer growth',
  'recording speed (1 thread)',
];
console.log(table(header, rows));
const goals: Goal[] = results.map((r) => ({
  text: `${r.exportMode} export heap growth ${fmtBytes(r.growth)} from ${FIRST.toLocaleString('en')} to ${TOTAL.toLocaleString('en')} requests (20 models)`,
  goal: '≤ 1 MB',
  met: r.growth + Math.max(0, r.buffersGrowth) <= MB,
}));
const verdict = printVerdict('memory', goals);

writeSection('memory', {
  title: 'memory: heap after GC, 10⁴ vs 10⁶ requests',
  command: 'pnpm bench:memory',
  packages: ['@opentelemetry/sdk-metrics', '@infersignal/core'],
  method: `One monitor per export mode on a real \`MeterProvider\`, requests over ${MODELS.length} models with every outcome; each point a collection, 4 forced GCs, \`process.memoryUsage()\`; growth (heap plus ArrayBuffers) between the two points.`,
  results: table(header, rows),
  verdict,
});
