/**
 * Server throughput: Fastify and Express hello-inference servers on
 * 127.0.0.1 loaded by @infersignal/bench's closed loop (lib/load.ts), one
 * forked process per (framework, variant), all variants interleaved in
 * rotated order each round, a fresh set of server processes every few
 * rounds.
 *
 *   pnpm bench:server          (tsx benchmarks/server.ts; BENCH_SECONDS scales the windows, BENCH_ROUNDS)
 *   BENCH_BASELINE=/path/to/other/checkout pnpm bench:server
 *                              A/B of two builds: each InferSignal variant also
 *                              runs on that checkout's built packages (`variant@baseline`),
 *                              interleaved with the rest; prints, writes no docs
 *
 * The figure that decides is server CPU µs per request (the server's own
 * `process.cpuUsage()` over a window of saturating load),
 * divided by the two bare processes' in the same round: req/s on a 2-vCPU
 * machine shared with the load generator mostly measures the client. Every
 * server is scraped once before each window, its CPU measured apart: an
 * instrumented one serves Prometheus on loopback, one with no metrics an
 * empty answer, so all serve the same two kinds of client. A second bare process
 * (`bare-again`) runs as a variant: the A/A check of the method.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { setTimeout as sleep } from 'node:timers/promises';
import { BASELINE } from './lib/baseline';
import { SMOKE, rounds, subset } from './lib/env';
import { printVerdict, table, writeSection, type Goal } from './lib/report';
import {
  FRAMEWORKS,
  VARIANTS as ALL_VARIANTS,
  VARIANT_LABEL,
  SERVER_GOALS,
  pinCpus,
  startServer,
  type Framework,
  type ServerHandle,
  type Variant,
} from './lib/servers';
import { CONNECTIONS, WINDOW_REQUESTS } from './lib/load';
import { measureWindow, warmUp, type Sample } from './lib/server-window';
import { fmtRatio, fmtSpread, rotate, spread } from './lib/stats';

// Smoke mode: one round is already 15 loads (bare around each of 7 variants).
const ROUNDS = SMOKE ? 1 : rounds(12);
/** Smoke mode checks that the suite runs: one framework keeps it to a few seconds. */
const FRAMEWORKS_RUN: readonly Framework[] = SMOKE ? ['fastify'] : subset('BENCH_FRAMEWORKS', FRAMEWORKS);
/** Bare is always measured: every ratio is over it. */
const VARIANTS: readonly Variant[] = [
  'bare',
  ...(process.env.BENCH_VARIANTS?.trim() ? subset<Variant>('BENCH_VARIANTS', ALL_VARIANTS) : ALL_VARIANTS).filter(
    (v) => v !== 'bare',
  ),
];
/**
 * What one server runs: a variant on this tree's packages, or (`@baseline`)
 * on those of the checkout BENCH_BASELINE names (lib/baseline.ts); with it,
 * each InferSignal variant runs on both, in the same rounds.
 */
type Arm = Variant | `${Variant}@baseline`;
const onBaseline = (v: Variant): Arm => `${v}@baseline`;
const ARMS: readonly Arm[] = [
  ...VARIANTS,
  ...(BASELINE === undefined ? [] : VARIANTS.filter((v) => v.startsWith('infersignal')).map(onBaseline)),
];
const variantOf = (arm: Arm) => arm.replace(/@baseline$/, '') as Variant;
/** A run of a subset prints its figures but leaves the docs alone (their tables and verdict need every row); smoke mode writes nothing anyway. */
const PARTIAL =
  !SMOKE &&
  (FRAMEWORKS_RUN.length < FRAMEWORKS.length ||
    !ALL_VARIANTS.every((v) => VARIANTS.includes(v)) ||
    BASELINE !== undefined);

const STARTED = performance.now();
const PINNING = pinCpus();
console.log(`CPUs: ${PINNING}`);

const key = (f: Framework, v: Arm) => `${f}/${v}`;
const samples = new Map<string, Sample[]>();
/** Chunks of load each fresh server took to warm up (lib/server-window.ts), for the conditions line. */
const warmUpChunks: number[] = [];
/**
 * Each server's CPU with no load (ms per second), once a set is warm: what
 * it costs while nothing happens (InferSignal's timers: the event-loop
 * probe, the delay histogram, the monitor's tick).
 */
const IDLE_MS = SMOKE ? 200 : 2000;
const idle = new Map<string, number[]>();

