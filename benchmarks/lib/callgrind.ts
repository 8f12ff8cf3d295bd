/**
 * Reading callgrind's dumps of a Node process: instructions by function,
 * JavaScript included. Callgrind knows the native symbols; the code V8
 * compiles at run time it cannot name, and counts it under whatever native
 * function ran last. Dumped with `--dump-instr=yes`, each cost line carries
 * its instruction address, and V8's `--perf-basic-prof` map (one line per
 * code object: start, size, name) names those addresses, its builtins
 * included.
 */
import { readFileSync } from 'node:fs';
import { scriptOrigin } from './origin';

/** Self instructions by address and by callgrind's function name, and the call arcs, of one dump. */
export interface CallgrindDump {
  /** The dump's total instructions (its `summary:` line's first event, Ir). */
  total: number;
  /**
   * Every event of the `summary:` line by its name in `events:` (Ir; with
   * `--cache-sim=yes` the simulated cache misses, I1mr D1mr D1mw ILmr DLmr
   * DLmw and their Dr Dw accesses; with `--branch-sim=yes` Bc Bcm Bi Bim).
   */
  events: Map<string, number>;
  /** `address → (function name → self instructions)`. */
  self: Map<number, Map<string, number>>;
  /** The same for each event other than Ir that parseCallgrind() was asked to keep (`I1mr`: L1 instruction misses). */
  selfOf: Map<string, Map<number, Map<string, number>>>;
  /** `caller address → (callee function name → inclusive instructions)`. */
  calls: Map<number, Map<string, number>>;
}

function add(map: Map<number, Map<string, number>>, address: number, name: string, ir: number): void {
  let byName = map.get(address);
  if (byName === undefined) map.set(address, (byName = new Map()));
  byName.set(name, (byName.get(name) ?? 0) + ir);
}

/**
 * Parses a dump written with `--dump-instr=yes` (positions `instr line`,
 * then one cost per event of the `events:` line, trailing zeros left out).
 * Names are compressed (`(12) name` once, `(12)` after); positions may be
 * relative (`+3`, `-4`) or repeated (`*`); the line after `calls=` is the
 * call's position and inclusive cost, not self cost. Self costs are kept
 * for Ir and for each of `keep` (events of `--cache-sim`/`--branch-sim`).
 */
export function parseCallgrind(text: string, keep: readonly string[] = []): CallgrindDump {
  const fnNames = new Map<string, string>();
  const name = (spec: string): string => {
    const match = /^\((\d+)\)(?: (.*))?$/.exec(spec);
    if (match === null) return spec;
    if (match[2] !== undefined) fnNames.set(match[1]!, match[2]);
    return fnNames.get(match[1]!) ?? '?';
  };
  const dump: CallgrindDump = {
    total: 0,
    events: new Map(),
    self: new Map(),
    selfOf: new Map(keep.map((event) => [event, new Map()])),
    calls: new Map(),
  };
  let eventNames = ['Ir'];
  /** [column of a kept event among the costs, its self map]; set from the `events:` line. */
  let kept: Array<[number, Map<number, Map<string, number>>]> = [];
  let fn = '';
  let callee = '';
  let address = 0;
  let callLine = false;
  for (const line of text.split('\n')) {
    const first = line.charCodeAt(0);
    // Cost lines start with a position: a digit, 0x…, +, - or *.
    if ((first >= 48 && first <= 57) || first === 43 || first === 45 || first === 42) {
      const fields = line.split(' ');
      const position = fields[0]!;
      if (position === '*') {
        // same address as before
      } else if (first === 43 || first === 45) address += Number(position);
      else address = Number(position);
      // fields[1] is the line; the costs follow it.
      const ir = Number(fields[2] ?? 0);
      if (callLine) add(dump.calls, address, callee, ir);
      else {
        add(dump.self, address, fn, ir);
        for (const [column, self] of kept) {
          const cost = Number(fields[2 + column] ?? 0);
          if (cost !== 0) add(self, address, fn, cost);
        }
      }
      callLine = false;
    } else if (line.startsWith('fn=')) fn = name(line.slice(3));
    else if (line.startsWith('cfn=')) callee = name(line.slice(4));
    else if (line.startsWith('calls=')) callLine = true;
    else if (line.startsWith('events: ')) {
      eventNames = line.slice(8).trim().split(/\s+/);
      kept = [...dump.selfOf].flatMap(([event, self]) =>
        eventNames.includes(event) ? [[eventNames.indexOf(event), self] as [number, typeof self]] : [],
      );
    } else if (line.startsWith('summary: ')) {
      const values = line.slice(9).trim().split(/\s+/).map(Number);
      for (const [i, event] of eventNames.entries()) dump.events.set(event, values[i] ?? 0);
      dump.total = values[0] ?? 0;
    }
  }
  return dump;
}

/** V8's `--perf-basic-prof` map: code start, size and name (`JS:*name file:line:col`, `Builtin:…`). */
export class PerfMap {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private readonly names: string[] = [];

