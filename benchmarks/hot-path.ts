/**
 * Hot path: the cost of one fully instrumented request through core
 * (enqueue → start → stream first token, more tokens, stream end → end)
 * against the bare OTel SDK calls it makes, done by hand with cached
 * attribute objects, on a real MeterProvider with a reader attached.
 *
 *   pnpm bench:hot-path        (tsx benchmarks/hot-path.ts)
 *   BENCH_BASELINE=/path/to/other/checkout pnpm bench:hot-path
 *                              A/B of two builds: both export modes also run
 *                              on that checkout's built core (`@baseline`),
 *                              interleaved with the rest; prints, writes no docs
 *
 * Variants, interleaved in rotated order each round (tinybench):
 * - bare OTel: 5 histogram records + 4 counter adds and the 5 clock reads
 *   the request needs, the same instruments recorded by hand;
 * - bare OTel, histograms only: the 5 records alone, exactly the SDK calls
 *   core's API path makes (its counters are observable counters over core's
 *   own totals, read at collection) — the baseline the goal is judged on;
 *   both bare variants use the attribute sets core exports (the GenAI
 *   conventions' operation and provider names on TTFT, TPOT and the request
 *   duration), checked after the run: the SDK hashes every attribute at
 *   every record, so a floor with fewer would be a cheaper set of records;
 * - InferSignal, API export (`exportMode: 'api'`): core over the same SDK;
 * - InferSignal, producer export (`exportMode: 'producer'`): core updates
 *   only its typed-array aggregates; `monitor.metricProducer` is read by
 *   the MetricReader at collection time;
 * - InferSignal, producer export + outlier traces (`traces: 'outliers'`,
 *   start()'s default once traces are on): the same, with a tracer provider
 *   (BatchSpanProcessor into a dropping exporter) and an AsyncLocalStorage
 *   context manager registered while it runs: what InferSignal itself adds
 *   per request for outlier traces (the context read at arrival, the tail,
 *   the draw, and the spans of the ~2 % kept), without the noise of a server;
 * - prom-client: the same observes and incs, for context.
 * Each tinybench iteration runs 16 requests so the harness's own per-call
 * overhead (~0.1 µs) does not dominate the sub-µs producer path.
 * A correctness check runs last: 1000 requests with an injected clock
 * through both export modes must export identical histograms and counters.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { performance } from 'node:perf_hooks';
import { type Attributes, context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, type MetricProducer, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR, HISTOGRAM_BUCKETS, METRICS, createMonitor, type Monitor, type QueueTracker } from '@infersignal/core';
import client from 'prom-client';
import { Bench } from 'tinybench';
import { BASELINE, importFrom } from './lib/baseline';
import { ROUNDS, SMOKE, TASK_MS } from './lib/env';
import { DropSpanExporter, histogramCount, PullReader } from './lib/otel';
import { printVerdict, table, writeSection, type Goal } from './lib/report';
import { fmtNs, fmtRatio, roundRatios, rotate, spread } from './lib/stats';
import { transformersOverhead } from './lib/transformers-overhead';

const BATCH = 16;
/** Clock reads of one request by hand (bareOtel's `now()` calls): one per transition. */
const BARE_CLOCK_READS = 5;
const TOKENS = 16;
const QUEUE = 'bench';
const MODEL = 'llama-3-8b';

