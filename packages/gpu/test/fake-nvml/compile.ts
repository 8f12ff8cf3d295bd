import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SOURCE = fileURLToPath(new URL('./fake_nvml.c', import.meta.url));

/**
 * Compiles the fake NVML library (fake_nvml.c) with the system C compiler
 * into a fresh temp directory and returns the path of the
 * `libnvidia-ml.so.1` it wrote. `defines` are passed as `-D` flags (e.g.
 * `FAKE_NVML_NO_MEMORY_V2`).
 */
export function compileFakeNvml(defines: readonly string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), 'infersignal-fake-nvml-'));
  const out = join(dir, 'libnvidia-ml.so.1');
  execFileSync('cc', ['-shared', '-fPIC', '-O2', ...defines.map((d) => `-D${d}`), '-o', out, SOURCE], {
    stdio: 'pipe',
  });
  return out;
}

/** Whether a C compiler is on PATH (the fake needs one). */
export function hasCompiler(): boolean {
  try {
    execFileSync('cc', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
