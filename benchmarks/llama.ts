/**
 * llama: the cost per generated token of `@infersignal/llama` against the bare node-llama-cpp runtime,
 * measured in the same process on the same generated model.
 *
 *   pnpm bench:llama           (tsx benchmarks/llama.ts; BENCH_ROUNDS, LLAMA_PROCESSES, LLAMA_TOKENS,
 *                              LLAMA_SHORT_TOKENS, LLAMA_GENERATIONS, LLAMA_WARMUP)
 *   LLAMA_ISOLATE=1 pnpm bench:llama   adds each difference of the call alone (diagnostic; docs not written)
 *
 * The rounds are shared out over LLAMA_PROCESSES processes (default 4), run one after another and pooled:
 * one process's ratio is not only llama.cpp's noise but also that process's memory layout and V8's
 * choices, which no number of rounds inside it averages out (two single-process runs can give intervals
 * that do not overlap). Each process draws its
 * own shuffle seed, and the two wrapped models are created in alternating order (which one gets the first
 * context). Per process: two wrapped models (API export, producer export), each with its own context of
 * the same GGUF (one sequence, 256 tokens, one thread). The bare variants run `LlamaCompletion.generateCompletionWithMeta()`
 * with a no-op `onToken` (what an app streaming tokens runs without InferSignal) on the wrapped model's own
 * sequence, between its generations: each ratio compares the same weights, KV cache and llama.cpp state,
 * so a difference between two contexts (where their buffers landed in memory) cannot pass for wrapper
 * cost. Five variants, run in a new shuffled order every round (seeded, so runs repeat; see roundOrder):
 * - bare on the API export's context, and again (a second, identical variant: the A/A control);
 * - InferSignal, API export (`model.complete()` with the same options, a real MeterProvider with a reader);
 * - bare on the producer export's context, and InferSignal, producer export;
 * - the two bare/wrapped pairs again at LLAMA_SHORT_TOKENS (not judged: the split of the added cost into
 *   a fixed part per generation and a part per token).
 * Before measuring, every judged variant runs LLAMA_WARMUP two-token generations, so the wrapper's
 * per-generation code is measured at V8's optimized steady state (see WARMUP).
 * The figure is process CPU time (user + system, llama.cpp's threads included) per generated token: the
 * wrapper's cost is work on the main thread, and CPU time does not count the waits a loaded machine adds
 * to wall time (shown beside it). The main thread's own CPU time (Linux `/proc/thread-self/schedstat`) is
 * shown apart: the wrapper's work lands there, llama.cpp's decoding does not. Each generation is
 * LLAMA_TOKENS tokens by the runtime's own count; ratios are taken per round against the bare variant of
 * the same context in that round (so only rounds of one process are paired).
 *
 * The model is the tiny generated one (scripts/make-gguf.ts, printable: one token per callback) at
 * ~200 µs a token on one thread: the wrapper's share is as large as it gets. A real model spends
 * 10–1,000× longer per token in llama.cpp, with the same wrapper cost per generation and per token.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createMonitor, type Monitor } from '@infersignal/core';
import { createLlamaModel, type MonitoredLlamaModel } from '@infersignal/llama';
import { getLlama, type LlamaCompletion, type LlamaContextSequence } from 'node-llama-cpp';
import { writeGguf } from '../scripts/make-gguf';
import { ROUNDS, SMOKE, rounds } from './lib/env';
import { PullReader } from './lib/otel';
import { printVerdict, table, writeSection, type Goal } from './lib/report';
import { fmtRatio, fmtSpread, roundRatios, seeded, spread, type Spread } from './lib/stats';

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
/** LLAMA_ISOLATE=1: each difference of the wrapper's call alone (a diagnostic run: the docs are left alone). */
const ISOLATE = process.env.LLAMA_ISOLATE === '1';
/** Processes the rounds are shared out over (see the header); the diagnostics run in this one. */
const PROCESSES = ISOLATE ? 1 : Math.max(1, Math.round(Number(process.env.LLAMA_PROCESSES ?? (SMOKE ? 2 : 4))));
if (!Number.isFinite(PROCESSES))
  throw new Error(`LLAMA_PROCESSES must be a positive number, got ${process.env.LLAMA_PROCESSES}`);
