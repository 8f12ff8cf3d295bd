/**
 * Bytes allocated per request, by origin: the server suite's servers
 * (lib/server-child.ts, the same variants, warmed up the same way: load and
 * a scrape in turn) sample what they allocate in each measured window
 * (lib/allocations.ts), and each origin's bytes are divided by the requests
 * the window served. A request's objects die young, so what it allocates
 * costs little by itself; it is a count of the work added, as the
 * instructions tool's is, with no host noise in it: an A/B of two variants
 * reads a few bytes of ~7 000. It tells what each layer adds to a request
 * (Fastify's hook runner, InferSignal's ticket, the OTel SDK's span) where a
 * CPU ratio cannot, and what stays alive longer (spans until their batch
 * is exported) shows as bytes here before it shows as GC time.
 *
 *   pnpm build && pnpm --filter @infersignal/benchmarks allocations [--node 24]
 *   BENCH_VARIANTS=bare,hook-empty,… (the first is the reference)  BENCH_FRAMEWORKS=fastify,express
 *   BENCH_ROUNDS=3 measured windows  BENCH_REQUESTS=5000 a window  BENCH_SMOKE=1 tiny (the smoke test)
 *
 * Prints only; docs/benchmarks.md cites what it showed.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { fork } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { CHILD_ENV, SMOKE, orderedSubset, rounds } from './lib/env';
import { load } from './lib/load';
import { ROOT } from './lib/report';
import {
  ALLOCATIONS_ENV,
  DIAGNOSTIC_VARIANTS,
  FRAMEWORKS,
  SERVER_CHILD,
  SERVER_V8_FLAGS,
  VARIANTS,
  type ChildMessage,
  type Framework,
  type Variant,
  nextMessage,
} from './lib/servers';
import { spread } from './lib/stats';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? (SMOKE ? 1000 : 5000));
const MEASURED = rounds(3);
/** Requests before the first window, a scrape after every REQUESTS of them: V8 compiles the request path by call counts. */
const WARM_UP = SMOKE ? 2000 : 40000;
/** Origins whose bytes per request differ from the reference's by less than this are left out of the diff. */
const SHOWN_BYTES = 4;

interface Measured {
  framework: Framework;
  variant: Variant;
  /** Bytes per request, per measured window. */
  perRequest: number[];
  /** Bytes per request by origin, and by function, over all measured windows. */
  byOrigin: Map<string, number>;
  byFunction: Map<string, number>;
  spansPerRequest: number;
}

async function measure(framework: Framework, variant: Variant): Promise<Measured> {
  const child = fork(SERVER_CHILD, [framework, variant], {
    cwd: ROOT,
    env: { ...CHILD_ENV, [ALLOCATIONS_ENV]: '1' },
    execArgv: [...SERVER_V8_FLAGS, '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const ready = (await nextMessage(child, 'ready')) as Extract<ChildMessage, { type: 'ready' }>;
    const url = `http://127.0.0.1:${ready.port}/v1/infer`;
    const scrape = async () => {
      if (ready.metricsUrl) await (await fetch(ready.metricsUrl)).text();
    };
    for (let sent = 0; sent < WARM_UP; sent += REQUESTS) {
      await load(url, REQUESTS);
      await scrape();
    }
    const perRequest: number[] = [];
    const byOrigin = new Map<string, number>();
    const byFunction = new Map<string, number>();
    let requests = 0;
    let spans = 0;
    for (let r = 0; r < MEASURED; r++) {
      await scrape();
      await load(url, 500);
      const ended = nextMessage(child, 'window');
      const sampled = nextMessage(child, 'allocations');
      child.send({ type: 'begin' });
      await load(url, REQUESTS);
      child.send({ type: 'end' });
      const window = (await ended) as Extract<ChildMessage, { type: 'window' }>;
      const allocations = (await sampled) as Extract<ChildMessage, { type: 'allocations' }>;
      perRequest.push(sum(byOrigin, allocations.byOrigin) / window.requests);
      sum(byFunction, allocations.byFunction);
      requests += window.requests;
      spans += window.spans;
    }
    for (const totals of [byOrigin, byFunction]) for (const [name, bytes] of totals) totals.set(name, bytes / requests);
    return { framework, variant, perRequest, byOrigin, byFunction, spansPerRequest: spans / requests };
  } finally {
    if (child.connected) child.send({ type: 'exit' });
    await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(undefined)));
  }
}

