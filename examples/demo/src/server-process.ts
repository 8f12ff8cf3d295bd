/**
 * Runs the fastify-onnx example as a child process. A child rather than an
 * in-process server: on a 2-core machine the load generator's CPU would
 * otherwise land on the server's event loop and distort the very signals
 * the demo shows (event-loop delay, service time, utilization).
 *
 * The child reports `{ type: 'ready', url, metricsUrl, … }` over IPC and
 * exits when the IPC channel closes, so even a demo killed with SIGKILL
 * leaves no server behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ThresholdsInput } from '@infersignal/core';

const SERVER_MAIN = fileURLToPath(new URL('../../fastify-onnx/src/main.ts', import.meta.url));
const ROOT_TSCONFIG = fileURLToPath(new URL('../../../tsconfig.json', import.meta.url));
/** Lines of server output kept for a failure report. */
const MAX_LINES = 200;

interface ServerInfo {
  url: string;
  metricsUrl: string;
  /** Capacity of the server's `infer` queue. */
  inferCapacity: number;
  /** Median model run time of one /v1/infer batch, measured by the server at start (s). */
  runSeconds: number;
  pid: number;
}

export interface ServerProcess {
  readonly info: ServerInfo;
  /** The server's recent output (its alert lines among them). */
  output(): string[];
  /** Asks the server to shut down, then kills it if it has not exited within `graceMs`. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  thresholds?: ThresholdsInput;
  /** Extra environment for the server (ROWS, QUEUE_SECONDS …). */
  env?: Record<string, string>;
  /** Give up when the server has not reported ready within this time (default 30 s). */
  readyTimeoutMs?: number;
}

export class ServerStartError extends Error {
  override readonly name = 'ServerStartError';
  constructor(
    message: string,
    readonly output: string[],
  ) {
    super(message);
  }
}

/** What the server sends over IPC (see examples/fastify-onnx/src/main.ts). */
type ServerMessage = ({ type: 'ready' } & Partial<ServerInfo>) | { type: 'error'; message?: string };

function tsxLoader(): string {
  // tsx is the workspace root's dev dependency; resolved from here, it is found by walking up.
  return pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
}

/** Starts the server (ports chosen by the OS, loopback only) and waits for it to report ready. */
export function spawnServer(options: SpawnOptions = {}): Promise<ServerProcess> {
  const lines: string[] = [];
  const keep = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line === '') continue;
      lines.push(line);
      if (lines.length > MAX_LINES) lines.shift();
    }
  };
  const child: ChildProcess = spawn(process.execPath, ['--import', tsxLoader(), SERVER_MAIN], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: ROOT_TSCONFIG,
      HOST: '127.0.0.1',
      PORT: '0',
      METRICS_PORT: '0',
      THRESHOLDS: options.thresholds ? JSON.stringify(options.thresholds) : '',
      ...options.env,
    },
  });
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);

  let exited = child.exitCode !== null;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 5000): Promise<void> => {
    stopping ??= (async () => {
      if (exited) return;
      // Closing the IPC channel is the child's signal to shut down; SIGTERM does the same.
      if (child.connected) child.disconnect();
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exit;
      clearTimeout(timer);
    })();
    return stopping;
  };

  return new Promise<ServerProcess>((resolve, reject) => {
    let settled = false;
    const fail = (message: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop(1000).then(() => reject(new ServerStartError(message, [...lines])));
    };
    const timer = setTimeout(
      () => fail(`the server did not report ready within ${(options.readyTimeoutMs ?? 30_000) / 1000} s`),
      options.readyTimeoutMs ?? 30_000,
    );
    child.once('error', (error) => fail(`could not start the server: ${error.message}`));
    child.once('exit', (code, signal) => fail(`the server exited during start-up (${signal ?? `code ${code}`})`));
    child.on('message', (message: unknown) => {
      const m = message as ServerMessage | undefined;
      if (m?.type === 'error') return fail(`the server failed to start: ${m.message}`);
      if (m?.type !== 'ready') return;
      if (!m.url || !m.metricsUrl) return fail('the server started without a Prometheus endpoint');
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        info: {
          url: m.url,
          metricsUrl: m.metricsUrl,
          inferCapacity: m.inferCapacity ?? 0,
          runSeconds: m.runSeconds ?? 0,
          pid: m.pid ?? child.pid ?? 0,
        },
        output: () => [...lines],
        stop,
      });
    });
  });
}