const ROUNDS_PER_PROCESS = Math.max(1, Math.ceil(ROUND_COUNT / PROCESSES));
/** Set in a child process: `part/processes`, and the file its measurement is written to. */
const PART = process.env.LLAMA_PART;

/** CPU time of the calling thread in µs (Linux), or null where there is no schedstat to read. */
function threadCpuUs(): number | null {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'latin1').split(' ')[0]) / 1000;
  } catch {
    return null;
  }
}

/** A measured variant as the report sees it: the same in every process. */
interface Spec {
  name: string;
  /** Tokens per generation. */
  tokens: number;
  /** The variant its per-round ratio is taken against (the bare run on the same context). */
  baseline?: Spec;
  /** Whose generation it runs (the long variant's name; a short variant runs it with fewer tokens). */
  runs: string;
}

const spec = (name: string, baseline?: Spec): Spec => ({ name, tokens: TOKENS, baseline, runs: name });
const bareApi = spec("bare node-llama-cpp (the API export's context)");
const bareProducer = spec("bare node-llama-cpp (the producer export's context)");
const control = spec('bare again (A/A control, the same context)', bareApi);
const apiExport = spec('InferSignal, api export', bareApi);
const producerExport = spec('InferSignal, producer export', bareProducer);
/** LLAMA_ISOLATE's variants: what the wrapper changes in the call, one difference at a time. */
const ISOLATED = [
  'bare + a contextShiftSize function',
  'bare + the prompt as tokens',
  "bare + core's ticket and stream, token() per callback (api export)",
] as const;
/** The judged variants (the A/A control is judged against 1.00 by eye, not by a goal). */
const judged: Spec[] = [
  bareApi,
  control,
  ...(ISOLATE ? ISOLATED.map((name) => spec(name, bareApi)) : []),
  apiExport,
  bareProducer,
  producerExport,
];
/** The same pairs at SHORT_TOKENS: not judged, they part the added cost into per generation and per token. */
const shortOf = (long: Spec, baseline?: Spec): Spec => ({
  name: `${long.name}, ${SHORT_TOKENS} tokens`,
  tokens: SHORT_TOKENS,
  baseline,
  runs: long.runs,
});
const shortBareApi = shortOf(bareApi);
const shortBareProducer = shortOf(bareProducer);
const shortPairs: Array<[long: Spec, short: Spec]> = [
  [apiExport, shortOf(apiExport, shortBareApi)],
  [producerExport, shortOf(producerExport, shortBareProducer)],
];
/** Every variant measured, each round in its own order: the judged ones, then the short pairs of the split. */
const measured: Spec[] = [...judged, shortBareApi, shortPairs[0]![1], shortBareProducer, shortPairs[1]![1]];

/** Per variant name, one figure per round: process CPU, main-thread CPU and wall time per token (µs). */
type Series = Record<string, { cpu: number[]; main: number[]; wall: number[] }>;

interface Measurement {
  /** Which wrapped model was created first (and got the first context). */
  first: 'api' | 'producer';
  rounds: number;
  warmSeconds: number;
  measuredSeconds: number;
  series: Series;
}

