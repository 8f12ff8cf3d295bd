/**
 * Real Prometheus tooling for the tests: find a binary on PATH, spawn it in
 * a temp dir on a free loopback port, wait until it answers, kill it at the
 * end. A missing binary skips the test with a printed reason (CI installs
 * Debian's `prometheus` and `prometheus-alertmanager`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';

export function findBinary(...names: string[]): string | undefined {
  for (const name of names) {
    for (const dir of (process.env.PATH ?? '').split(delimiter)) {
      const file = join(dir, name);
      try {
        accessSync(file, constants.X_OK);
        return file;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** Prints why a test is skipped (vitest shows skipped tests, not why). */
export function skipReason(binary: string, test: string): string {
  const reason = `[rules] skipping "${test}": ${binary} not found on PATH (install Debian's prometheus / prometheus-alertmanager packages)`;
  console.warn(reason);
  return reason;
}

/** A free loopback port (bound, read, released: the race with other processes is small on a test box). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runTool(binary: string, args: string[], cwd?: string): Run {
  const result = spawnSync(binary, args, { cwd, encoding: 'utf8', timeout: 30_000 });
  return { code: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

export interface Daemon {
  readonly process: ChildProcess;
  /** Output so far (for failure messages). */
  log(): string;
  stop(): Promise<void>;
}

/** Starts a long-running binary and resolves once `readyUrl` answers 200 (bounded by timeoutMs). */
export async function startDaemon(
  binary: string,
  args: string[],
  readyUrl: string,
  timeoutMs = 15_000,
): Promise<Daemon> {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const daemon: Daemon = {
    process: child,
    log: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (exited) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${binary} exited during start-up:\n${output}`);
    try {
      const response = await fetch(readyUrl);
      if (response.ok) return daemon;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await daemon.stop();
  throw new Error(`${binary} did not become ready at ${readyUrl} within ${timeoutMs} ms:\n${output}`);
}

/** Polls `check` until it returns a value (not undefined) or the deadline passes. */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined>,
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Alertmanager, then Prometheus, on loopback from the `alertmanager.yml` and `prometheus.yml` already written
 * in `dir` (their data under it too); each waits until ready. Their stops are pushed onto `cleanup`.
 */
export async function startPrometheusAndAlertmanager(
  binaries: { prometheus: string; alertmanager: string },
  dir: string,
  ports: { prometheus: number; alertmanager: number },
  cleanup: Array<() => unknown>,
): Promise<{ prometheus: Daemon; alertmanager: Daemon }> {
  const alertmanager = await startDaemon(
    binaries.alertmanager,
    [
      `--config.file=${join(dir, 'alertmanager.yml')}`,
      `--storage.path=${join(dir, 'am')}`,
      `--web.listen-address=127.0.0.1:${ports.alertmanager}`,
      '--cluster.listen-address=',
    ],
    `http://127.0.0.1:${ports.alertmanager}/-/ready`,
  );
  cleanup.push(() => alertmanager.stop());
  const prometheus = await startDaemon(
    binaries.prometheus,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'prom')}`,
      `--web.listen-address=127.0.0.1:${ports.prometheus}`,
    ],
    `http://127.0.0.1:${ports.prometheus}/-/ready`,
  );
  cleanup.push(() => prometheus.stop());
  return { prometheus, alertmanager };
}
