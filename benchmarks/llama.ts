/**
 * llama: the cost per generated token of `@infersignal/llama` against the bare node-llama-cpp runtime,
 * measured in the same process on the same generated model.
 *
 *   pnpm bench:llama           (tsx benchmarks/llama.ts; BENCH_ROUNDS, LLAMA_TOKENS, LLAMA_GENERATIONS)
 *
 * Variants, each on its own context of the same GGUF (one sequence, 256 tokens, one thread), run in
 * rotated order every round (A B C, B C A, C A B …):
 * - bare: `LlamaCompletion.generateCompletionWithMeta()` with a no-op `onToken`, what an app streaming
 *   tokens runs without InferSignal;
 * - InferSignal, API export: `model.complete()` with the same options, recording through a real
 *   MeterProvider with a reader attached;
 * - InferSignal, producer export: the same with core's `exportMode: 'producer'`.
 * The figure is process CPU time (user + system, llama.cpp's thread included) per generated token: the
 * wrapper's cost is work on the main thread, and CPU time does not count the waits a loaded machine adds
 * to wall time (shown beside it). Each generation is LLAMA_TOKENS tokens by the runtime's own count; the
 * ratio is taken per round against the bare variant of that round.
 *
 * The model is the tiny generated one (scripts/make-gguf.ts, printable: one token per callback) at
 * ~1,000 tokens/s on one thread: the wrapper's share is as large as it gets. A real model spends
 * 10–1,000× longer per token in llama.cpp, with the same wrapper cost per token.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createMonitor, type Monitor } from '@infersignal/core';
import { createLlamaModel, type MonitoredLlamaModel } from '@infersignal/llama';
import { getLlama, type LlamaCompletion } from 'node-llama-cpp';
import { writeGguf } from '../scripts/make-gguf';
import { ROUNDS, SMOKE, rounds } from './lib/env';
import { PullReader } from './lib/otel';
import { printVerdict, table, writeSection, type Goal } from './lib/report';
import { fmtRatio, fmtSpread, roundRatios, rotate, spread } from './lib/stats';

const TOKENS = Number(process.env.LLAMA_TOKENS ?? (SMOKE ? 16 : 128));
const GENERATIONS = Number(process.env.LLAMA_GENERATIONS ?? (SMOKE ? 1 : 2));
/**
 * Many rounds: one round's ratio spreads over ±4 % (IQR 0.98–1.06 on a quiet machine: llama.cpp's own time
 * varies), against a goal of 1 %. The median of n such ratios has a standard error of about
 * 1.25 · (IQR / 1.35) / √n: 1.6 % for 21 rounds, 0.7 % for 101 (about 20 s of generation on this model).
 * The wrapper's own work, ticket and stream included, is ~0.1 µs a token when run alone: hundredths of a
 * per cent of a token here.
 */
const ROUND_COUNT = SMOKE ? ROUNDS : rounds(101);
const CONTEXT = { contextSize: 256, threads: 1 } as const;
const PROMPT = 'The quick brown fox';
const noop = () => {};

const dir = mkdtempSync(join(tmpdir(), 'infersignal-bench-llama-'));
const path = writeGguf(join(dir, 'tiny.gguf'), { printable: true, seed: 11 });
const llama = await getLlama({ gpu: false, build: 'never', maxThreads: 1 });

interface Variant {
  name: string;
  /** Runs one generation, returns the tokens the runtime generated. */
  generate(): Promise<number>;
  close(): Promise<void>;
}

async function bare(): Promise<Variant> {
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({ ...CONTEXT, sequences: 1 });
  const sequence = context.getSequence();
  const completion: LlamaCompletion = new llama.classes.LlamaCompletion({ contextSequence: sequence });
  return {
    name: 'bare node-llama-cpp',
    async generate() {
      const before = sequence.tokenMeter.usedOutputTokens;
      await completion.generateCompletionWithMeta(PROMPT, { maxTokens: TOKENS, onToken: noop });
      return sequence.tokenMeter.usedOutputTokens - before;
    },
    async close() {
      await context.dispose();
      await model.dispose();
    },
  };
}

async function wrapped(exportMode: 'api' | 'producer'): Promise<Variant> {
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
  return {
    name: `InferSignal, ${exportMode} export`,
    async generate() {
      const result = await model.complete(PROMPT, { maxTokens: TOKENS, onToken: noop });
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
}

const variants = [await bare(), await wrapped('api'), await wrapped('producer')];
// Warm-up: first decodes allocate llama.cpp's buffers and JIT the JS paths.
for (const v of variants) for (let i = 0; i < 2; i++) await v.generate();

const cpuPerToken = new Map<string, number[]>(variants.map((v) => [v.name, []]));
const wallPerToken = new Map<string, number[]>(variants.map((v) => [v.name, []]));
for (let round = 0; round < ROUND_COUNT; round++) {
  for (const v of rotate(variants, round)) {
    let tokens = 0;
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < GENERATIONS; i++) tokens += await v.generate();
    const wallUs = (performance.now() - start) * 1000;
    const used = process.cpuUsage(cpu);
    if (tokens !== TOKENS * GENERATIONS)
      throw new Error(`${v.name}: ${tokens} tokens, expected ${TOKENS * GENERATIONS}`);
    cpuPerToken.get(v.name)!.push((used.user + used.system) / tokens);
    wallPerToken.get(v.name)!.push(wallUs / tokens);
  }
}
for (const v of variants) await v.close();
await llama.dispose();
rmSync(dir, { recursive: true, force: true });

const baseline = cpuPerToken.get(variants[0].name)!;
const wallBaseline = wallPerToken.get(variants[0].name)!;
const rows = variants.map((v) => {
  const cpu = cpuPerToken.get(v.name)!;
  const wall = wallPerToken.get(v.name)!;
  const first = v === variants[0];
  return [
    v.name,
    fmtSpread(spread(cpu), 1, 'µs'),
    first ? '1.00×' : fmtRatio(roundRatios(cpu, baseline), 3),
    first ? '—' : `${spread(cpu.map((x, i) => x - baseline[i])).median.toFixed(2)} µs`,
    fmtSpread(spread(wall), 1, 'µs'),
    first ? '1.00×' : fmtRatio(roundRatios(wall, wallBaseline), 3),
  ];
});
const method = [
  `${ROUND_COUNT} rounds × ${GENERATIONS} generations × ${TOKENS} tokens per variant, one sequence of 256 tokens, one`,
  'thread, the generated printable model (one token per callback: the most callbacks per token there are).',
].join('\n');
const results = [
  table(
    ['variant', 'CPU per token', 'vs bare (per round)', 'CPU added per token', 'wall per token', 'wall vs bare'],
    rows,
  ),
].join('\n');
console.log(results);

const goals: Goal[] = variants.slice(1).map((v) => {
  const ratio = roundRatios(cpuPerToken.get(v.name)!, baseline);
  return {
    text: `${v.name}: ${fmtRatio(ratio, 3)} bare CPU time per generated token`,
    goal: '≤ 1.01×',
    met: ratio.median <= 1.01,
  };
});
const verdict = printVerdict('llama', goals);
writeSection('llama', {
  title: 'llama: cost per generated token (node-llama-cpp)',
  command: 'pnpm bench:llama',
  packages: ['@infersignal/llama', '@infersignal/core', 'node-llama-cpp', '@opentelemetry/sdk-metrics'],
  method,
  results,
  verdict,
});
