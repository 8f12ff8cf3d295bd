/**
 * Instructions per request, counted by callgrind: the server suite's
 * servers (lib/server-child.ts, the same variants) run under
 * `valgrind --tool=callgrind`, loaded by autocannon on loopback, and each
 * measured window's instructions on the server's main thread are divided by
 * the requests it served. Where the server suite's CPU time moves with the
 * host, the caches and the scheduler (its A/A check reads 0.97–1.09×), a
 * count moves by ~0.5 % from window to window: an A/B of two builds, or of
 * two variants, reads a few hundred instructions of ~50 000. It counts
 * instructions, not time (a cache miss costs nothing here), so it tells
 * where work was added, not what it costs in seconds.
 *
 * Under callgrind a server runs ~50× slower, so its timers fire ~50× as
 * often per request: the main thread's instructions with no load, over five
 * seconds, are measured after the windows and taken out at each window's
 * length. That takes out their fixed work, not what they do with
 * data under load (the detectors' ticks over full windows): per-request
 * work is read best on `infersignal-no-timers`, the default second variant.
 * A server warms up as the server suite's do, load and a scrape in turn.
 * Compiler and GC helper threads are counted apart; a server is measured
 * once they have settled (under 2 % of the main thread's count) and the
 * main thread's count with them (within 2 % of the window before), twice
 * in a row. With V8's perf map (`--perf-basic-prof`)
 * the instructions of compiled JavaScript and builtins get names, and each
 * variant's top functions are printed against the first variant's.
 *
 *   pnpm build && pnpm --filter @infersignal/benchmarks instructions [--node 24]
 *   BENCH_VARIANTS=bare,infersignal-no-timers (the first is the reference)  BENCH_FRAMEWORKS=fastify
 *   BENCH_ROUNDS=3 measured windows  BENCH_REQUESTS=5000 a window
 *   BENCH_CALLERS=LoadIC_Megamorphic  also print who calls these (callgrind's native names)
 *   INFERSIGNAL_BENCH_PACKAGES_FROM=<checkout>  load @infersignal/* from another built tree (an A/B)
 *   BENCH_SIMULATE=1  also callgrind's simulated caches and branch predictor (--cache-sim --branch-sim,
 *                     ~2× slower): misses and mispredictions a request (L1 misses also by function and by
 *                     origin, against the first variant), what a count of instructions cannot
 *                     show and this VM's missing hardware counters cannot either; the idle timers' share
 *                     stays in them, so compare variants without timers (*-no-timers, hook, bare). The
 *                     "last level" simulated is the core's own L2 where sysfs gives one: an L3 is shared
 *                     with the host's other tenants (and callgrind simulates two levels only)
 *
 * Needs valgrind (Debian's package). Prints only; docs/benchmarks.md cites
 * what it showed.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { execFileSync, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CallgrindDump,
  PerfMap,
  callersOf,
  originOf,
  parseCallgrind,
  selfByFunction,
  selfByOrigin,
} from './lib/callgrind';
import { CHILD_ENV, orderedSubset, rounds } from './lib/env';
import { load } from './lib/load';
import {
  DIAGNOSTIC_VARIANTS,
  FRAMEWORKS,
  VARIANTS,
  SERVER_CHILD,
  SERVER_V8_FLAGS,
  type ChildMessage,
  type Framework,
  type Variant,
  nextMessage,
} from './lib/servers';
import { ROOT } from './lib/report';
import { spread } from './lib/stats';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 5000);
// Three at least outside smoke mode (rounds() never gives fewer): the default says so.
const MEASURED = rounds(3);
const CALLERS = process.env.BENCH_CALLERS ? new RegExp(process.env.BENCH_CALLERS) : undefined;
const SIMULATE = process.env.BENCH_SIMULATE === '1';
/** callgrind's `--LL=size,associativity,line` for the core's L2 (sysfs), if it has one. */
function privateLastLevel(): string[] {
  try {
    const cache = '/sys/devices/system/cpu/cpu0/cache/index2';
    const read = (name: string) => readFileSync(`${cache}/${name}`, 'utf8').trim();
    if (read('level') !== '2' || read('type') !== 'Unified') return [];
    const size = Number.parseInt(read('size'), 10) * (read('size').endsWith('M') ? 1 << 20 : 1 << 10);
    return [`--LL=${size},${read('ways_of_associativity')},${read('coherency_line_size')}`];
  } catch {
    return [];
  }
}
/** The simulated events printed with BENCH_SIMULATE, each a sum of callgrind's, a request on the main thread. */
const SIMULATED: ReadonlyArray<[label: string, events: readonly string[]]> = [
  ['L1 instruction misses', ['I1mr']],
  ['L1 data misses', ['D1mr', 'D1mw']],
  ['last-level (L2) misses', ['ILmr', 'DLmr', 'DLmw']],
  ['data accesses', ['Dr', 'Dw']],
  ['conditional branches mispredicted', ['Bcm']],
  ['indirect branches mispredicted', ['Bim']],
];
/** With BENCH_SIMULATE, also printed by function against the first variant (where the footprint grew). */
const MISSES_BY_FUNCTION: ReadonlyArray<[label: string, events: readonly string[]]> = [
  ['L1 instruction misses', ['I1mr']],
  ['L1 data misses', ['D1mr', 'D1mw']],
];
/** Requests before the first window: V8 compiles the request path by call counts. */
const WARM_UP = 20000;
/** Settled: the compiler and GC helper threads' instructions under this share of the main thread's. */
const SETTLED = 0.02;
/** Steady: the main thread's count per request within this of the window before. */
const STEADY = 0.02;
const MAX_WINDOWS = 40;
const IDLE_MS = 5000;