  constructor(text: string) {
    // Code space is reused after collections: the last entry for a start wins.
    const byStart = new Map<number, [number, string]>();
    for (const line of text.split('\n')) {
      const space = line.indexOf(' ');
      const second = line.indexOf(' ', space + 1);
      if (space < 0 || second < 0) continue;
      byStart.set(Number.parseInt(line.slice(0, space), 16), [
        Number.parseInt(line.slice(space + 1, second), 16),
        line.slice(second + 1),
      ]);
    }
    for (const start of [...byStart.keys()].sort((a, b) => a - b)) {
      const [size, label] = byStart.get(start)!;
      this.starts.push(start);
      this.ends.push(start + size);
      this.names.push(label);
    }
  }

  static read(path: string): PerfMap {
    return new PerfMap(readFileSync(path, 'utf8'));
  }

  /** The code object at `address`, if V8 logged one. */
  nameAt(address: number): string | undefined {
    let low = 0;
    let high = this.starts.length - 1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      if (this.starts[mid]! <= address) low = mid + 1;
      else high = mid - 1;
    }
    return high >= 0 && address < this.ends[high]! ? this.names[high] : undefined;
  }
}

/**
 * One name per function whatever tier ran it: V8 marks its code kinds
 * (`JS:*` TurboFan, `JS:+` Maglev, `JS:^` Sparkplug, `JS:~` bytecode), and
 * a function's cost moves between them from run to run.
 */
function functionName(label: string): string {
  return label.replace(/^JS:[*+^~]'?/, 'JS:');
}

/**
 * Self instructions by function (or self counts of `event`, one parseCallgrind() kept): V8's code by the perf
 * map, the rest by callgrind's own names.
 */
export function selfByFunction(dump: CallgrindDump, map: PerfMap, event = 'Ir'): Map<string, number> {
  const out = new Map<string, number>();
  const self = event === 'Ir' ? dump.self : dump.selfOf.get(event);
  if (self === undefined) throw new Error(`the dump was not parsed with its ${event} kept`);
  for (const [address, byName] of self) {
    const jit = map.nameAt(address);
    for (const [fn, ir] of byName) {
      const label = jit === undefined ? fn : functionName(jit);
      out.set(label, (out.get(label) ?? 0) + ir);
    }
  }
  return out;
}

/** Who calls functions whose callgrind name matches `callee` (`Builtins_LoadIC_Megamorphic`), by caller, inclusive. */
export function callersOf(dump: CallgrindDump, map: PerfMap, callee: RegExp): Map<string, number> {
  const out = new Map<string, number>();
  for (const [address, byCallee] of dump.calls) {
    for (const [name, ir] of byCallee) {
      if (!callee.test(name)) continue;
      const label = functionName(map.nameAt(address) ?? '(native)');
      out.set(label, (out.get(label) ?? 0) + ir);
    }
  }
  return out;
}

const TIER: Record<string, string> = { '*': 'TurboFan', '+': 'Maglev', '^': 'Sparkplug', '~': 'bytecode' };

/**
 * Where a function of selfByFunction()'s (or a raw perf-map label) comes
 * from: JavaScript by package (`@opentelemetry/sdk-trace-base`, `node`,
 * `@infersignal/core`) and, for a raw label, the tier that ran it; V8's
 * builtins with the interpreter's bytecode handlers apart (code run cold,
 * before any compiler took it, runs there); native code by library. A few
 * instructions in each of forty SDK functions hide in a by-function list
 * and add up here.
 */
export function originOf(label: string): string {
  if (label.startsWith('JS:')) {
    const tier = TIER[label[3]!];
    const origin = scriptOrigin(label.slice(label.lastIndexOf(' ') + 1));
    return tier === undefined ? origin : `${origin} (${tier})`;
  }
  // The perf map's `Builtin:X`, or callgrind's own `Builtins_X` for the embedded ones the map did not log.
  if (/^Builtins?[:_]/.test(label))
    return /Handler$|InterpreterEntryTrampoline/.test(label) ? 'V8 interpreter (bytecode handlers)' : 'V8 builtins';
  if (/Scaveng|Marking|MarkCompact|Sweep|Heap::|heap::|Evacuat|RootVisit|PointersUpdating/.test(label))
    return 'V8 garbage collector (C++)';
  if (label.startsWith('v8::')) return 'V8 runtime (C++)';
  if (/^(node::|uv_|uv__)/.test(label)) return 'Node and libuv (C++)';
  return 'other native (libc, kernel entry, …)';
}

/** Self instructions by originOf(), tiers apart for JavaScript. */
export function selfByOrigin(dump: CallgrindDump, map: PerfMap): Map<string, number> {
  const out = new Map<string, number>();
  for (const [address, byName] of dump.self) {
    const jit = map.nameAt(address);
    for (const [fn, ir] of byName) {
      const origin = originOf(jit ?? fn);
      out.set(origin, (out.get(origin) ?? 0) + ir);
    }
  }
  return out;
}