/** One process's measurement: its own models and contexts, `rounds` rounds in its own seeded orders. */
async function measure(part: number, rounds: number): Promise<Measurement> {
  const dir = mkdtempSync(join(tmpdir(), 'infersignal-bench-llama-'));
  const path = writeGguf(join(dir, 'tiny.gguf'), { printable: true, seed: 11 });
  const llama = await getLlama({ gpu: false, build: 'never', maxThreads: 1 });

  /** One generation of `maxTokens` by the runtime's count. */
  type Generate = (maxTokens: number) => Promise<number>;
  /**
   * The bare runtime on a sequence: a LlamaCompletion of its own, no InferSignal code on the path (`run`
   * changes the call, for the LLAMA_ISOLATE variants).
   */
  const bare = (
    sequence: LlamaContextSequence,
    run: (completion: LlamaCompletion, maxTokens: number) => Promise<unknown> = (c, maxTokens) =>
      c.generateCompletionWithMeta(PROMPT, { maxTokens, onToken: noop }),
  ): { generate: Generate; close(): Promise<void> } => {
    const completion: LlamaCompletion = new llama.classes.LlamaCompletion({ contextSequence: sequence });
    return {
      async generate(maxTokens) {
        const before = sequence.tokenMeter.usedOutputTokens;
        await run(completion, maxTokens);
        return sequence.tokenMeter.usedOutputTokens - before;
      },
      async close() {
        completion.dispose();
      },
    };
  };

  const wrapped = async (exportMode: 'api' | 'producer') => {
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
    const generate: Generate = async (maxTokens) =>
      (await model.complete(PROMPT, { maxTokens, onToken: noop })).usage.outputTokens;
    const close = async () => {
      // One collection so the recorded data is exported at least once, as a scrape would.
      await reader.collect();
      await model.release();
      await monitor!.close();
      await meterProvider.shutdown();
    };
    return { generate, close, sequence, monitor };
  };

  // Which model gets the first context (and its place in memory) alternates between the processes.
  const first = part % 2 === 0 ? 'api' : 'producer';
  const created = [await wrapped(first), await wrapped(first === 'api' ? 'producer' : 'api')];
  const [api, producer] = first === 'api' ? created : [created[1]!, created[0]!];
  const runs = new Map<string, { generate: Generate; close(): Promise<void> }>([
    [bareApi.name, bare(api.sequence)],
    [control.name, bare(api.sequence)],
    [apiExport.name, api],
    [bareProducer.name, bare(producer.sequence)],
    [producerExport.name, producer],
  ]);
  if (ISOLATE) {
    const shiftSize = (s: LlamaContextSequence) => Math.max(1, Math.floor(s.context.contextSize / 10));
    const queue = api.monitor.queue('isolate', { concurrency: 1 });
    const calls: Record<(typeof ISOLATED)[number], (c: LlamaCompletion, maxTokens: number) => Promise<unknown>> = {
      'bare + a contextShiftSize function': (c, maxTokens) =>
        c.generateCompletionWithMeta(PROMPT, { maxTokens, onToken: noop, contextShiftSize: shiftSize }),
      'bare + the prompt as tokens': (c, maxTokens) =>
        c.generateCompletionWithMeta(api.sequence.model.tokenize(PROMPT, false, 'trimLeadingSpace'), {
          maxTokens,
          onToken: noop,
        }),
      "bare + core's ticket and stream, token() per callback (api export)": async (c, maxTokens) => {
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
    };
    for (const name of ISOLATED) runs.set(name, bare(api.sequence, calls[name]));
  }
  const generate = (v: Spec, maxTokens = v.tokens) => runs.get(v.runs)!.generate(maxTokens);

  // Warm-up: first decodes allocate llama.cpp's buffers; short generations bring each variant's per-generation
  // JavaScript to V8's optimized steady state (see WARMUP), the bare ones as much as the wrapped.
  const warmStart = performance.now();
  for (const v of measured) for (let i = 0; i < 2; i++) await generate(v);
  for (const v of judged) for (let i = 0; i < WARMUP; i++) await generate(v, 2);
  const warmSeconds = (performance.now() - warmStart) / 1000;

  const series: Series = Object.fromEntries(measured.map((v) => [v.name, { cpu: [], main: [], wall: [] }]));
  const order = roundOrder(0x1f2e3d4c + Math.imul(part, 0x9e3779b9));
  const startedAt = performance.now();
  for (let round = 0; round < rounds; round++) {
    for (const v of order(measured)) {
      let tokens = 0;
      const main = threadCpuUs();
      const cpu = process.cpuUsage();
      const start = performance.now();
      for (let i = 0; i < GENERATIONS; i++) tokens += await generate(v);
      const wallUs = (performance.now() - start) * 1000;
      const used = process.cpuUsage(cpu);
      const mainUsed = main === null ? Number.NaN : threadCpuUs()! - main;
      if (tokens !== v.tokens * GENERATIONS)
        throw new Error(`${v.name}: ${tokens} tokens, expected ${v.tokens * GENERATIONS}`);
      const figures = series[v.name]!;
      figures.cpu.push((used.user + used.system) / tokens);
      figures.main.push(mainUsed / tokens);
      figures.wall.push(wallUs / tokens);
    }
  }
  const measuredSeconds = (performance.now() - startedAt) / 1000;
  // Each bare completion is disposed before the wrapped model whose sequence it used is released.
  for (const [name, run] of runs) if (name !== apiExport.name && name !== producerExport.name) await run.close();
  await api.close();
  await producer.close();
  await llama.dispose();
  rmSync(dir, { recursive: true, force: true });
  return { first, rounds, warmSeconds, measuredSeconds, series };
}

/**
 * A seeded shuffle per round (mulberry32, Fisher–Yates). A rotation would keep each variant's predecessor
 * fixed (the wrapped variants always right after a run on their own context, each bare one after a run on
 * the other context): whatever the previous generation leaves in the caches would then favour some variants
 * in every round. Shuffled, each follows every other about equally often.
 */
function roundOrder(initialSeed: number): <T>(items: readonly T[]) => T[] {
  const random = seeded(initialSeed);
  return (items) => {
    const order = [...items];
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    return order;
  };
}

/** The processes one after another (each its own child: a fresh heap, fresh contexts), or this one. */
function runProcesses(): Measurement[] {
  const parts: Measurement[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'infersignal-bench-llama-parts-'));
  try {
    for (let part = 0; part < PROCESSES; part++) {
      const out = join(dir, `part-${part}.json`);
      // The same binary, loader and flags as this process (see lib/node-line).
      const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!, ...process.argv.slice(2)], {
        env: { ...process.env, LLAMA_PART: `${part}/${PROCESSES}`, LLAMA_PART_OUT: out },
        stdio: 'inherit',
      });
      if (child.status !== 0)
        throw new Error(`llama: process ${part + 1} of ${PROCESSES} exited with ${child.status ?? child.signal}`);
      const measurement = JSON.parse(readFileSync(out, 'utf8')) as Measurement;
      console.log(
        `process ${part + 1}/${PROCESSES}: ${measurement.rounds} rounds, ${measurement.first} export's model created first (${measurement.measuredSeconds.toFixed(0)} s measured)`,
      );
      parts.push(measurement);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return parts;
}