interface Measured {
  framework: Framework;
  variant: Variant;
  /** Main-thread instructions per request, the idle timers' share taken out, per measured window. */
  perRequest: number[];
  otherThreads: number[];
  /** With BENCH_SIMULATE: each window's main-thread events a request (SIMULATED's labels), timers included. */
  simulated: Array<Map<string, number>>;
  spansPerRequest: number;
  /** Self instructions per request by function in the last window, the idle timers' share out (perf map names). */
  byFunction: Map<string, number>;
  /** The same by originOf() (package and tier, V8's builtins and interpreter, native code). */
  byOrigin: Map<string, number>;
  /** With BENCH_SIMULATE: MISSES_BY_FUNCTION's misses a request by function, the same way. */
  missesByFunction: Map<string, Map<string, number>>;
  dump: CallgrindDump;
  map: PerfMap;
  requests: number;
}

async function measure(framework: Framework, variant: Variant, dir: string): Promise<Measured> {
  const child = fork(SERVER_CHILD, [framework, variant], {
    cwd: ROOT,
    env: CHILD_ENV,
    execPath: 'valgrind',
    execArgv: [
      '--tool=callgrind',
      `--callgrind-out-file=${dir}/cg.%p`,
      '--vgdb=yes',
      '--separate-threads=yes',
      '--dump-instr=yes',
      ...(SIMULATE ? ['--cache-sim=yes', '--branch-sim=yes', ...privateLastLevel()] : []),
      process.execPath,
      '--perf-basic-prof',
      ...SERVER_V8_FLAGS,
      '--import',
      'tsx',
    ],
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  });
  // valgrind's own lines (`==pid==`) are not the server's.
  child.stderr?.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n'))
      if (line && !line.startsWith('==')) console.error(`[server] ${line}`);
  });
  const pid = child.pid!;
  const perfMap = `/tmp/perf-${pid}.map`;
  try {
    const ready = (await nextMessage(child, 'ready')) as Extract<ChildMessage, { type: 'ready' }>;
    const url = `http://127.0.0.1:${ready.port}/v1/infer`;
    const scrape = async () => {
      if (ready.metricsUrl) await (await fetch(ready.metricsUrl)).text();
    };
    /** Zeroes the counters, runs `during`, dumps: the new files' instructions, main thread and the others. */
    const counted = async (label: string, during: () => Promise<void>) => {
      const before = new Set(readdirSync(dir));
      execFileSync('callgrind_control', ['-z', String(pid)], { stdio: 'ignore' });
      await during();
      execFileSync('callgrind_control', ['-d', label, String(pid)], { stdio: 'ignore' });
      let main: CallgrindDump | undefined;
      let others = 0;
      for (const file of readdirSync(dir).filter((f) => f.startsWith(`cg.${pid}.`) && !before.has(f))) {
        const text = readFileSync(join(dir, file), 'utf8');
        // --separate-threads: `-01` is the main thread.
        if (file.endsWith('-01')) main = parseCallgrind(text, SIMULATE ? MISSES_BY_FUNCTION.flatMap(([, e]) => e) : []);
        else others += Number(/^summary: (\d+)/m.exec(text)?.[1] ?? 0);
      }
      if (main === undefined) throw new Error(`${variant}: no main-thread dump for ${label}`);
      return { main, others };
    };
    const idle = async () => {
      let ms = 0;
      const { main } = await counted('idle', async () => {
        const t0 = performance.now();
        await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
        ms = performance.now() - t0;
      });
      return { perMs: main.total / ms, main, ms };
    };
    const window = async (label: string) => {
      await scrape();
      await load(url, 500);
      let requests = 0;
      let wallUs = 0;
      let spans = 0;
      const { main, others } = await counted(label, async () => {
        const ended = nextMessage(child, 'window');
        child.send({ type: 'begin' });
        await load(url, REQUESTS);
        child.send({ type: 'end' });
        const w = (await ended) as Extract<ChildMessage, { type: 'window' }>;
        requests = w.requests;
        wallUs = w.wallUs;
        spans = w.spans;
      });
      return { main, others: others / requests, requests, wallUs, spans };
    };

    // Scraped as it warms up, as the server suite's warm-up does: the scraper's requests are a second kind of
    // client, and code V8 compiled for the load generator's alone would be compiled again at the first scrape.
    for (let sent = 0; sent < WARM_UP; sent += REQUESTS) {
      await load(url, REQUESTS);
      await scrape();
    }
    // Settled: the helper threads quiet and the main thread's count within STEADY of the window before, twice.
    let before = Number.NaN;
    for (let i = 0, quiet = 0; i < MAX_WINDOWS && quiet < 2; i++) {
      const w = await window(`warm-${i}`);
      const perRequest = w.main.total / w.requests;
      const steady = Math.abs(perRequest / before - 1) < STEADY;
      quiet = steady && w.others < perRequest * SETTLED ? quiet + 1 : 0;
      before = perRequest;
    }
    const windows = [];
    for (let r = 0; r < MEASURED; r++) windows.push(await window(`window-${r}`));
    // After the windows, not between warm-up and them: a server left idle for seconds came back to its first
    // window up to 9 % dearer, its compiler threads busy again.
    const idleAfter = await idle();
    const idlePerMs = idleAfter.perMs;
    const last = windows.at(-1)!;
    const map = PerfMap.read(perfMap);
    // By function: the window's self instructions less the idle dump's, scaled to the window's length.
    const idleScale = last.wallUs / 1000 / idleAfter.ms;
    const perRequestOf = (by: (dump: CallgrindDump) => Map<string, number>) => {
      const out = by(last.main);
      for (const [name, ir] of by(idleAfter.main)) out.set(name, (out.get(name) ?? 0) - ir * idleScale);
      for (const [name, ir] of out) out.set(name, ir / last.requests);
      return out;
    };
    const byFunction = perRequestOf((dump) => selfByFunction(dump, map));
    const byOrigin = perRequestOf((dump) => selfByOrigin(dump, map));
    const missesByFunction = new Map(
      SIMULATE
        ? MISSES_BY_FUNCTION.map(([label, events]) => [
            label,
            perRequestOf((dump) => {
              const sum = new Map<string, number>();
              for (const event of events)
                for (const [name, n] of selfByFunction(dump, map, event)) sum.set(name, (sum.get(name) ?? 0) + n);
              return sum;
            }),
          ])
        : [],
    );
    return {
      framework,
      variant,
      perRequest: windows.map((w) => (w.main.total - (idlePerMs * w.wallUs) / 1000) / w.requests),
      otherThreads: windows.map((w) => w.others),
      simulated: windows.map(
        (w) =>
          new Map(
            SIMULATED.map(([label, events]) => [
              label,
              events.reduce((sum, event) => sum + (w.main.events.get(event) ?? 0), 0) / w.requests,
            ]),
          ),
      ),
      spansPerRequest: windows.reduce((n, w) => n + w.spans, 0) / windows.reduce((n, w) => n + w.requests, 0),
      byFunction,
      byOrigin,
      missesByFunction,
      dump: last.main,
      map,
      requests: last.requests,
    };
  } finally {
    if (child.connected) child.send({ type: 'exit' });
    await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(undefined)));
    rmSync(perfMap, { force: true });
  }
}

