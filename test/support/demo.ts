/**
 * `pnpm demo` as a child process, the way the script starts it (tsx, the
 * root tsconfig's paths), and the checks that it left no server behind.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEMO_MAIN = join(ROOT, 'examples/demo/src/main.ts');
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the demo the way `pnpm demo` does (tsx, root tsconfig paths); `onStdout` may act on the output as it comes. */
export function runDemo(
  env: Record<string, string>,
  timeoutMs: number,
  onStdout?: (text: string, child: ReturnType<typeof spawn>) => void,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, DEMO_MAIN], {
      cwd: ROOT,
      env: { ...process.env, TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      onStdout?.(stdout, child);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`demo did not finish within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export function serverPid(stdout: string): number {
  const match = /\(pid (\d+), metrics http:\/\/127\.0\.0\.1:\d+\/metrics/.exec(stdout);
  expect(match, stdout).not.toBeNull();
  return Number(match![1]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The server gets up to its shutdown grace to exit after the demo did. */
export async function gone(pid: number, withinMs = 6000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return !alive(pid);
}
