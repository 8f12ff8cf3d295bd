/**
 * llama: the cost per generated token of `@infersignal/llama` against the bare node-llama-cpp runtime,
 * measured in the same process on the same generated model.
 *
 *   pnpm bench:llama           (tsx benchmarks/llama.ts; BENCH_ROUNDS, LLAMA_TOKENS, LLAMA_SHORT_TOKENS,
 *                              LLAMA_GENERATIONS, LLAMA_WARMUP)
 *   LLAMA_ISOLATE=1 pnpm bench:llama   adds each difference of the call alone (diagnostic; docs not written)
 *   LLAMA_PROFILE=1 pnpm bench:llama   adds the main-thread time sampled in InferSignal's code (and
 *                              OpenTelemetry SDK's) per generation of each variant (diagnostic; docs not written)
 *
 * Two wrapped models (API export, producer export), each with its own context of the same GGUF (one
 * sequence, 256 tokens, one thread). The bare variants run `LlamaCompletion.generateCompletionWithMeta()`
 * with a no-op `onToken` (what an app streaming tokens runs without InferSignal) on the wrapped model's own
 * sequence, between its generations: each ratio compares the same weights, KV cache and llama.cpp state,
 * so a difference between two contexts (where their buffers landed in memory) cannot pass for wrapper
 * cost. Five variants, run in a new shuffled order every round (seeded, so runs repeat; see roundOrder):
 * - bare on context 1, and again (a second, identical variant: the A/A control of the method);
 * - InferSignal, API export (`model.complete()` with the same options, a real MeterProvider with a reader),
 *   on context 1;
 * - bare on context 2, and InferSignal, producer export on context 2;
 * - the two bare/wrapped pairs again at LLAMA_SHORT_TOKENS (not judged: the split of the added cost into
 *   a fixed part per generation and a part per token).
 * Before measuring, every judged variant runs LLAMA_WARMUP two-token generations, so the wrapper's
 * per-generation code is measured at V8's optimized steady state (see WARMUP).
 * The figure is process CPU time (user + system, llama.cpp's threads included) per generated token: the
 * wrapper's cost is work on the main thread, and CPU time does not count the waits a loaded machine adds
 * to wall time (shown beside it). The main thread's own CPU time (Linux `/proc/thread-self/schedstat`) is
 * shown apart: the wrapper's work lands there, llama.cpp's decoding does not. Each generation is
 * LLAMA_TOKENS tokens by the runtime's own count; ratios are taken per round against the bare variant of
 * the same context in that round.
 *
 * The model is the tiny generated one (scripts/make-gguf.ts, printable: one token per callback) at
 * ~200 µs a token on one thread: the wrapper's share is as large as it gets. A real model spends
 * 10–1,000× longer per token in llama.cpp, with the same wrapper cost per generation and per token.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createMonitor, type Monitor } from '@infersignal/core';
import { createLlamaModel, type MonitoredLlamaModel } from '@infersignal/llama';
import { getLlama, type LlamaCompletion, type LlamaContextSequence } from 'node-llama-cpp';
import { writeGguf } from '../scripts/make-gguf';
import { ROUNDS, SMOKE, rounds } from './lib/env';
import { PullReader } from './lib/otel';
import { SampledCode, monotonicUs } from './lib/sampled-code';
import { printVerdict, table, writeSection, type Goal } from './lib/report';
import { fmtRatio, fmtSpread, roundRatios, spread, type Spread } from './lib/stats';

const TOKENS = Number(process.env.LLAMA_TOKENS ?? (SMOKE ? 16 : 128));
/** The shorter generations of the split: the same variants at two lengths part fixed from per-token cost. */
const SHORT_TOKENS = Number(process.env.LLAMA_SHORT_TOKENS ?? (SMOKE ? 4 : 32));
/**
 * Short generations per variant before measuring. The wrapper's code runs once per generation, not per
 * token, so V8 optimizes it only after hundreds to ~2,500 generations (node-llama-cpp's per-token code is
 * optimized within the first); a server reaches that steady state in its first minutes, and the benchmark
 * measures it.
 */