/**
 * A fresh set of processes every few rounds: identical servers started side
 * by side keep medians 3–5 % apart for their whole life (address-space
 * layout and hash seeds decide how well their inline caches fit), so one
 * process per variant would put that luck into every ratio however many
 * rounds ran; several sets make it one more noise the median absorbs. Sets
 * run one after another, so no more servers are alive at once than one set
 * (three sets at once crowded the 2 vCPUs and slowed every variant).
 */
const ROUNDS_PER_SET: Record<Framework, number> = SMOKE
  ? { fastify: ROUNDS, express: ROUNDS }
  : // Fastify's windows are short and its goals tight (10 % over a 16–24 µs request): twice the sets, for what they
    // cost (a set's start and warm-up, ~30 s). Express's are four times longer, and its goals compare like with like.
    { fastify: 2, express: 4 };
/** Sets whose servers also measure their idle CPU (3 s each): the first few, enough for its median. */
const IDLE_SETS = 3;
async function measureBlock(framework: Framework, firstRound: number, roundCount: number): Promise<void> {
  const servers = new Map<Arm, ServerHandle>();
  try {
    // Started in parallel, this costs one tsx start-up.
    const started = await Promise.all(
      ARMS.map((arm) => startServer(framework, variantOf(arm), arm === variantOf(arm) ? undefined : BASELINE)),
    );
    for (const [i, s] of started.entries()) servers.set(ARMS[i]!, s);
    for (const s of servers.values()) warmUpChunks.push(await warmUp(s));
    for (const [arm, s] of servers) {
      if (firstRound >= IDLE_SETS * ROUNDS_PER_SET[framework]) break;
      // A second's rest first: what the last load left to do (sweeping, compiling) is the load's, not idle work.
      await sleep(1000);
      const { server: w } = await s.window(() => sleep(IDLE_MS), { scrape: false });
      idle.get(key(framework, arm))!.push(w.cpuUs / (w.wallUs / 1000));
    }

    for (let round = firstRound; round < firstRound + roundCount; round++) {
      // Every server once a round, bare among them, in rotated order: each
      // idles as long between its windows as any other (bracketing each
      // variant with bare windows instead measures bare twice as often, and
      // the cadence, not the code, then shows in the ratios). The machine's
      // drift within a round lands on whichever arm ran furthest from bare;
      // the rotation spreads that over all of them, and the median over the
      // rounds absorbs it.
      const measured: Array<{ variant: Arm; sample: Sample }> = [];
      for (const variant of rotate(ARMS, round))
        measured.push({ variant, sample: await measureWindow(servers.get(variant)!) });
      const bare = measured.find((m) => m.variant === 'bare')!.sample.cpuPerRequestUs;
      const bareAgain = measured.find((m) => m.variant === 'bare-again')?.sample.cpuPerRequestUs;
      // The variants' baseline is both bare processes (geometric mean): each process's own luck (see ROUNDS_PER_SET)
      // then weighs half as much in every ratio. Bare again is still over bare alone: the A/A check.
      const baseline = bareAgain === undefined ? bare : Math.sqrt(bare * bareAgain);
      for (const { variant, sample } of measured) {
        if (variant === 'bare-again') sample.vsBare = sample.cpuPerRequestUs / bare;
        else if (variant !== 'bare') sample.vsBare = sample.cpuPerRequestUs / baseline;
        samples.get(key(framework, variant))!.push(sample);
      }
      const perSet = ROUNDS_PER_SET[framework];
      if (round % perSet === perSet - 1 || round === ROUNDS - 1) {
        const line = ARMS.map((v) => `${v} ${samples.get(key(framework, v))!.at(-1)!.cpuPerRequestUs.toFixed(1)}`).join(
          ', ',
        );
        console.log(`round ${round + 1}/${ROUNDS} ${framework} CPU µs/req: ${line}`);
      }
    }
  } finally {
    // Waited for: the next block's servers should not share the CPUs with these.
    await Promise.all([...servers.values()].map((s) => s.close()));
  }
}

// One framework at a time: its servers idle only while their siblings are measured.
for (const framework of FRAMEWORKS_RUN) {
  for (const v of ARMS) {
    samples.set(key(framework, v), []);
    idle.set(key(framework, v), []);
  }
  for (let round = 0; round < ROUNDS; round += ROUNDS_PER_SET[framework]) {
    await measureBlock(framework, round, Math.min(ROUNDS_PER_SET[framework], ROUNDS - round));
  }
}

