/**
 * The hot-path suite's transformers.js part: what `@infersignal/transformers`
 * adds to one pipeline call. The same loaded pipeline (the committed tiny
 * BERT of scripts/make-transformers-models.py, remote models off) is called
 * bare (`pipe(texts, kwargs)`) and through the wrapper (`run(texts, kwargs)`:
 * a ticket, the queue, the ModelHost slot, the tokenizer tap, the request's records),
 * in interleaved rounds; the overhead is the per-round difference. The tiny
 * model keeps the call itself short (tokenizer, tensors, one onnxruntime
 * run), so the ratio is the worst case; a real model's call is longer and
 * the same microseconds are a smaller share of it.
 */
import { fileURLToPath } from 'node:url';
import * as transformers from '@huggingface/transformers';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { createMonitor } from '@infersignal/core';
import { createPipeline } from '@infersignal/transformers';
import { Bench } from 'tinybench';
import { ROUNDS, SMOKE, TASK_MS } from './env';
import { PullReader } from './otel';
import { fmtNs, fmtRatio, roundRatios, rotate, spread } from './stats';

const FIXTURES = fileURLToPath(new URL('../../packages/transformers/test/fixtures/', import.meta.url));
const TEXTS = ['the cat sat on the mat', 'a dog ran', 'a good movie', 'not boring at all'];
const KWARGS = { pooling: 'mean', normalize: true } as const;

export interface TransformersOverhead {
  rows: string[][];
  /** Median over rounds of (wrapped − bare), ns per call. */
  addedNs: number;
  addedRange: [number, number];
  bareNs: number;
  ratio: ReturnType<typeof roundRatios>;
}

export async function transformersOverhead(): Promise<TransformersOverhead> {
  transformers.env.allowRemoteModels = false;
  transformers.env.localModelPath = FIXTURES;
  const reader = new PullReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const monitor = createMonitor({ meterProvider, eventLoop: false, exportMode: 'producer' });
  const wrapped = await createPipeline(monitor, 'tiny-bert-embed', 'feature-extraction', 'tiny-bert-embed', {
    runtime: transformers,
    pipelineOptions: { local_files_only: true },
  });
  const pipe = wrapped.pipeline;
  const tasks = [
    { name: 'bare pipeline call', run: () => pipe(TEXTS, KWARGS) },
    { name: '@infersignal/transformers run()', run: () => wrapped.run(TEXTS, KWARGS) },
  ];
  const perCall = new Map<string, number[]>(tasks.map((t) => [t.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const bench = new Bench({ time: TASK_MS, warmupTime: SMOKE ? 10 : 100 });
    for (const task of rotate(tasks, round)) bench.add(task.name, task.run);
    await bench.run();
    for (const task of bench.tasks) {
      // The median call: a pipeline call allocates tensors, and the GC pauses they cause land on either variant.
      const p50 = task.result?.latency.p50;
      if (p50 === undefined) throw new Error(`tinybench produced no result for ${task.name}`);
      perCall.get(task.name)!.push(p50 * 1e6);
    }
  }
  const completed = monitor.snapshot().queues[wrapped.queue.name]?.completed ?? 0;
  await wrapped.release();
  await monitor.close();
  await meterProvider.shutdown();
  if (!(completed > 0)) throw new Error('the wrapped pipeline recorded no call');
  const bare = perCall.get(tasks[0].name)!;
  const run = perCall.get(tasks[1].name)!;
  const added = spread(run.map((ns, i) => ns - bare[i]!));
  const rows = tasks.map((t) => {
    const s = spread(perCall.get(t.name)!);
    return [
      t.name,
      `${fmtNs(s.median)} (${fmtNs(s.min)}–${fmtNs(s.max)})`,
      fmtRatio(roundRatios(perCall.get(t.name)!, bare)),
    ];
  });
  return {
    rows,
    addedNs: added.median,
    addedRange: [added.min, added.max],
    bareNs: spread(bare).median,
    ratio: roundRatios(run, bare),
  };
}
