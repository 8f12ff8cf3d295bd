/**
 * The fastify-onnx example server as a child process, as the demo starts it
 * (examples/demo/src/server-process.ts), plus what the suite needs beside
 * it: the server's alert events as they happen. With `ALERTS=1` the server
 * prints each one (`[alert] <signal> <from> -> <to>: <message>`, the message
 * naming its subject); the line reaches the suite over a pipe within
 * milliseconds, while a Prometheus scrape of an overloaded server waits in
 * the same event loop as the requests and sees a level change late.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ThresholdsInput } from '@infersignal/core';
import type { BenchConfig } from '@infersignal/bench';

type AlertLike = Parameters<Parameters<NonNullable<BenchConfig['subscribeAlerts']>>[0]>[0];

const SERVER_MAIN = fileURLToPath(new URL('../examples/fastify-onnx/src/main.ts', import.meta.url));
const ROOT_TSCONFIG = fileURLToPath(new URL('../tsconfig.json', import.meta.url));

export interface AlertServer {
  url: string;
  metricsUrl: string;
  pid: number;
  /** Calls `listener` with each alert the server raises or clears, until the returned function is called. */
  onAlert(listener: (event: AlertLike) => void): () => void;
  stop(): Promise<void>;
}

const ALERT_LINE = /^\[alert\] (\S+) (\w+) -> (\w+): (.*)$/;

/** `capacity WARN on queue "infer", model "m": …` → `{ queue: 'infer', model: 'm' }`; `on this process` → `{}`. */
function labelsOfMessage(message: string): Record<string, string> {
  const on = / on (.*?): /.exec(message);
  const labels: Record<string, string> = {};
  if (!on) return labels;
  for (const match of on[1].matchAll(/([\w.]+) ("(?:[^"\\]|\\.)*")/g))
    labels[match[1]] = JSON.parse(match[2]) as string;
  return labels;
}

/**
 * Stops a server child once however often it is called: SIGTERM, then
 * SIGKILL if it has not exited within 5 s; `exited` settles on its exit.
 */
export function stopper(child: ChildProcess, exited: Promise<void>): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => {
    stopping ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (child.connected) child.disconnect();
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    })();
    return stopping;
  };
}

/** Parses one `[alert]` line of the server's output; null for any other line. */
export function parseAlertLine(line: string): AlertLike | null {
  const match = ALERT_LINE.exec(line);
  if (!match) return null;
  return { signal: match[1], level: match[3], labels: labelsOfMessage(match[4]), message: match[4] };
}

/** A server child started by `startServerChild`: its alert lines, how it ended, its last output. */
export interface ServerChild extends AlertServer {
  /** How the child ended, once it has (code or signal); null while it runs. */
  exit(): string | null;
  /** The last lines the child wrote (stderr included), alert lines excepted. */
  output(): string[];
}

/**
 * Starts `entry` under tsx (the root tsconfig's source aliases) and resolves
 * once it sends `{ type: 'ready', url, metricsUrl }` over IPC; rejects, with
 * its last output, when it exits, reports an error or stays silent first.
 */
export function startServerChild(options: {
  entry: string;
  /** What the child is, for errors ("the fault server"). */
  what: string;
  env: Record<string, string>;
  nodeArgs?: string[];
  readyTimeoutMs: number;
}): Promise<ServerChild> {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', tsx, options.entry], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...process.env, TSX_TSCONFIG_PATH: ROOT_TSCONFIG, ...options.env },
  });
  const listeners = new Set<(event: AlertLike) => void>();
  const tail: string[] = [];
  const keep = (line: string): void => {
    tail.push(line);
    if (tail.length > 40) tail.shift();
  };
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const event = parseAlertLine(line);
      if (event) for (const listener of listeners) listener(event);
      else if (line) keep(line);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => keep(chunk.toString('utf8').trimEnd()));
  let exitText: string | null = null;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exitText = signal ? `killed by ${signal}` : `exit code ${code}`;
      resolve();
    }),
  );
  const stop = stopper(child, exited);
  return new Promise((resolve, reject) => {
    const fail = (message: string): void => {
      clearTimeout(timer);
      void stop().then(() => reject(new Error(`${message}\n${tail.join('\n')}`)));
    };
    const timer = setTimeout(() => fail(`${options.what} did not report ready`), options.readyTimeoutMs);
    let ready = false;
    child.once('exit', (code, signal) => {
      if (!ready) fail(`${options.what} exited during start-up (${signal ?? `code ${code}`})`);
    });
    child.on('message', (message: { type?: string; url?: string; metricsUrl?: string; message?: string }) => {
      if (message?.type === 'error') return fail(`${options.what} failed to start: ${message.message}`);
      if (message?.type !== 'ready' || !message.url || !message.metricsUrl) return;
      clearTimeout(timer);
      ready = true;
      resolve({
        url: message.url,
        metricsUrl: message.metricsUrl,
        pid: child.pid ?? 0,
        onAlert(listener) {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
        exit: () => exitText,
        output: () => [...tail],
        stop,
      });
    });
  });
}

export function startAlertServer(options: {
  thresholds: ThresholdsInput;
  env: Record<string, string>;
  readyTimeoutMs?: number;
}): Promise<AlertServer> {
  return startServerChild({
    entry: SERVER_MAIN,
    what: 'the server',
    env: {
      HOST: '127.0.0.1',
      PORT: '0',
      METRICS_PORT: '0',
      THRESHOLDS: JSON.stringify(options.thresholds),
      ...options.env,
      ALERTS: '1',
    },
    readyTimeoutMs: options.readyTimeoutMs ?? 30_000,
  });
}