if (PART !== undefined) {
  const part = Number(PART.split('/')[0]);
  writeFileSync(process.env.LLAMA_PART_OUT!, JSON.stringify(await measure(part, ROUNDS_PER_PROCESS)));
} else {
  report(PROCESSES === 1 ? [await measure(0, ROUND_COUNT)] : runProcesses());
}

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

type Figure = 'cpu' | 'main' | 'wall';

function report(parts: Measurement[]): void {
  // Pooled: each process's rounds after the last one's; a ratio pairs figures of the same round, so of one process.
  const series: Series = Object.fromEntries(
    measured.map((v) => [
      v.name,
      {
        cpu: parts.flatMap((p) => p.series[v.name]!.cpu),
        main: parts.flatMap((p) => p.series[v.name]!.main),
        wall: parts.flatMap((p) => p.series[v.name]!.wall),
      },
    ]),
  );
  const rounds = parts.reduce((sum, p) => sum + p.rounds, 0);
  const measuredSeconds = parts.reduce((sum, p) => sum + p.measuredSeconds, 0);
  const warmSeconds = parts.reduce((sum, p) => sum + p.warmSeconds, 0) / parts.length;
  const of = (v: Spec, figure: Figure, from: Series = series) => from[v.name]![figure];
  const ratiosOf = (v: Spec, figure: Figure, from: Series = series) => {
    const baseline = of(v.baseline!, figure, from);
    return of(v, figure, from).map((x, i) => x / baseline[i]!);
  };
  const ratioOf = (v: Spec, figure: Figure): Spread => spread(ratiosOf(v, figure));
  const addedOf = (v: Spec, figure: Figure): number => {
    const baseline = of(v.baseline!, figure);
    return spread(of(v, figure).map((x, i) => x - baseline[i]!)).median;
  };
  const hasMain = !of(bareApi, 'main').some(Number.isNaN);
  const fmtCi = ([lo, hi]: [number, number]) => `95 % CI ${lo.toFixed(3)}–${hi.toFixed(3)}`;
  /** The median ratio of each process alone: how far the processes differ, beside the pooled interval. */
  const perProcess = (v: Spec) => parts.map((p) => spread(ratiosOf(v, 'cpu', p.series)).median.toFixed(3)).join(' / ');
  const rows = judged.map((v) => {
    const isJudged = v.baseline !== undefined;
    return [
      v.name,
      fmtSpread(spread(of(v, 'cpu')), 1, 'µs'),
      isJudged ? `${fmtRatio(ratioOf(v, 'cpu'), 3)}, ${fmtCi(medianInterval(ratiosOf(v, 'cpu')))}` : '1.00×',
      isJudged && parts.length > 1 ? perProcess(v) : '—',
      isJudged ? `${addedOf(v, 'cpu').toFixed(2)} µs` : '—',
      hasMain ? fmtSpread(spread(of(v, 'main')), 1, 'µs') : 'n/a',
      isJudged && hasMain ? `${addedOf(v, 'main').toFixed(2)} µs` : '—',
      fmtSpread(spread(of(v, 'wall')), 1, 'µs'),
      isJudged ? fmtRatio(ratioOf(v, 'wall'), 3) : '1.00×',
    ];
  });
  const aa = ratioOf(control, 'cpu');
  const crossContext = roundRatios(of(bareProducer, 'cpu'), of(bareApi, 'cpu'));
  const method = `${rounds} rounds × ${GENERATIONS} generations × ${TOKENS} tokens a variant in ${parts.length} processes, pooled; each wrapped variant over bare on its own context in the same round, after ${WARMUP} warm-up generations; the A/A control is bare twice. Main thread: the JavaScript thread's CPU.`;
  /**
   * The added CPU time per generation (median over rounds of wrapped − bare, same context, same round) at two
   * lengths, as a line: fixed µs per generation + µs per token × tokens.
   */
  const split = (long: Spec, short: Spec, figure: Figure) => {
    const perGeneration = (v: Spec) => {
      const baseline = of(v.baseline!, figure);
      return spread(of(v, figure).map((x, i) => (x - baseline[i]!) * v.tokens)).median;
    };
    const atLong = perGeneration(long);
    const atShort = perGeneration(short);
    const perToken = (atLong - atShort) / (long.tokens - short.tokens);
    return { atShort, atLong, perToken, fixed: atShort - perToken * short.tokens };
  };
  const splitRows = shortPairs.map(([long, short]) => {
    const cpu = split(long, short, 'cpu');
    const main = hasMain ? split(long, short, 'main') : null;
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
  console.log(
    `${rounds} rounds, ${measuredSeconds.toFixed(0)} s measured, ${warmSeconds.toFixed(0)} s of warm-up a process\n${table(
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
    )}`,
  );
  const splitLine = shortPairs
    .map(([long, short]) => {
      const cpu = split(long, short, 'cpu');
      return `${long.name} ${cpu.fixed.toFixed(0)} µs + ${cpu.perToken.toFixed(2)} µs a token`;
    })
    .join(', ');
  const results = [
    table(
      [
        'variant',
        'CPU per token',
        'vs bare, same context (per round)',
        'per process',
        'CPU added per token',
        'main thread per token',
        'main thread added',
        'wall per token',
        'wall vs bare',
      ],
      rows,
    ),
    '',
    `CPU added per generation, from ${SHORT_TOKENS}- and ${TOKENS}-token generations in the same rounds: ${splitLine}. Bare on the two contexts: ${fmtRatio(crossContext, 3)}.  `,
  ].join('\n');
  console.log(results);

  const goals: Goal[] = [apiExport, producerExport].map((v) => {
    const ratio = ratioOf(v, 'cpu');
    const interval = medianInterval(ratiosOf(v, 'cpu'));
    // An interval across the goal: this run cannot tell met from not met, and says so.
    const unresolved = interval[0] <= 1.01 && interval[1] > 1.01 ? ', not resolved by this run' : '';
    const processes = parts.length > 1 ? `, per process ${perProcess(v)}` : '';
    return {
      text: `${v.name}: ${ratio.median.toFixed(3)}× bare CPU time per generated token (${fmtCi(interval)}${unresolved}${processes}, A/A control ${aa.median.toFixed(3)}×)`,
      goal: '≤ 1.01×',
      met: ratio.median <= 1.01,
    };
  });
  const verdict = printVerdict('llama', goals);
  if (!ISOLATE)
    writeSection('llama', {
      title: 'llama: cost per generated token (node-llama-cpp)',
      command: 'pnpm bench:llama',
      packages: ['@infersignal/llama', '@infersignal/core', 'node-llama-cpp', '@opentelemetry/sdk-metrics'],
      method,
      results,
      verdict,
    });
}