const WARMUP = Number(process.env.LLAMA_WARMUP ?? (SMOKE ? 2 : 2500));
const GENERATIONS = Number(process.env.LLAMA_GENERATIONS ?? (SMOKE ? 1 : 2));
/**
 * Many rounds: one round's ratio spreads over ±4 % (IQR 0.98–1.06 on a quiet machine: llama.cpp's own time
 * varies), against a goal of 1 %. The median of n such ratios has a standard error of about
 * 1.25 · (IQR / 1.35) / √n: 0.5 % for 201 rounds (a 95 % interval ~1.7 % wide, which could not tell 1.002×
 * from 1.012×), 0.3 % for 601 (about 3.5 minutes for the nine variants on this model). Core's stream work
 * for one token costs ~0.1 µs in a tight loop but ~0.5–1.5 µs between two tokens, where node-llama-cpp's
 * own JavaScript has just evicted it from the caches, which is why the wrapper hands tokens to the stream
 * in batches.
 */
const ROUND_COUNT = SMOKE ? ROUNDS : rounds(601);
const CONTEXT = { contextSize: 256, threads: 1 } as const;
const PROMPT = 'The quick brown fox';
const noop = () => {};

const dir = mkdtempSync(join(tmpdir(), 'infersignal-bench-llama-'));
const path = writeGguf(join(dir, 'tiny.gguf'), { printable: true, seed: 11 });
const llama = await getLlama({ gpu: false, build: 'never', maxThreads: 1 });

/** CPU time of the calling thread in µs (Linux), or null where there is no schedstat to read. */
function threadCpuUs(): number | null {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]) / 1000;
  } catch {
    return null;
  }
}