// --- bare OTel: the same instruments, by hand ------------------------------
function bareOtel(counters: boolean) {
  const reader = new PullReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter('bare');
  const hist = (spec: { name: string; unit: string }) =>
    meter.createHistogram(spec.name, {
      unit: spec.unit,
      advice: { explicitBucketBoundaries: [...HISTOGRAM_BUCKETS[spec.name]!] },
    });
  const queueWait = hist(METRICS.queueWait);
  const inference = hist(METRICS.inferenceDuration);
  const request = hist(METRICS.requestDuration);
  const ttft = hist(METRICS.timeToFirstToken);
  const tpot = hist(METRICS.timePerOutputToken);
  const requests = meter.createCounter(METRICS.requests.name);
  const streams = meter.createCounter(METRICS.streams.name);
  const tokens = meter.createCounter(METRICS.streamTokens.name);
  // Cached once, as core caches them: a fresh object per call would cost more.
  // The sets core exports (see sameSeries): TTFT, TPOT and the request duration carry the GenAI conventions'.
  const waitAttrs: Attributes = { [ATTR.queue]: QUEUE, [ATTR.model]: MODEL };
  const outcomeAttrs: Attributes = { [ATTR.queue]: QUEUE, [ATTR.model]: MODEL, [ATTR.outcome]: 'completed' };
  const genAiAttrs: Attributes = {
    [ATTR.operationName]: 'chat',
    [ATTR.providerName]: 'self_hosted',
    [ATTR.model]: MODEL,
  };
  const requestAttrs: Attributes = { ...genAiAttrs, [ATTR.queue]: QUEUE, [ATTR.outcome]: 'completed' };
  const modelAttrs: Attributes = { [ATTR.model]: MODEL };
  const streamAttrs: Attributes = { [ATTR.model]: MODEL, [ATTR.outcome]: 'completed' };
  const now = () => performance.timeOrigin + performance.now();
  const one = () => {
    const arrival = now();
    const started = now();
    queueWait.record((started - arrival) / 1000, waitAttrs);
    const first = now();
    ttft.record((first - arrival) / 1000, genAiAttrs);
    if (counters) tokens.add(1, modelAttrs);
    const last = now();
    if (counters) {
      tokens.add(TOKENS - 1, modelAttrs);
      streams.add(1, streamAttrs);
    }
    tpot.record((last - first) / 1000 / (TOKENS - 1), genAiAttrs);
    const end = now();
    inference.record((end - started) / 1000, outcomeAttrs);
    request.record((end - arrival) / 1000, requestAttrs);
    if (counters) requests.add(1, outcomeAttrs);
  };
  return {
    reader,
    run: () => {
      for (let i = 0; i < BATCH; i++) one();
    },
  };
}

// --- InferSignal: the same request through core ---------------------------
function oneRequest(queue: QueueTracker): void {
  const ticket = queue.enqueue(MODEL);
  ticket.start();
  const stream = ticket.stream();
  stream.token(1);
  stream.token(TOKENS - 1);
  stream.end('completed');
  ticket.end('completed');
}

/**
 * A tracer provider as a server's (a batch processor, exporting to nowhere), and a count of the spans ended
 * through it: every span made, whether or not the batch processor got to export it within the run.
 */
function droppingTracerProvider() {
  const counted = { spans: 0 };
  const counter: SpanProcessor = {
    onStart: () => {},
    onEnd: () => {
      counted.spans++;
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  return {
    counted,
    provider: new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new DropSpanExporter()), counter] }),
  };
}

/**
 * The request and inference histograms are opt-in (no rule or panel reads them): asked for here, of this
 * tree and of a baseline checkout alike, so each makes the five records the bare variants make. A baseline
 * older than the option refuses it and records them anyway.
 */
function createWithOptIn(create: typeof createMonitor, options: Parameters<typeof createMonitor>[0]): Monitor {
  try {
    return create({ ...options, optInMetrics: [METRICS.requestDuration.name, METRICS.inferenceDuration.name] });
  } catch (error) {
    if (create === createMonitor || !String(error).includes('optInMetrics')) throw error;
    return create(options);
  }
}

function inferSignal(
  exportMode: 'api' | 'producer',
  clock?: () => number,
  traces = false,
  create: typeof createMonitor = createMonitor,
) {
  let monitor: Monitor;
  let reader: PullReader;
  const tracing = traces ? droppingTracerProvider() : undefined;
  if (exportMode === 'producer') {
    // The producer needs the monitor and the reader needs the producer: bind through a box.
    const box: { monitor?: Monitor } = {};
    const producer: MetricProducer = {
      collect: async (o) =>
        (await box.monitor!.metricProducer!.collect(o)) as Awaited<ReturnType<MetricProducer['collect']>>,
    };
    reader = new PullReader([producer]);
    const provider = new MeterProvider({ readers: [reader] });
    monitor = box.monitor = createWithOptIn(create, {
      meterProvider: provider,
      exportMode,
      ...(tracing ? { traces: 'outliers', tracerProvider: tracing.provider } : { traces: false }),
      detectorIntervalMs: 0,
      eventLoop: false,
      clock,
    });
  } else {
    reader = new PullReader();
    monitor = createWithOptIn(create, {
      meterProvider: new MeterProvider({ readers: [reader] }),
      exportMode,
      traces: false,
      detectorIntervalMs: 0,
      eventLoop: false,
      clock,
    });
  }
  const queue = monitor.queue(QUEUE, { capacity: 1024 });
  let requests = 0;
  return {
    reader,
    monitor,
    queue,
    /** Spans ended per request run so far (outlier traces only). */
    spansPerRequest: () => (tracing?.counted.spans ?? 0) / requests,
    run: () => {
      for (let i = 0; i < BATCH; i++) oneRequest(queue);
      requests += BATCH;
    },
  };
}

