import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The fallback when NVML cannot be loaded: two nvidia-smi queries per
 * sample, run with execFile (async, off the request path, killed past a
 * timeout). A fork costs milliseconds of main-thread time and the child
 * tens of milliseconds of wall time (see benchmarks/gpu.ts), which
 * is why this is only the fallback.
 */

/** Memory figures are MiB with `nounits`. */
const MIB = 1024 * 1024;
/** nvidia-smi's CSV output for a few GPUs and processes is far below this; more is garbage. */
const MAX_OUTPUT_BYTES = 1024 * 1024;

export const GPU_QUERY = [
  '--query-gpu=index,uuid,memory.total,memory.used,memory.free,utilization.gpu',
  '--format=csv,noheader,nounits',
];
// gpu_uuid ties each process to its device (pid,used_memory alone cannot be attributed on a multi-GPU host).
export const APPS_QUERY = ['--query-compute-apps=gpu_uuid,pid,used_memory', '--format=csv,noheader,nounits'];

export interface SmiGpu {
  index: number;
  uuid: string;
  totalBytes: number;
  usedBytes: number;
  freeBytes: number;
  utilization: number | undefined;
}

export interface SmiApp {
  gpuUuid: string;
  pid: number;
  usedBytes: number | undefined;
}

/** Why a query gave no data: the process failed, or printed something that is not the CSV asked for. */
class SmiError extends Error {
  override readonly name = 'SmiError';
  constructor(
    readonly kind: 'exit' | 'timeout' | 'spawn' | 'garbage' | 'closed',
    message: string,
  ) {
    super(message);
  }
}

/** Absolute path of an executable `name` on PATH, or undefined. */
export function findOnPath(name: string, pathEnv: string | undefined = process.env.PATH): string | undefined {
  for (const dir of (pathEnv ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** `[N/A]`, `[Not Supported]`, `[Insufficient Permissions]`: a figure the driver withholds. */
function isWithheld(field: string): boolean {
  return field.startsWith('[') && field.endsWith(']');
}

function integer(field: string): number | undefined {
  return /^\d+$/.test(field) ? Number(field) : undefined;
}

function garbage(what: string, line: string): SmiError {
  return new SmiError('garbage', `unexpected nvidia-smi ${what} output: ${JSON.stringify(line.slice(0, 120))}`);
}

/**
 * Parses `--query-gpu=index,uuid,memory.total,memory.used,memory.free,utilization.gpu`.
 * Any line that is not that CSV rejects the whole output (no partial guesses);
 * a GPU whose memory figures are withheld is left out.
 */
export function parseGpuCsv(text: string): SmiGpu[] {
  const gpus: SmiGpu[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const f = line.split(',').map((s) => s.trim());
    if (f.length !== 6) throw garbage('--query-gpu', line);
    const [indexField, uuid, totalField, usedField, freeField, utilField] = f as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const index = integer(indexField);
    if (index === undefined || !uuid || isWithheld(uuid)) throw garbage('--query-gpu', line);
    const total = integer(totalField);
    const used = integer(usedField);
    const free = integer(freeField);
    const utilization = integer(utilField);
    for (const [value, field] of [
      [total, totalField],
      [used, usedField],
      [free, freeField],
      [utilization, utilField],
    ] as const) {
      if (value === undefined && !isWithheld(field)) throw garbage('--query-gpu', line);
    }
    if (total === undefined || used === undefined || free === undefined) continue;
    gpus.push({
      index,
      uuid,
      totalBytes: total * MIB,
      usedBytes: used * MIB,
      freeBytes: free * MIB,
      utilization: utilization === undefined ? undefined : utilization / 100,
    });
  }
  if (gpus.length === 0) throw new SmiError('garbage', 'nvidia-smi --query-gpu listed no GPU');
  return gpus;
}

/** Parses `--query-compute-apps=gpu_uuid,pid,used_memory`; empty output means no compute process. */
export function parseAppsCsv(text: string): SmiApp[] {
  const apps: SmiApp[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || /^no running (compute )?processes found/i.test(line)) continue;
    const f = line.split(',').map((s) => s.trim());
    if (f.length !== 3) throw garbage('--query-compute-apps', line);
    const [gpuUuid, pidField, usedField] = f as [string, string, string];
    const pid = integer(pidField);
    const used = integer(usedField);
    if (!gpuUuid || pid === undefined || (used === undefined && !isWithheld(usedField)))
      throw garbage('--query-compute-apps', line);
    apps.push({ gpuUuid, pid, usedBytes: used === undefined ? undefined : used * MIB });
  }
  return apps;
}

export interface SmiRun {
  stdout: string;
  /** Main-thread time spent in the synchronous part of spawning (fork + exec setup). */
  spawnMs: number;
}

/**
 * Runs nvidia-smi once; rejects with SmiError on a non-zero exit, a timeout,
 * a spawn failure, or `signal` aborting (the child is killed: a closed
 * sampler leaves no nvidia-smi running behind it).
 */
export function runNvidiaSmi(
  path: string,
  args: readonly string[],
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<SmiRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let spawnMs = 0;
    const child = execFile(
      path,
      args,
      { timeout: timeoutMs, maxBuffer: MAX_OUTPUT_BYTES, encoding: 'utf8', windowsHide: true, signal },
      (error, stdout, stderr) => {
        if (!error) return resolve({ stdout, spawnMs });
        const e = error as NodeJS.ErrnoException & {
          killed?: boolean;
          signal?: string | null;
          code?: number | string | null;
        };
        const detail = String(stderr || stdout || '')
          .trim()
          .slice(0, 200);
        // Checked first: an aborted child is killed too, and reads like a timeout otherwise.
        if (signal?.aborted) reject(new SmiError('closed', 'nvidia-smi was stopped: the sampler closed'));
        else if (e.killed || e.signal === 'SIGTERM')
          reject(new SmiError('timeout', `nvidia-smi did not answer within ${timeoutMs} ms`));
        else if (e.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER')
          reject(new SmiError('garbage', `nvidia-smi printed more than ${MAX_OUTPUT_BYTES} bytes`));
        else if (typeof e.code === 'number')
          reject(new SmiError('exit', `nvidia-smi exited with code ${e.code}${detail ? `: ${detail}` : ''}`));
        else reject(new SmiError('spawn', `nvidia-smi could not run: ${e.message}`));
      },
    );
    spawnMs = performance.now() - started;
    child.stdin?.end();
  });
}