const frameworks = orderedSubset('BENCH_FRAMEWORKS', FRAMEWORKS, ['fastify']);
const variants = orderedSubset<Variant>(
  'BENCH_VARIANTS',
  [...VARIANTS, ...DIAGNOSTIC_VARIANTS],
  ['bare', 'infersignal-no-timers'],
);
const dir = mkdtempSync(join(tmpdir(), 'infersignal-callgrind-'));
const jobs = frameworks.flatMap((framework) => variants.map((variant) => ({ framework, variant })));
const results: Measured[] = [];
// One server per CPU: the counts do not depend on the machine's speed, only the wall time does.
const workers = Math.max(1, Math.min(availableParallelism(), jobs.length));
try {
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let job = jobs.shift(); job !== undefined; job = jobs.shift()) {
        const result = await measure(job.framework, job.variant, dir);
        console.error(`${job.framework}/${job.variant}: ${result.perRequest.map((n) => n.toFixed(0)).join(', ')}`);
        results.push(result);
      }
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}

for (const framework of frameworks) {
  const rows = variants.map((variant) => results.find((r) => r.framework === framework && r.variant === variant)!);
  const reference = rows[0]!;
  const referenceMedian = spread(reference.perRequest).median;
  console.log(`\n${framework} (${process.version}): main-thread instructions per request, the idle timers' share out`);
  for (const row of rows) {
    const median = spread(row.perRequest).median;
    console.log(
      `  ${row.variant.padEnd(30)} ${median.toFixed(0).padStart(7)}  ${(median / referenceMedian).toFixed(3)}× ${reference.variant}  (windows ${row.perRequest.map((n) => n.toFixed(0)).join(', ')}; other threads ${spread(row.otherThreads).median.toFixed(0)}; spans/request ${row.spansPerRequest.toFixed(3)})`,
    );
  }
  if (SIMULATE) {
    console.log(`\n${framework}: simulated (callgrind's caches and branch predictor), a request on the main thread`);
    for (const [label] of SIMULATED) {
      const median = (row: Measured) => spread(row.simulated.map((w) => w.get(label)!)).median;
      const figures = rows.map(
        (row) =>
          `${row.variant} ${median(row).toFixed(1)} (${row.simulated.map((w) => w.get(label)!.toFixed(1)).join(', ')})`,
      );
      console.log(`  ${label}: ${figures.join('; ')}`);
    }
  }
  for (const row of rows.slice(1)) {
    printDiff(`${row.variant} against ${reference.variant}, by origin (self instructions per request)`, {
      reference: reference.byOrigin,
      row: row.byOrigin,
      minDelta: 20,
    });
    printDiff(`${row.variant} against ${reference.variant}, by function (self instructions per request)`, {
      reference: reference.byFunction,
      row: row.byFunction,
      top: 25,
      bottom: 8,
    });
    for (const [label, misses] of row.missesByFunction) {
      const referenceMisses = reference.missesByFunction.get(label)!;
      const byOrigin = (byFunction: Map<string, number>) => {
        const out = new Map<string, number>();
        for (const [name, n] of byFunction) out.set(originOf(name), (out.get(originOf(name)) ?? 0) + n);
        return out;
      };
      printDiff(`${row.variant} against ${reference.variant}, by origin (${label} per request)`, {
        reference: byOrigin(referenceMisses),
        row: byOrigin(misses),
        minDelta: 2,
        digits: 1,
      });
      printDiff(`${row.variant} against ${reference.variant}, by function (${label} per request)`, {
        reference: referenceMisses,
        row: misses,
        top: 25,
        bottom: 8,
        digits: 1,
      });
    }
  }
  if (CALLERS) {
    for (const row of rows) {
      console.log(`\n  ${row.variant}: callers of /${CALLERS.source}/ (inclusive instructions per request)`);
      const callers = [...callersOf(row.dump, row.map, CALLERS)].sort((a, b) => b[1] - a[1]).slice(0, 12);
      for (const [name, ir] of callers)
        console.log(`    ${(ir / row.requests).toFixed(0).padStart(6)}  ${name.slice(0, 140)}`);
    }
  }
}