// --- prom-client: the equivalent observes ----------------------------------
function promClient() {
  const registry = new client.Registry();
  const h = (name: string, labelNames: string[], buckets: readonly number[]) =>
    new client.Histogram({ name, help: name, labelNames, buckets: [...buckets], registers: [registry] });
  const c = (name: string, labelNames: string[]) =>
    new client.Counter({ name, help: name, labelNames, registers: [registry] });
  const queueWait = h('queue_wait_seconds', ['queue', 'model'], HISTOGRAM_BUCKETS[METRICS.queueWait.name]!);
  const inference = h(
    'inference_seconds',
    ['queue', 'model', 'outcome'],
    HISTOGRAM_BUCKETS[METRICS.inferenceDuration.name]!,
  );
  const request = h('request_seconds', ['queue', 'model', 'outcome'], HISTOGRAM_BUCKETS[METRICS.requestDuration.name]!);
  const ttft = h('ttft_seconds', ['model'], HISTOGRAM_BUCKETS[METRICS.timeToFirstToken.name]!);
  const tpot = h('tpot_seconds', ['model'], HISTOGRAM_BUCKETS[METRICS.timePerOutputToken.name]!);
  const requests = c('requests_total', ['queue', 'model', 'outcome']);
  const streams = c('streams_total', ['model', 'outcome']);
  const tokens = c('tokens_total', ['model']);
  const waitLabels = { queue: QUEUE, model: MODEL };
  const outcomeLabels = { queue: QUEUE, model: MODEL, outcome: 'completed' };
  const modelLabels = { model: MODEL };
  const streamLabels = { model: MODEL, outcome: 'completed' };
  const now = () => performance.timeOrigin + performance.now();
  const one = () => {
    const arrival = now();
    const started = now();
    queueWait.observe(waitLabels, (started - arrival) / 1000);
    const first = now();
    ttft.observe(modelLabels, (first - arrival) / 1000);
    tokens.inc(modelLabels, 1);
    const last = now();
    tokens.inc(modelLabels, TOKENS - 1);
    streams.inc(streamLabels, 1);
    tpot.observe(modelLabels, (last - first) / 1000 / (TOKENS - 1));
    const end = now();
    inference.observe(outcomeLabels, (end - started) / 1000);
    request.observe(outcomeLabels, (end - arrival) / 1000);
    requests.inc(outcomeLabels, 1);
  };
  return {
    registry,
    run: () => {
      for (let i = 0; i < BATCH; i++) one();
    },
  };
}