/** Adds one window's bytes by name into `totals`; returns the window's total. */
function sum(totals: Map<string, number>, window: Record<string, number>): number {
  let bytes = 0;
  for (const [name, b] of Object.entries(window)) {
    bytes += b;
    totals.set(name, (totals.get(name) ?? 0) + b);
  }
  return bytes;
}

/** `row`'s bytes per request against `reference`'s, name by name, largest increase first (small ones left out). */
function against(row: Map<string, number>, reference: Map<string, number>) {
  return [...new Set([...row.keys(), ...reference.keys()])]
    .map((name) => ({ name, before: reference.get(name) ?? 0, after: row.get(name) ?? 0 }))
    .filter(({ before, after }) => Math.abs(after - before) >= SHOWN_BYTES)
    .sort((a, b) => b.after - b.before - (a.after - a.before));
}

// Smoke mode (the smoke test) checks that it runs and finds InferSignal's bytes: one framework, two variants.
const frameworks = orderedSubset<Framework>('BENCH_FRAMEWORKS', FRAMEWORKS, SMOKE ? ['fastify'] : [...FRAMEWORKS]);
const variants = orderedSubset<Variant>(
  'BENCH_VARIANTS',
  [...VARIANTS, ...DIAGNOSTIC_VARIANTS],
  SMOKE
    ? ['bare', 'infersignal-producer']
    : ['bare', 'hook-empty', 'hook', 'infersignal-producer', 'infersignal-outliers', 'otel-span'],
);
const jobs = frameworks.flatMap((framework) => variants.map((variant) => ({ framework, variant })));
const results: Measured[] = [];
// One server per CPU: what a request allocates does not depend on the machine's speed.
const workers = Math.max(1, Math.min(availableParallelism(), jobs.length));
await Promise.all(
  Array.from({ length: workers }, async () => {
    for (let job = jobs.shift(); job !== undefined; job = jobs.shift()) {
      const result = await measure(job.framework, job.variant);
      console.error(`${job.framework}/${job.variant}: ${result.perRequest.map((n) => n.toFixed(0)).join(', ')}`);
      results.push(result);
    }
  }),
);

for (const framework of frameworks) {
  const rows = variants.map((variant) => results.find((r) => r.framework === framework && r.variant === variant)!);
  const reference = rows[0]!;
  const referenceMedian = spread(reference.perRequest).median;
  console.log(`\n${framework} (${process.version}): bytes allocated per request`);
  for (const row of rows) {
    const median = spread(row.perRequest).median;
    console.log(
      `  ${row.variant.padEnd(30)} ${median.toFixed(0).padStart(6)}  ${(median - referenceMedian).toFixed(0).padStart(5)} over ${reference.variant}  (windows ${row.perRequest.map((n) => n.toFixed(0)).join(', ')}; spans/request ${row.spansPerRequest.toFixed(3)})`,
    );
  }
  for (const row of rows.slice(1)) {
    for (const [by, what] of [
      ['origin', 'byOrigin'],
      ['function', 'byFunction'],
    ] as const) {
      console.log(`\n  ${row.variant} against ${reference.variant}, by ${by} (bytes per request):`);
      const changes = against(row[what], reference[what]);
      // The largest increases, and the largest decreases: inlining moves bytes from one function's name to another's.
      const shown = [
        ...changes.slice(0, 20),
        ...changes
          .slice(20)
          .filter(({ before, after }) => after < before)
          .slice(-8),
      ];
      for (const { name, before, after } of shown)
        console.log(
          `    ${(after - before).toFixed(0).padStart(6)}  ${name.slice(0, 120)} (${before.toFixed(0)} → ${after.toFixed(0)})`,
        );
    }
  }
}
