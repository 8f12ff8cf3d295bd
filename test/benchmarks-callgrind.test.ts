/**
 * The instructions tool's reading of callgrind (benchmarks/lib/callgrind.ts),
 * on a real dump: a small script run by this Node under
 * `valgrind --tool=callgrind --dump-instr=yes` with V8's perf map, whose
 * JavaScript must come out by name with its own instructions, and whose
 * megamorphic property loads must be traced back to the function that
 * makes them. Skipped, saying why, where valgrind is missing (CI installs
 * Debian's package: .ci/run).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  PerfMap,
  callersOf,
  originOf,
  parseCallgrind,
  selfByFunction,
  selfByOrigin,
} from '../benchmarks/lib/callgrind';

const valgrind = spawnSync('valgrind', ['--version'], { encoding: 'utf8' });
const missing = valgrind.status === 0 ? undefined : 'valgrind is not installed (apt-get install valgrind)';
if (missing) console.warn(`skipping the callgrind run: ${missing}`);

const CALLS = 2_000_000;
// `readAB` sees five shapes, past V8's four, so its loads are megamorphic; `run` is called often enough, and loops
// long enough, to be optimized on either Node line (readAB then inlined into it).
const SCRIPT = `
function readAB(o) { return o.a + o.b; }
const shapes = [{ a: 1, b: 2 }, { b: 2, a: 1 }, { a: 1, b: 2, c: 3 }, { x: 0, a: 1, b: 2 }, { y: 0, a: 1, b: 2 }];
function run(n) { let sum = 0; for (let i = 0; i < n; i++) sum += readAB(shapes[i % 5]); return sum; }
let total = 0;
for (let round = 0; round < 20; round++) total += run(${CALLS / 20});
if (total !== ${CALLS * 3}) throw new Error('sum ' + total);
`;

const dir = mkdtempSync(join(tmpdir(), 'infersignal-callgrind-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `source` as a script under callgrind (`--dump-instr=yes`, then `flags`): its path, process id and dump. */
function underCallgrind(
  name: string,
  source: string,
  flags: readonly string[],
  nodeFlags: readonly string[] = [],
  keep: readonly string[] = [],
) {
  const out = join(dir, `${name}.out`);
  const script = join(dir, `${name}.js`);
  writeFileSync(script, source);
  const run = spawnSync(
    'valgrind',
    [
      '--tool=callgrind',
      '--dump-instr=yes',
      ...flags,
      `--callgrind-out-file=${out}`,
      process.execPath,
      ...nodeFlags,
      script,
    ],
    { encoding: 'utf8', timeout: 120_000 },
  );
  expect(run.status, run.stderr).toBe(0);
  return { script, pid: run.pid, dump: parseCallgrind(readFileSync(out, 'utf8'), keep) };
}

describe.skipIf(missing !== undefined)('callgrind dump of a Node process', () => {
  it('names V8-compiled functions by the perf map and counts their own instructions; finds who calls a builtin', () => {
    const { script, pid, dump } = underCallgrind('megamorphic', SCRIPT, [], ['--perf-basic-prof']);
    const perfMap = `/tmp/perf-${pid}.map`;
    try {
      const map = PerfMap.read(perfMap);
      const self = selfByFunction(dump, map);

      // Every instruction lands on one function: the self costs add up to the dump's summary.
      let sum = 0;
      for (const ir of self.values()) sum += ir;
      expect(dump.total).toBeGreaterThan(1e8);
      expect(Math.abs(sum - dump.total) / dump.total).toBeLessThan(0.001);

      // The script's functions by name and place, whatever tier ran them, with their own instructions: at least
      // a handful a call, most of them in the loop.
      const own = [...self].filter(([name]) => name.startsWith('JS:') && name.includes(script));
      expect(own.reduce((n, [, ir]) => n + ir, 0)).toBeGreaterThan(CALLS * 5);
      expect(own.find(([name]) => name.startsWith(`JS:run ${script}:4:`))?.[1] ?? 0).toBeGreaterThan(CALLS * 5);

      // By origin, the same instructions: the script's under its own path, tier by tier.
      const byOrigin = selfByOrigin(dump, map);
      let originSum = 0;
      for (const ir of byOrigin.values()) originSum += ir;
      expect(Math.abs(originSum - dump.total) / dump.total).toBeLessThan(0.001);
      const scriptOrigins = [...byOrigin].filter(([origin]) => origin.startsWith(script));
      expect(scriptOrigins.reduce((n, [, ir]) => n + ir, 0)).toBeGreaterThan(CALLS * 5);

      // Its loads of five shapes go through a load IC builtin, called from readAB's own code or the loop it was
      // inlined into, and named from the perf map: LoadIC_Megamorphic from optimized code on Node 24, the generic
      // LoadIC on Node 20, LoadICBaseline where the loop was still in Sparkplug's code.
      const callers = callersOf(dump, map, /^Builtins_LoadIC(_Megamorphic|Baseline)?$/);
      const fromScript = [...callers].filter(([name]) => name.includes(script));
      expect(fromScript.length).toBeGreaterThan(0);
      expect(fromScript.reduce((n, [, ir]) => n + ir, 0)).toBeGreaterThan(CALLS * 2);
    } finally {
      rmSync(perfMap, { force: true });
    }
  }, 180_000);
});