// --- correctness: both export modes export the same numbers ---------------
type Point = { attributes: Attributes; value: unknown };
/** JSON with object keys sorted, so key order (SDK vs producer) does not count as a difference. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}
function hotPathPoints(rm: ResourceMetrics): Map<string, string> {
  const names = new Set<string>(
    [
      METRICS.queueWait,
      METRICS.inferenceDuration,
      METRICS.requestDuration,
      METRICS.timeToFirstToken,
      METRICS.timePerOutputToken,
      METRICS.requests,
      METRICS.streams,
      METRICS.streamTokens,
    ].map((s) => s.name),
  );
  const out = new Map<string, string>();
  for (const scope of rm.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (!names.has(metric.descriptor.name)) continue;
      for (const p of metric.dataPoints as Point[]) {
        // Core exports a known model's stream outcomes at 0 before any happens; no request here recorded them.
        if (p.value === 0) continue;
        const attrs = JSON.stringify(Object.entries(p.attributes).sort());
        out.set(`${metric.descriptor.name} ${attrs}`, canonical(p.value));
      }
    }
  }
  return out;
}

async function sameExport(): Promise<{ identical: boolean; series: number; detail: string; clockReads: number }> {
  // A deterministic clock: each read advances 1.5 ms, so every duration is known and equal on both sides.
  let reads = 0;
  const clockOf = () => {
    let t = 1_700_000_000_000;
    return () => {
      reads++;
      return (t += 1.5);
    };
  };
  const api = inferSignal('api', clockOf());
  const producer = inferSignal('producer', clockOf());
  const REQUESTS = 1000;
  reads = 0;
  for (let i = 0; i < REQUESTS; i++) {
    oneRequest(api.queue);
    oneRequest(producer.queue);
  }
  // Every clock read a request made, through both monitors: one per transition is the least that keeps each figure exact.
  const clockReads = reads / (2 * REQUESTS);
  const a = hotPathPoints((await api.reader.collect()).resourceMetrics);
  const b = hotPathPoints((await producer.reader.collect()).resourceMetrics);
  const diffs = [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k));
  await Promise.all([api.monitor.close(), producer.monitor.close()]);
  return {
    clockReads,
    identical: diffs.length === 0 && a.size > 0,
    series: a.size,
    detail: diffs
      .slice(0, 3)
      .map((k) => `${k}: api ${a.get(k)} producer ${b.get(k)}`)
      .join('; '),
  };
}

/**
 * The series (instrument and attribute set) each reader holds for the hot
 * path's instruments: the bare variants must record the very series core
 * exports, or their floor is another set of records (the SDK's cost per
 * record grows with the attributes it hashes).
 */
function seriesOf(rm: ResourceMetrics, histogramsOnly: boolean): string[] {
  const counters = new Set<string>([METRICS.requests.name, METRICS.streams.name, METRICS.streamTokens.name]);
  return [...hotPathPoints(rm).keys()].filter((key) => !histogramsOnly || !counters.has(key.split(' ')[0]!)).sort();
}

// --- run -----------------------------------------------------------------
const bare = bareOtel(true);
const bareHistograms = bareOtel(false);
const api = inferSignal('api');
const producer = inferSignal('producer');
const outliers = inferSignal('producer', undefined, true);
const prom = promClient();
/** The other checkout's core, for the A/B mode: the same two export modes on its build. */
const baselineCore = BASELINE
  ? await importFrom<{ createMonitor: typeof createMonitor }>(BASELINE, '@infersignal/core')
  : undefined;
const apiBaseline = baselineCore && inferSignal('api', undefined, false, baselineCore.createMonitor);
const producerBaseline = baselineCore && inferSignal('producer', undefined, false, baselineCore.createMonitor);
const OUTLIERS = 'InferSignal (producer export) + outlier traces';
/**
 * The tracing setup a server with traces has, registered only while the
 * outlier-traces variant runs: every SDK record reads the active context
 * (for exemplars), so with it registered throughout, the other variants
 * would pay for a context manager they do not have.
 */
const contextManager = new AsyncLocalStorageContextManager();
const withTracingSetup = {
  beforeAll: () => {
    context.setGlobalContextManager(contextManager.enable());
    // As a server's first span export does: on Node 20 this turns AsyncLocalStorage's async hooks on.
    context.with(context.active(), () => {});
  },
  afterAll: () => {
    context.disable();
  },
};
const tasks: Array<{ name: string; run: () => void; options?: typeof withTracingSetup }> = [
  { name: 'bare OTel calls', run: bare.run },
  { name: 'bare OTel, histograms only', run: bareHistograms.run },
  { name: 'InferSignal (API export)', run: api.run },
  { name: 'InferSignal (producer export)', run: producer.run },
  { name: OUTLIERS, run: outliers.run, options: withTracingSetup },
  { name: 'prom-client equivalent', run: prom.run },
  ...(apiBaseline && producerBaseline
    ? [
        { name: 'InferSignal (API export) @baseline', run: apiBaseline.run },
        { name: 'InferSignal (producer export) @baseline', run: producerBaseline.run },
      ]
    : []),
];
/** ns per request, per task, per round. */
const perRequest = new Map<string, number[]>(tasks.map((t) => [t.name, []]));
for (let round = 0; round < ROUNDS; round++) {
  const bench = new Bench({ time: TASK_MS, warmupTime: SMOKE ? 10 : 100 });
  for (const task of rotate(tasks, round)) bench.add(task.name, task.run, task.options);
  await bench.run();
  for (const task of bench.tasks) {
    const mean = task.result?.latency.mean;
    if (mean === undefined) throw new Error(`tinybench produced no result for ${task.name}`);
    perRequest.get(task.name)!.push((mean * 1e6) / BATCH);
  }
  console.log(
    `round ${round + 1}/${ROUNDS}: ${tasks.map((t) => `${t.name} ${fmtNs(perRequest.get(t.name)!.at(-1)!)}`).join(', ')}`,
  );
}