interface Variant {
  name: string;
  /** Tokens per generation. */
  tokens: number;
  /** The variant its per-round ratio is taken against (the bare run on the same context). */
  baseline?: Variant;
  /** Runs one generation of `maxTokens` (default `tokens`), returns the tokens the runtime generated. */
  generate(this: Variant, maxTokens?: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * The bare runtime on a sequence: a LlamaCompletion of its own, no InferSignal code on the path (`run`
 * changes the call, for the LLAMA_ISOLATE variants).
 */
function bare(
  name: string,
  sequence: LlamaContextSequence,
  tokens = TOKENS,
  run: (completion: LlamaCompletion, maxTokens: number) => Promise<unknown> = (c, maxTokens) =>
    c.generateCompletionWithMeta(PROMPT, { maxTokens, onToken: noop }),
): Variant {
  const completion: LlamaCompletion = new llama.classes.LlamaCompletion({ contextSequence: sequence });
  return {
    name,
    tokens,
    async generate(this: Variant, maxTokens = this.tokens) {
      const before = sequence.tokenMeter.usedOutputTokens;
      await run(completion, maxTokens);
      return sequence.tokenMeter.usedOutputTokens - before;
    },
    async close() {
      completion.dispose();
    },
  };
}

async function wrapped(
  exportMode: 'api' | 'producer',
): Promise<{ variant: Variant; sequence: LlamaContextSequence; monitor: Monitor }> {
  let monitor: Monitor | undefined;
  const reader = new PullReader(
    exportMode === 'producer' ? [{ collect: () => monitor!.metricProducer!.collect() } as never] : undefined,
  );
  const meterProvider = new MeterProvider({ readers: [reader] });
  monitor = createMonitor({ meterProvider, exportMode, detectorIntervalMs: 0, eventLoop: false, traces: false });
  const model: MonitoredLlamaModel = await createLlamaModel(monitor, 'tiny', path, {
    llama,
    contextOptions: CONTEXT,
    kvCache: { intervalMs: 0 },
  });
  // The model's one sequence, for the bare runs between its generations (the benchmark runs one at a time).
  const sequence = await model.withSequence((s) => s);
  const variant: Variant = {
    name: `InferSignal, ${exportMode} export`,
    tokens: TOKENS,
    async generate(this: Variant, maxTokens = this.tokens) {
      const result = await model.complete(PROMPT, { maxTokens, onToken: noop });
      return result.usage.outputTokens;
    },
    async close() {
      // One collection so the recorded data is exported at least once, as a scrape would.
      await reader.collect();
      await model.release();
      await monitor!.close();
      await meterProvider.shutdown();
    },
  };
  return { variant, sequence, monitor };
}

const api = await wrapped('api');
const producer = await wrapped('producer');
const bare1 = bare('bare node-llama-cpp (context 1)', api.sequence);
const control = { ...bare('bare again (A/A control, context 1)', api.sequence), baseline: bare1 };
const bare2 = bare('bare node-llama-cpp (context 2)', producer.sequence);
const variants: Variant[] = [
  bare1,
  control,
  { ...api.variant, baseline: bare1 },
  bare2,
  { ...producer.variant, baseline: bare2 },
];
/** The same pairs at SHORT_TOKENS: not judged, they part the added cost into per generation and per token. */
const shortOf = (v: Variant, baseline?: Variant): Variant => ({
  ...v,
  name: `${v.name}, ${SHORT_TOKENS} tokens`,
  tokens: SHORT_TOKENS,
  baseline,
});
const shortBare1 = shortOf(bare1);
const shortBare2 = shortOf(bare2);
const shortPairs: Array<[long: Variant, short: Variant]> = [
  [variants[2]!, shortOf(api.variant, shortBare1)],
  [variants[4]!, shortOf(producer.variant, shortBare2)],
];
const shortVariants = [shortBare1, shortPairs[0]![1], shortBare2, shortPairs[1]![1]];
/**
 * LLAMA_ISOLATE=1: what the wrapper changes in the call, one difference at a time, on context 1 against its
 * bare run (a diagnostic run: docs/benchmarks.md is left alone).
 */
const ISOLATE = process.env.LLAMA_ISOLATE === '1';
if (ISOLATE) {
  const shiftSize = (s: LlamaContextSequence) => Math.max(1, Math.floor(s.context.contextSize / 10));
  const queue = api.monitor.queue('isolate', { concurrency: 1 });
  const isolated: Array<[string, (c: LlamaCompletion, maxTokens: number) => Promise<unknown>]> = [
    [
      'bare + a contextShiftSize function',
      (c, maxTokens) => c.generateCompletionWithMeta(PROMPT, { maxTokens, onToken: noop, contextShiftSize: shiftSize }),
    ],
    [
      'bare + the prompt as tokens',
      (c, maxTokens) =>
        c.generateCompletionWithMeta(api.sequence.model.tokenize(PROMPT, false, 'trimLeadingSpace'), {
          maxTokens,
          onToken: noop,
        }),
    ],
    [
      "bare + core's ticket and stream, token() per callback (api export)",
      async (c, maxTokens) => {
        const ticket = queue.enqueue('tiny');
        ticket.start();
        const stream = ticket.stream();
        await c.generateCompletionWithMeta(PROMPT, {
          maxTokens,
          onToken: (tokens) => {
            stream.token(tokens.length);
            return noop();
          },
        });
        stream.end('completed');
        ticket.end('completed');
      },
    ],
  ];
  // Before the wrapped variant of context 1, so each is closed before that model is released.
  variants.splice(
    2,
    0,
    ...isolated.map(([name, run]) => ({ ...bare(name, api.sequence, TOKENS, run), baseline: bare1 })),
  );
}
/** Every variant measured, each round in its own order: the judged ones, then the short pairs of the split. */
const measured = [...variants, ...shortVariants];
// Warm-up: first decodes allocate llama.cpp's buffers; short generations bring each variant's per-generation
// JavaScript to V8's optimized steady state (see WARMUP), the bare ones as much as the wrapped.
const warmStart = performance.now();
for (const v of measured) for (let i = 0; i < 2; i++) await v.generate();
for (const v of variants) for (let i = 0; i < WARMUP; i++) await v.generate(2);
const warmSeconds = (performance.now() - warmStart) / 1000;

/**
 * A seeded shuffle per round (mulberry32, Fisher–Yates). A rotation would keep each variant's predecessor
 * fixed (the wrapped variants always right after a run on their own context, each bare one after a run on
 * the other context): whatever the previous generation leaves in the caches would then favour some variants
 * in every round. Shuffled, each follows every other about equally often.
 */
let seed = 0x1f2e3d4c;
function roundOrder<T>(items: readonly T[]): T[] {
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const order = [...items];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/**
 * LLAMA_PROFILE=1: V8's sampling profiler over the measured rounds. A sampled figure has no bare run to be
 * compared with, so none of llama.cpp's variance: it names what the wrapped variants' added time is spent
 * on, where the CPU ratios can only bound it.
 */
const profiler = process.env.LLAMA_PROFILE === '1' ? new SampledCode() : undefined;
await profiler?.start(100);
const cpuPerToken = new Map<Variant, number[]>(measured.map((v) => [v, []]));
const mainPerToken = new Map<Variant, number[]>(measured.map((v) => [v, []]));
const wallPerToken = new Map<Variant, number[]>(measured.map((v) => [v, []]));
const startedAt = performance.now();
for (let round = 0; round < ROUND_COUNT; round++) {
  for (const v of roundOrder(measured)) {
    let tokens = 0;
    const main = threadCpuUs();
    const cpu = process.cpuUsage();
    const windowStart = profiler ? monotonicUs() : 0;
    const start = performance.now();
    for (let i = 0; i < GENERATIONS; i++) tokens += await v.generate();
    const wallUs = (performance.now() - start) * 1000;
    profiler?.window(v.name, windowStart, monotonicUs());
    const used = process.cpuUsage(cpu);
    const mainUsed = main === null ? Number.NaN : threadCpuUs()! - main;
    if (tokens !== v.tokens * GENERATIONS)
      throw new Error(`${v.name}: ${tokens} tokens, expected ${v.tokens * GENERATIONS}`);
    cpuPerToken.get(v)!.push((used.user + used.system) / tokens);
    mainPerToken.get(v)!.push(mainUsed / tokens);
    wallPerToken.get(v)!.push(wallUs / tokens);
  }
}
const measuredSeconds = (performance.now() - startedAt) / 1000;
const sampled = await profiler?.stop([
  ['OpenTelemetry', (url) => url.includes('/@opentelemetry/')],
  ['InferSignal', (url) => /\/packages\/(llama|core)\//.test(url) || url.includes('/@infersignal/')],
  ['node-llama-cpp', (url) => url.includes('/node-llama-cpp/')],
  // This file: the no-op onToken the wrapper calls is the app's time, as in the bare runs.
  ['benchmark', (url) => url.includes('/benchmarks/')],
]);
// In order: each bare completion is disposed before the wrapped model whose sequence it used is released.
for (const v of variants) await v.close();
await llama.dispose();
rmSync(dir, { recursive: true, force: true });

/**
 * A distribution-free 95 % confidence interval of the median: the order statistics n/2 ∓ 0.98·√n
 * (binomial, normal approximation); wide for few rounds, which is the point.
 */
function medianInterval(values: readonly number[]): [number, number] {
  const sorted = [...values].sort((a, b) => a - b);
  const half = 0.98 * Math.sqrt(sorted.length);
  const lo = Math.max(0, Math.floor(sorted.length / 2 - half));
  const hi = Math.min(sorted.length - 1, Math.ceil(sorted.length / 2 + half) - 1);
  return [sorted[lo]!, sorted[hi]!];
}

const ratioOf = (v: Variant, of: Map<Variant, number[]>): Spread => roundRatios(of.get(v)!, of.get(v.baseline!)!);
const addedOf = (v: Variant, of: Map<Variant, number[]>): number =>
  spread(of.get(v)!.map((x, i) => x - of.get(v.baseline!)![i]!)).median;
const hasMain = !mainPerToken.get(bare1)!.some(Number.isNaN);
const fmtCi = ([lo, hi]: [number, number]) => `95 % CI ${lo.toFixed(3)}–${hi.toFixed(3)}`;
const rows = variants.map((v) => {
  const cpu = cpuPerToken.get(v)!;
  const judged = v.baseline !== undefined;
  const ratios = judged ? cpu.map((x, i) => x / cpuPerToken.get(v.baseline!)![i]!) : [];
  return [
    v.name,
    fmtSpread(spread(cpu), 1, 'µs'),
    judged ? `${fmtRatio(ratioOf(v, cpuPerToken), 3)}, ${fmtCi(medianInterval(ratios))}` : '1.00×',
    judged ? `${addedOf(v, cpuPerToken).toFixed(2)} µs` : '—',
    hasMain ? fmtSpread(spread(mainPerToken.get(v)!), 1, 'µs') : 'n/a',
    judged && hasMain ? `${addedOf(v, mainPerToken).toFixed(2)} µs` : '—',
    fmtSpread(spread(wallPerToken.get(v)!), 1, 'µs'),
    judged ? fmtRatio(ratioOf(v, wallPerToken), 3) : '1.00×',
  ];
});
const aa = ratioOf(control, cpuPerToken);
const crossContext = roundRatios(cpuPerToken.get(bare2)!, cpuPerToken.get(bare1)!);
const method = [
  `${ROUND_COUNT} rounds × ${GENERATIONS} generations × ${TOKENS} tokens per variant (${measuredSeconds.toFixed(0)} s measured), one`,
  'sequence of 256 tokens per context, one thread, the generated printable model (one token per callback: the most',
  'callbacks per token there are), the variants in a new shuffled order every round. Each wrapped variant is judged',
  'against the bare runtime on its own sequence in the same round. The A/A control runs the bare variant twice on',
  'context 1: its ratio is what the method reads for identical work, so a wrapped ratio within that distance of 1.00 is not resolved; the 95 % interval of each median',
  'says the same from the spread of the rounds. The goal is judged on the median ratio itself, not an A/A-corrected',
  'one: the control measures identical work, so its distance from 1.00 is noise of the same size as the figure it',
  'would correct, and dividing by it would add that noise rather than remove a bias. Bare on context 2 against bare',
  `on context 1 (${fmtRatio(crossContext, 3)}) is the difference between two contexts of the same model that the`,
  'pairing keeps out of the wrapped ratios. Main thread: the CPU time of the JavaScript thread alone, where the',
  "wrapper's work runs (llama.cpp decodes on a worker thread; sampling and node-llama-cpp's JavaScript run here).",
  `Steady state: before measuring, each variant runs ${WARMUP} two-token generations (${warmSeconds.toFixed(0)} s), because the`,
  "wrapper's code runs once per generation and V8 optimizes it only after hundreds to ~2,500 of them, while",
  "node-llama-cpp's per-token code is optimized within the first; a process that has served fewer generations pays",
  `more per generation. Split: the same pairs also run ${SHORT_TOKENS}-token generations in the same rounds (not judged);`,
  'the added CPU per generation at the two lengths, as fixed + per token × tokens, says what a generation pays',
  'whatever its length and the speed of its model: a real model spends 10–1,000× longer per token in llama.cpp.',
].join('\n');
/**
 * The added CPU time per generation (median over rounds of wrapped − bare, same context, same round) at two
 * lengths, as a line: fixed µs per generation + µs per token × tokens.
 */
function split(long: Variant, short: Variant, of: Map<Variant, number[]>) {
  const perGeneration = (v: Variant) =>
    spread(of.get(v)!.map((x, i) => (x - of.get(v.baseline!)![i]!) * v.tokens)).median;
  const atLong = perGeneration(long);
  const atShort = perGeneration(short);
  const perToken = (atLong - atShort) / (long.tokens - short.tokens);
  return { atShort, atLong, perToken, fixed: atShort - perToken * short.tokens };
}
const splitRows = shortPairs.map(([long, short]) => {
  const cpu = split(long, short, cpuPerToken);
  const main = hasMain ? split(long, short, mainPerToken) : null;
  const us = (x: number) => `${x.toFixed(0)} µs`;
  return [
    long.name,
    `${us(cpu.atShort)} / ${us(cpu.atLong)}`,
    us(cpu.fixed),
    `${cpu.perToken.toFixed(2)} µs`,
    main ? `${us(main.atShort)} / ${us(main.atLong)}` : 'n/a',
    main ? us(main.fixed) : 'n/a',
    main ? `${main.perToken.toFixed(2)} µs` : 'n/a',
  ];
});
const results = [
  table(
    [
      'variant',
      'CPU per token',
      'vs bare, same context (per round)',
      'CPU added per token',
      'main thread per token',
      'main thread added',
      'wall per token',
      'wall vs bare',
    ],
    rows,
  ),
  '',
  table(
    [
      'split',
      `CPU added per generation (${SHORT_TOKENS} / ${TOKENS} tokens)`,
      'fixed per generation',
      'per token',
      'main thread added per generation',
      'main thread fixed',
      'main thread per token',
    ],
    splitRows,
  ),
].join('\n');
console.log(results);

const goals: Goal[] = [api.variant, producer.variant].map((w) => {
  const v = variants.find((x) => x.name === w.name)!;
  const ratio = ratioOf(v, cpuPerToken);
  const ratios = cpuPerToken.get(v)!.map((x, i) => x / cpuPerToken.get(v.baseline!)![i]!);
  const interval = medianInterval(ratios);
  // An interval across the goal: this run cannot tell met from not met, and says so.
  const unresolved = interval[0] <= 1.01 && interval[1] > 1.01 ? ', not resolved by this run' : '';
  return {
    text: `${v.name}: ${ratio.median.toFixed(3)}× bare CPU time per generated token (${fmtCi(interval)}${unresolved}, A/A control ${aa.median.toFixed(3)}×)`,
    goal: '≤ 1.01×',
    met: ratio.median <= 1.01,
  };
});
if (sampled) {
  const rowsOf = measured.map((v) => {
    const entry = sampled.get(v.name)!;
    const perGeneration = (group: string) => entry.us[group]! / entry.windows / GENERATIONS;
    const own = perGeneration('InferSignal') + perGeneration('OpenTelemetry');
    const bareCpu = v.baseline ? spread(cpuPerToken.get(v.baseline)!).median * v.tokens : Number.NaN;
    return [
      v.name,
      `${own.toFixed(0)} µs`,
      `${perGeneration('OpenTelemetry').toFixed(0)} µs`,
      Number.isNaN(bareCpu) ? '—' : `${((100 * own) / bareCpu).toFixed(2)} %`,
    ];
  });
  console.log(
    `\nSampled (V8 profiler, main thread, ${ROUND_COUNT} rounds): time in InferSignal's and OpenTelemetry's code per generation\n`,
  );
  console.log(
    table(
      ['variant', 'InferSignal + OpenTelemetry per generation', 'of which OpenTelemetry', 'of bare CPU per generation'],
      rowsOf,
    ),
  );
}
const verdict = printVerdict('llama', goals);
if (!ISOLATE && !profiler)
  writeSection('llama', {
    title: 'llama: cost per generated token (node-llama-cpp)',
    command: 'pnpm bench:llama',
    packages: ['@infersignal/llama', '@infersignal/core', 'node-llama-cpp', '@opentelemetry/sdk-metrics'],
    method,
    results,
    verdict,
  });