/**
 * One variant's figures by name against the reference's, largest increase first: those at least `minDelta`
 * apart, or the `top` and `bottom` ones.
 */
function printDiff(
  title: string,
  {
    reference,
    row,
    minDelta,
    top,
    bottom,
    digits = 0,
  }: {
    reference: Map<string, number>;
    row: Map<string, number>;
    minDelta?: number;
    top?: number;
    bottom?: number;
    /** Decimals printed (misses a request are a few per function). */
    digits?: number;
  },
): void {
  const names = new Set([...row.keys(), ...reference.keys()]);
  const diff = [...names]
    .map((name) => ({ name, delta: (row.get(name) ?? 0) - (reference.get(name) ?? 0) }))
    .filter(({ delta }) => minDelta === undefined || Math.abs(delta) >= minDelta)
    .sort((a, b) => b.delta - a.delta);
  const line = ({ name, delta }: { name: string; delta: number }) =>
    `    ${delta.toFixed(digits).padStart(6)}  ${name.slice(0, 140)} (${(reference.get(name) ?? 0).toFixed(digits)} → ${(row.get(name) ?? 0).toFixed(digits)})`;
  console.log(`\n  ${title}:`);
  if (top === undefined) {
    for (const entry of diff) console.log(line(entry));
    return;
  }
  for (const entry of diff.slice(0, top)) console.log(line(entry));
  if (bottom !== undefined && diff.length > top) {
    console.log('    …');
    for (const entry of diff.slice(Math.max(top, diff.length - bottom))) console.log(line(entry));
  }
}