if (BASELINE !== undefined) {
  // Per round, this tree's export over the baseline's, each already over the round's bare OTel calls.
  const base = perRequest.get('bare OTel calls')!;
  for (const mode of ['API export', 'producer export']) {
    const here = roundRatios(perRequest.get(`InferSignal (${mode})`)!, base);
    const there = roundRatios(perRequest.get(`InferSignal (${mode}) @baseline`)!, base);
    const ab = roundRatios(
      perRequest.get(`InferSignal (${mode})`)!,
      perRequest.get(`InferSignal (${mode}) @baseline`)!,
    );
    console.log(
      `${mode}: this tree ${fmtRatio(ab)} the baseline's; over bare OTel ${fmtRatio(here)} here, ${fmtRatio(there)} on the baseline`,
    );
  }
  const aa = roundRatios(perRequest.get('bare OTel, histograms only')!, base);
  console.log(`context: bare OTel histograms only over all bare calls ${fmtRatio(aa)} (the same work each round)`);
  console.log('baseline run (BENCH_BASELINE): no verdict, docs/benchmarks.md left alone');
  await Promise.all([api.monitor.close(), producer.monitor.close(), outliers.monitor.close()]);
  await Promise.all([apiBaseline!.monitor.close(), producerBaseline!.monitor.close()]);
  process.exit(0);
}

// The SDK really recorded: every request of every variant is in its reader.
const bareCount = histogramCount((await bare.reader.collect()).resourceMetrics, METRICS.queueWait.name);
const apiCount = histogramCount((await api.reader.collect()).resourceMetrics, METRICS.queueWait.name);
const producerCount = histogramCount((await producer.reader.collect()).resourceMetrics, METRICS.queueWait.name);
if (!(bareCount > 0 && apiCount > 0 && producerCount > 0))
  throw new Error(`a variant exported nothing: bare ${bareCount}, api ${apiCount}, producer ${producerCount}`);
const apiSeries = seriesOf((await api.reader.collect()).resourceMetrics, false);
const floorSeries = {
  all: seriesOf((await bare.reader.collect()).resourceMetrics, false),
  histograms: seriesOf((await bareHistograms.reader.collect()).resourceMetrics, true),
};
if (floorSeries.all.join('\n') !== apiSeries.join('\n'))
  throw new Error(
    `bare OTel calls record other series than core:\n${floorSeries.all.join('\n')}\nvs core:\n${apiSeries.join('\n')}`,
  );
if (floorSeries.histograms.join('\n') !== seriesOf((await api.reader.collect()).resourceMetrics, true).join('\n'))
  throw new Error(`bare OTel, histograms only, records other series than core's histograms`);
const check = await sameExport();
const spansPerRequest = outliers.spansPerRequest();
await Promise.all([api.monitor.close(), producer.monitor.close(), outliers.monitor.close()]);
// What @infersignal/transformers adds to one transformers.js pipeline call (lib/transformers-overhead.ts).
const tjs = await transformersOverhead();
const tjsLine = `@infersignal/transformers adds ${fmtNs(tjs.addedNs)} per pipeline call (per round ${fmtNs(tjs.addedRange[0])}–${fmtNs(tjs.addedRange[1])}), ${tjs.ratio.median.toFixed(2)}× the bare call of ${fmtNs(tjs.bareNs)} on the tiny BERT`;

