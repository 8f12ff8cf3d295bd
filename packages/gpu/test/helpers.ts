import { copyFileSync, chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const GiB = 2 ** 30;
export const MiB = 2 ** 20;

/** A monitor on a real SDK MeterProvider, with a manual clock and manual detector ticks. */
export { testMonitor as setupMonitor } from '../../../test/support/monitor';

/** A logger that keeps what it is told. */
export function recordingLogger() {
  const messages: string[] = [];
  return { messages, logger: { warn: (m: string) => void messages.push(m) } };
}

export interface FakeDevice {
  uuid: string;
  total: number;
  free: number;
  used: number;
  reserved?: number;
  util?: number;
  /** [pid, usedGpuMemory bytes | 'na'] */
  procs?: [number, number | 'na'][];
  /** Return codes per call: handle, uuid, memory, memory_v2, util, procs, procs_first. */
  rc?: Record<string, number>;
}

export interface FakeNvmlConfig {
  devices: FakeDevice[];
  rc?: { init?: number; count?: number };
  static?: boolean;
}

/** Writes the file the fake NVML reads on every call (path in FAKE_NVML_CONFIG). */
export function writeNvmlConfig(path: string, config: FakeNvmlConfig): void {
  const lines = [`count=${config.devices.length}`];
  if (config.rc?.init !== undefined) lines.push(`rc.init=${config.rc.init}`);
  if (config.rc?.count !== undefined) lines.push(`rc.count=${config.rc.count}`);
  if (config.static) lines.push('static=1');
  config.devices.forEach((d, i) => {
    lines.push(
      `dev${i}.uuid=${d.uuid}`,
      `dev${i}.total=${d.total}`,
      `dev${i}.free=${d.free}`,
      `dev${i}.used=${d.used}`,
    );
    if (d.reserved !== undefined) lines.push(`dev${i}.reserved=${d.reserved}`);
    if (d.util !== undefined) lines.push(`dev${i}.util=${d.util}`);
    for (const [pid, bytes] of d.procs ?? []) lines.push(`dev${i}.proc=${pid}:${bytes}`);
    for (const [call, rc] of Object.entries(d.rc ?? {})) lines.push(`dev${i}.rc.${call}=${rc}`);
  });
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/**
 * A temp dir, removed by the returned function. Retried: a fake nvidia-smi
 * spawned just before its sampler closed may still append to calls.log there
 * (on a busy machine it ran late, and rmdir failed with ENOTEMPTY).
 */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }) };
}

const FAKE_SMI = fileURLToPath(new URL('./fake-nvidia-smi/nvidia-smi', import.meta.url));

/** Copies the fake nvidia-smi into `dir` (executable); its CSV answers are files next to it. */
export function installFakeNvidiaSmi(dir: string): string {
  const path = join(dir, 'nvidia-smi');
  copyFileSync(FAKE_SMI, path);
  chmodSync(path, 0o755);
  return path;
}

/** PIDs that do not exist in this PID namespace: how host PIDs look from inside a container. */
export function foreignPids(n: number): number[] {
  const out: number[] = [];
  for (let pid = 4_194_000; out.length < n && pid > 1_000_000; pid--) if (!existsSync(`/proc/${pid}`)) out.push(pid);
  return out;
}