// Spans really flowed in the traces variants, and nothing failed. Not the outliers variant: its few spans (1 % and
// the slow ones) wait in the batch processor for its 5 s delay, which a run of short windows may never see; its
// spans/req column says how many were exported.
const SPAN_VARIANTS: readonly Variant[] = ['otel-span', 'infersignal-traces', 'otel-http'];
for (const framework of FRAMEWORKS_RUN) {
  for (const variant of SPAN_VARIANTS.filter((v) => VARIANTS.includes(v))) {
    const spans = samples.get(key(framework, variant))!.reduce((n, s) => n + s.spans, 0);
    if (spans === 0)
      throw new Error(`${key(framework, variant)} exported no spans: the variant is not measuring what it claims`);
  }
  for (const variant of ARMS) {
    const errors = samples.get(key(framework, variant))!.reduce((n, s) => n + s.errors, 0);
    if (errors > 0) throw new Error(`${key(framework, variant)}: ${errors} failed requests`);
  }
}

const ratio = (f: Framework, v: Arm) =>
  spread(samples.get(key(f, v))!.flatMap((s) => (Number.isNaN(s.vsBare) ? [] : [s.vsBare])));
const conditions: string[] = [];
const pct = (values: number[]) => `${(spread(values).median * 100).toFixed(1)} %`;
for (const framework of FRAMEWORKS_RUN) {
  const rows = ARMS.map((variant) => {
    const list = samples.get(key(framework, variant))!;
    const spansPerReq = list.reduce((n, s) => n + s.spans, 0) / list.reduce((n, s) => n + s.requests, 0);
    const scrape = spread(list.map((s) => s.scrapeUs / 1000));
    return [
      VARIANT_LABEL[variantOf(variant)] + (variant === variantOf(variant) ? '' : ` — ${BASELINE}`),
      fmtSpread(spread(list.map((s) => s.cpuPerRequestUs)), 1),
      variant === 'bare' ? '—' : `**${fmtRatio(ratio(framework, variant))}**`,
      fmtSpread(spread(list.map((s) => s.rps)), 0),
      fmtSpread(spread(list.map((s) => s.p99Ms)), 0),
      scrape.max > 0 ? scrape.median.toFixed(2) : '–',
      spread(idle.get(key(framework, variant))!).median.toFixed(1),
      spansPerReq > 0 ? spansPerReq.toFixed(2) : '–',
    ];
  });
  const t = table(
    [
      'variant',
      'server CPU µs/req',
      'CPU vs bare (same round)',
      'req/s',
      'P99 ms',
      'CPU of one scrape, ms',
      'idle CPU, ms/s',
      'spans/req',
    ],
    rows,
  );
  console.log(`\n${framework}\n${t}`);
  for (const variant of ARMS) {
    const list = samples.get(key(framework, variant))!;
    // Per request too: a share of a larger CPU figure hides where the added microseconds went.
    const perRequest = (share: (s: Sample) => number) =>
      spread(list.map((s) => share(s) * s.cpuPerRequestUs)).median.toFixed(1);
    console.log(
      `  ${variant}: GC ${pct(list.map((s) => s.gcShare))} (${perRequest((s) => s.gcShare)} µs/req), off the event loop ${pct(list.map((s) => s.helperShare))} (${perRequest((s) => s.helperShare)} µs/req), event-loop thread ${perRequest((s) => 1 - s.helperShare)} µs/req, kernel ${pct(list.map((s) => s.systemShare))} (${perRequest((s) => s.systemShare)} µs/req), waiting ${pct(list.map((s) => s.waitShare))}; ${spread(list.map((s) => s.gcsPerKiloRequest)).median.toFixed(1)} GCs per 1000 requests (old generation: ${(list.reduce((n, s) => n + s.majorGcsPerKiloRequest * s.requests, 0) / list.reduce((n, s) => n + s.requests, 0)).toFixed(3)}), new space ${spread(list.map((s) => s.newSpaceMiB)).median.toFixed(1)} MiB at the window's start`,
    );
  }
  const all = ARMS.flatMap((v) => samples.get(key(framework, v))!);
  conditions.push(
    `${framework}: ${WINDOW_REQUESTS[framework]} requests a window; of a window's server CPU (medians over all windows), ${pct(all.map((s) => s.helperShare))} off the event-loop thread (JIT, GC helpers) and ${pct(all.map((s) => s.gcShare))} in GC pauses; the event loop waited for its CPU ${pct(all.map((s) => s.waitShare))} of a window's time (a neighbour had it)`,
  );
}
const conditionsLine = `${conditions.join('; ')}; warm-up chunks per server: ${spread(warmUpChunks).median} (at most ${spread(warmUpChunks).max})`;
console.log(`conditions: ${conditionsLine}`);
/** The A/A check: a second bare process through the same estimator as every variant; how far from 1.00× it lands is the method's error in this run. */
const aa = VARIANTS.includes('bare-again')
  ? FRAMEWORKS_RUN.map((f) => `${f} ${fmtRatio(ratio(f, 'bare-again'))}`).join(', ')
  : 'not run';