// A branch on 100 000 random bits, five times: a predictor can guess half of them at best. The branch's two sides
// update different variables, so V8 keeps it a branch (a select needs one value from two).
const BRANCHES = 100_000;
const BRANCH_SCRIPT = `
const bits = new Uint8Array(${BRANCHES});
let seed = 12345;
for (let i = 0; i < bits.length; i++) { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; bits[i] = seed >>> 31; }
function count(bits) { let ones = 0, zeros = 0; for (let i = 0; i < bits.length; i++) { if (bits[i]) ones++; else zeros += 2; } return ones + zeros; }
let total = 0;
for (let round = 0; round < 5; round++) total += count(bits);
if (total < ${BRANCHES * 5}) throw new Error('total ' + total);
`;

describe.skipIf(missing !== undefined)('callgrind dump with its simulated caches and branch predictor', () => {
  it("reads every event of the summary by name, and a kept one by function (BENCH_SIMULATE's figures)", () => {
    const { script, pid, dump } = underCallgrind(
      'branches',
      BRANCH_SCRIPT,
      ['--cache-sim=yes', '--branch-sim=yes'],
      ['--perf-basic-prof'],
      ['Bcm', 'I1mr'],
    );
    const perfMap = `/tmp/perf-${pid}.map`;
    try {
      // Ir first, as without the simulation; the self costs still add up to it.
      expect(dump.events.get('Ir')).toBe(dump.total);
      let sum = 0;
      for (const byName of dump.self.values()) for (const ir of byName.values()) sum += ir;
      expect(Math.abs(sum - dump.total) / dump.total).toBeLessThan(0.001);
      for (const event of ['Dr', 'Dw', 'I1mr', 'D1mr', 'D1mw', 'ILmr', 'DLmr', 'DLmw', 'Bc', 'Bcm', 'Bi', 'Bim'])
        expect(dump.events.get(event), event).toBeGreaterThan(0);
      // The random branch alone: a quarter of its 500 000 runs mispredicted at least (half, for a perfect guess).
      expect(dump.events.get('Bcm')).toBeGreaterThan(BRANCHES * 5 * 0.25);
      expect(dump.events.get('Bcm')!).toBeLessThan(dump.events.get('Bc')!);

      // The kept events by function add up to their summaries, and the mispredictions are the script's loop's.
      const map = PerfMap.read(perfMap);
      for (const event of ['Bcm', 'I1mr']) {
        let total = 0;
        for (const n of selfByFunction(dump, map, event).values()) total += n;
        expect(Math.abs(total - dump.events.get(event)!) / dump.events.get(event)!, event).toBeLessThan(0.001);
      }
      // Which code runs the branch depends on how far V8 tiered count() up before the rounds ended (under
      // valgrind, on a busy machine, sometimes not at all): count's own code once TurboFan or Maglev took it, a
      // builtin its baseline code calls for the test (ToBooleanForBaselineJump), or the interpreter's handler
      // for the jump. All three are named from the perf map.
      const misses = selfByFunction(dump, map, 'Bcm');
      const isCount = (name: string) => name.startsWith('JS:count ') && name.includes(script);
      let branchMisses = 0;
      for (const [name, n] of misses) {
        if (isCount(name) || name.startsWith('BytecodeHandler:JumpIfToBoolean')) branchMisses += n;
        else if (name.startsWith('Builtin:')) {
          const callers = callersOf(dump, map, new RegExp(`^Builtins_${name.slice('Builtin:'.length)}$`));
          if ([...callers.keys()].some(isCount)) branchMisses += n;
        }
      }
      expect(branchMisses).toBeGreaterThan(BRANCHES * 5 * 0.25);
      // Not kept, not read.
      expect(() => selfByFunction(dump, map, 'D1mr')).toThrow(/D1mr kept/);
    } finally {
      rmSync(perfMap, { force: true });
    }
  }, 180_000);
});

describe('originOf', () => {
  it('groups JavaScript by package and tier, V8 builtins, the interpreter and native code by library', () => {
    const pnpm = '/w/node_modules/.pnpm';
    expect(
      originOf(
        `JS:*_record ${pnpm}/@opentelemetry+sdk-metrics@2.12.1/node_modules/@opentelemetry/sdk-metrics/build/src/a.js:3:4`,
      ),
    ).toBe('@opentelemetry/sdk-metrics (TurboFan)');
    expect(originOf(`JS:^next ${pnpm}/router@2.3.0/node_modules/router/index.js:189:17`)).toBe('router (Sparkplug)');
    expect(originOf('JS:~end file:///w/packages/core/dist/index.js:1983:6')).toBe('@infersignal/core (bytecode)');
    expect(originOf('JS:+parserOnIncoming node:_http_server:1167:26')).toBe('node (Maglev)');
    // selfByFunction()'s names have no tier.
    expect(originOf('JS:end file:///w/packages/core/dist/index.js:1983:6')).toBe('@infersignal/core');
    expect(originOf('JS: file:///w/benchmarks/lib/server-child.ts:1:2113')).toBe('/w/benchmarks/lib/server-child.ts');
    expect(originOf('Builtin:LdaNamedPropertyHandler')).toBe('V8 interpreter (bytecode handlers)');
    expect(originOf('Builtins_KeyedStoreIC_Megamorphic')).toBe('V8 builtins');
    expect(originOf('v8::internal::Scavenger::ScavengeObject(v8::internal::FullHeapObjectSlot)')).toBe(
      'V8 garbage collector (C++)',
    );
    expect(originOf('v8::internal::Runtime_TypedArraySortFast(int, unsigned long*, v8::internal::Isolate*)')).toBe(
      'V8 runtime (C++)',
    );
    expect(originOf('uv__io_poll')).toBe('Node and libuv (C++)');
    expect(originOf('__memmove_avx_unaligned_erms')).toBe('other native (libc, kernel entry, …)');
  });
});