const base = perRequest.get('bare OTel calls')!;
const rows = tasks.map((t) => {
  const values = perRequest.get(t.name)!;
  const s = spread(values);
  return [t.name, `${fmtNs(s.median)} (${fmtNs(s.min)}–${fmtNs(s.max)})`, fmtRatio(roundRatios(values, base))];
});
const apiRatioAll = roundRatios(perRequest.get('InferSignal (API export)')!, base);
const apiRatio = roundRatios(
  perRequest.get('InferSignal (API export)')!,
  perRequest.get('bare OTel, histograms only')!,
);
const producerRatio = roundRatios(perRequest.get('InferSignal (producer export)')!, base);
const producerNs = spread(perRequest.get('InferSignal (producer export)')!).median;
const promRatio = roundRatios(perRequest.get('prom-client equivalent')!, base);
/** What outlier traces add to a request, per round: the variant minus the producer export of the same round. */
const outlierAdded = spread(
  perRequest.get(OUTLIERS)!.map((ns, round) => ns - perRequest.get('InferSignal (producer export)')![round]!),
);
const outlierLine = `outlier traces add ${fmtNs(outlierAdded.median)} per request over the producer export (per round ${fmtNs(outlierAdded.min)}–${fmtNs(outlierAdded.max)}), ${(spansPerRequest * 100).toFixed(1)} % of requests making a span`;

console.log('');
console.log(
  table(
    [
      'variant (one request: 5 histogram records, 4 counter adds)',
      'per request, median (range)',
      'vs bare OTel, median (range)',
    ],
    rows,
  ),
);
console.log(
  `export check: ${check.series} series, API and producer exports ${check.identical ? 'identical' : `DIFFER: ${check.detail}`}`,
);
const goals: Goal[] = [
  {
    text: `API export ${apiRatio.median.toFixed(2)}× the bare OTel calls it makes (${apiRatioAll.median.toFixed(2)}× with the counter adds)`,
    goal: '≤ 1.2×',
    met: apiRatio.median <= 1.2,
  },
  {
    text: `producer export ${producerRatio.median.toFixed(2)}× bare OTel (${fmtNs(producerNs)} per request)`,
    goal: '≤ 0.25× and < 1 µs',
    met: producerRatio.median <= 0.25 && producerNs < 1000,
  },
  {
    text: `producer and API exports ${check.identical ? 'identical' : 'differ'} (${check.series} series)`,
    goal: 'identical',
    met: check.identical,
  },
  { text: tjsLine, goal: '≤ 20 µs per call', met: tjs.addedNs <= 20_000 },
];
console.log(`prom-client equivalent: ${promRatio.median.toFixed(2)}× bare OTel (context, no goal)`);
console.log(`${outlierLine} (context, no goal: the server suite judges it)`);
console.log(
  `clock reads per request: ${check.clockReads} through core (arrival, start, first token, last token, end), ${BARE_CLOCK_READS} by hand`,
);
const verdict = printVerdict('hot-path', goals);

writeSection('hot-path', {
  title: 'hot path: one instrumented request through core vs the bare OTel calls',
  command: 'pnpm bench:hot-path',
  packages: [
    '@opentelemetry/sdk-metrics',
    'prom-client',
    'tinybench',
    '@infersignal/core',
    '@huggingface/transformers',
  ],
  method: `One request = enqueue → start → ${TOKENS} tokens → end: 5 histogram records, 4 counter adds, 5 clock reads; *bare OTel calls* makes them by hand with core's attribute sets, *histograms only* the 5 records the API export makes. tinybench, ${ROUNDS} rotated rounds.`,
  results: [
    table(['variant', 'per request, median (range)', 'vs bare OTel, median (range)'], rows),
    '',
    `Export check: ${check.identical ? `identical values for all ${check.series} series` : `DIFFERENT values: ${check.detail}`}; clock reads per request ${check.clockReads} through core, ${BARE_CLOCK_READS} by hand. Outlier traces' own price (no goal here): ${outlierLine}.  `,
    '',
    table(
      [
        'transformers.js `feature-extraction`, 4 texts, tiny BERT (a worst case)',
        'per call, median (range)',
        'vs bare call, median (IQR)',
      ],
      tjs.rows,
    ),
  ].join('\n'),
  verdict,
});