console.log(`A/A (bare again over bare, per round): ${aa}`);
console.log(`run time ${((performance.now() - STARTED) / 60_000).toFixed(1)} min`);

if (BASELINE !== undefined) {
  // Per round, this tree's variant over the baseline's, each already over the round's bare windows.
  for (const f of FRAMEWORKS_RUN) {
    for (const v of VARIANTS.filter((v) => ARMS.includes(onBaseline(v)))) {
      const over = samples.get(key(f, onBaseline(v)))!;
      const ratios = spread(samples.get(key(f, v))!.map((s, i) => s.vsBare / over[i]!.vsBare));
      const cpu = (arm: Arm) => spread(samples.get(key(f, arm))!.map((s) => s.cpuPerRequestUs)).median;
      console.log(
        `${f} ${v}: this tree ${fmtRatio(ratios)} the baseline's; added CPU per request over bare (medians) ${(cpu(v) - cpu('bare')).toFixed(1)} µs here, ${(cpu(onBaseline(v)) - cpu('bare')).toFixed(1)} µs on the baseline`,
      );
    }
  }
}

// Goals, each against a baseline of the same run: bare, or the same work done by hand (its floor).
const both = (v: Variant) => FRAMEWORKS_RUN.map((f) => `${f} ${ratio(f, v).median.toFixed(2)}×`).join(', ');
/**
 * Variant `a` over variant `b`, per round (each over the round's bare, so
 * this is `a`'s CPU over `b`'s in that round), median over the rounds.
 */
const versus = (f: Framework, a: Variant, b: Variant) => {
  const over = samples.get(key(f, b))!;
  return spread(samples.get(key(f, a))!.map((s, i) => s.vsBare / over[i]!.vsBare)).median;
};
/**
 * What `contextManager: true` adds to outlier traces, per round: AsyncLocalStorage's async hooks on Node 20 and 22,
 * paid by every async resource whoever traces. start() registers none by default: InferSignal's spans need none.
 */
const contextManagerCost = (f: Framework) =>
  ['infersignal-outliers', 'infersignal-outliers-context'].every((v) => VARIANTS.includes(v as Variant))
    ? `${versus(f, 'infersignal-outliers-context', 'infersignal-outliers').toFixed(2)}× outlier traces without it`
    : 'not run';
const goalOver = (f: Framework, a: Variant, b: Variant | 'bare', limit: number, what: string): Goal => {
  const value = b === 'bare' ? ratio(f, a).median : versus(f, a, b);
  return {
    text: `${f}: ${what} ${value.toFixed(2)}× ${b === 'bare' ? 'bare' : VARIANT_SHORT[b]}`,
    goal: `≤ ${limit.toFixed(2)}×`,
    met: value <= limit,
  };
};
const VARIANT_SHORT: Partial<Record<Variant, string>> = {
  hook: 'its hand-written hook',
  'otel-calls': 'its own SDK records by hand',
  'infersignal-producer': 'the producer export',
};
const GOALS = SERVER_GOALS.filter(([f]) => FRAMEWORKS_RUN.includes(f));
const goalsRun = GOALS.filter(([, a, b]) => VARIANTS.includes(a) && (b === 'bare' || VARIANTS.includes(b)));
const goals: Goal[] = goalsRun.map(([f, a, b, limit, what]) => goalOver(f, a, b, limit, what));
if (PARTIAL) {
  console.log(
    `subset or baseline run (BENCH_FRAMEWORKS / BENCH_VARIANTS / BENCH_BASELINE): no verdict, docs/benchmarks.md left alone`,
  );
  for (const g of goals) console.log(`  ${g.text} — goal ${g.goal} ${g.met ? 'met' : 'NOT met'} (subset run)`);
  for (const f of FRAMEWORKS_RUN) console.log(`  ${f}: with a context manager ${contextManagerCost(f)}`);
  process.exit(0);
}

console.log(
  `context: hand-written hook ${both('hook')} (recording nothing ${both('hook-empty')}); instrumentation-http ${both('otel-http')} (issue expected ~2.9×)`,
);
console.log(
  `floors: API export's own OTel calls by hand ${both('otel-calls')} (InferSignal API export ${both('infersignal-api')}); one SDK span by hand ${both('otel-span')}`,
);
const contextManagerLine = FRAMEWORKS_RUN.map((f) => `${f} ${contextManagerCost(f)}`).join('; ');
console.log(`outlier traces with an AsyncLocalStorage context manager: ${contextManagerLine}`);
const verdict = printVerdict('server', goals);
const medianCpu = (f: Framework, v: Variant) => spread(samples.get(key(f, v))!.map((s) => s.cpuPerRequestUs)).median;
const addedUs = (f: Framework, v: Variant) => {
  const us = medianCpu(f, v) - medianCpu(f, 'bare');
  return `${us >= 0 ? '+' : ''}${us.toFixed(1)} µs`;
};
const addedLines = FRAMEWORKS_RUN.map(
  (f) =>
    `${f}: API export ${addedUs(f, 'infersignal-api')} (its 3 OTel records by hand ${addedUs(f, 'otel-calls')}), producer export ${addedUs(f, 'infersignal-producer')}, ` +
    `outlier traces ${addedUs(f, 'infersignal-outliers')}, a span per request ${addedUs(f, 'infersignal-traces')} (one SDK span by hand ${addedUs(f, 'otel-span')}), hand-written hook ${addedUs(f, 'hook')} (recording nothing ${addedUs(f, 'hook-empty')}) over bare's ${medianCpu(f, 'bare').toFixed(1)} µs`,
);
const added = addedLines.join('; ');
console.log(`added CPU per request (medians): ${added}`);

// The docs: one table, the frameworks side by side (the console above has every column per framework).
const cpuCell = (f: Framework, v: Arm) =>
  FRAMEWORKS_RUN.includes(f) ? fmtSpread(spread(samples.get(key(f, v))!.map((s) => s.cpuPerRequestUs)), 1) : '–';
const ratioCell = (f: Framework, v: Arm) =>
  !FRAMEWORKS_RUN.includes(f) ? '–' : v === 'bare' ? '—' : `**${fmtRatio(ratio(f, v))}**`;
const perFramework = (cell: (f: Framework) => string) => FRAMEWORKS.map(cell).join(' / ');
const docTable = table(
  [
    'variant',
    'Fastify CPU µs/req',
    'Fastify vs bare',
    'Express CPU µs/req',
    'Express vs bare',
    'one scrape, ms (F / E)',
    'idle CPU, ms/s (F / E)',
  ],
  ARMS.map((v) => [
    VARIANT_LABEL[variantOf(v)],
    cpuCell('fastify', v),
    ratioCell('fastify', v),
    cpuCell('express', v),
    ratioCell('express', v),
    perFramework((f) => {
      if (!FRAMEWORKS_RUN.includes(f)) return '–';
      const scrape = spread(samples.get(key(f, v))!.map((s) => s.scrapeUs / 1000));
      return scrape.max > 0 ? scrape.median.toFixed(2) : '–';
    }),
    perFramework((f) => (FRAMEWORKS_RUN.includes(f) ? spread(idle.get(key(f, v))!).median.toFixed(1) : '–')),
  ]),
);
writeSection('server', {
  title: 'server: Fastify and Express, server CPU per request vs bare',
  command: 'pnpm bench:server',
  packages: [
    'fastify',
    'express',
    '@infersignal/bench',
    '@opentelemetry/sdk-metrics',
    '@opentelemetry/instrumentation-http',
    '@infersignal/node',
  ],
  method: `Hello-inference servers, each a forked process (${PINNING}), loaded by \`@infersignal/bench\`'s closed loop (${CONNECTIONS} connections, ${WINDOW_REQUESTS.fastify} / ${WINDOW_REQUESTS.express} requests a window); ${ROUNDS} rotated rounds, fresh servers every few, each scraped before its window.`,
  results: [
    docTable,
    '',
    `A/A (a second bare process): ${aa}. With an AsyncLocalStorage context manager, outlier traces cost ${contextManagerLine}.  `,
  ].join('\n'),
  verdict,
});
