/**
 * An example server started the way a doc shows it (`pnpm --filter <example> start`, with the doc's
 * variables), on free ports, and the shell lines the doc runs against it, each through bash with only its
 * host and port rewritten. Used by test/docs-commands.test.ts.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export interface Started {
  child: ChildProcess;
  /** Everything it printed so far. */
  output: () => string;
  /** The API's origin, `http://127.0.0.1:<port>`, as it printed it. */
  origin?: string;
  /** Its Prometheus endpoint's origin, as it printed it (the API's own where it serves /metrics itself). */
  metricsOrigin?: string;
  /** Resolves with the exit code (or the signal) once it exited. */
  exited: Promise<number | NodeJS.Signals>;
}

/**
 * Starts `words` (the shown command after bash split it, its `NAME=value` words first) from `cwd` with `env`
 * on top, in a process group of its own (pnpm runs tsx runs node: one signal reaches all of them), and
 * waits until `ready` matches its output, within `timeoutMs`.
 */
export async function startShown(
  words: readonly string[],
  env: Record<string, string>,
  cwd: string,
  ready: RegExp,
  timeoutMs: number,
): Promise<Started> {
  const shownEnv = Object.fromEntries(
    words.filter((word) => /^\w+=/.test(word)).map((word) => [word.split('=')[0], word.slice(word.indexOf('=') + 1)]),
  );
  const [program, ...args] = words.filter((word) => !/^\w+=/.test(word));
  const child = spawn(program, args, {
    cwd,
    env: { ...process.env, ...shownEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? (signal as NodeJS.Signals))),
  );
  const started: Started = { child, output: () => output, exited };
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const check = () => {
      const found = ready.exec(output);
      if (found) finish(() => resolve(found));
    };
    const timer = setTimeout(
      () => finish(() => reject(new Error(`not ready within ${timeoutMs} ms: ${words.join(' ')}\n${output}`))),
      timeoutMs,
    );
    const finish = (then: () => void) => {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      then();
    };
    child.stdout?.on('data', check);
    void exited.then((code) =>
      finish(() => {
        const found = ready.exec(output);
        if (found) resolve(found);
        else reject(new Error(`exited ${code} before it was ready: ${words.join(' ')}\n${output}`));
      }),
    );
  }).catch(async (error: unknown) => {
    await stop(started);
    throw error;
  });
  started.origin = match.groups?.origin;
  started.metricsOrigin = match.groups?.metrics ?? match.groups?.origin;
  return started;
}

/** SIGTERM to its process group, SIGKILL after `graceMs`; resolves with how it exited. */
export async function stop(started: Started, graceMs = 5000): Promise<number | NodeJS.Signals> {
  const group = -(started.child.pid as number);
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(group, name);
    } catch {
      // Already gone.
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), graceMs);
  const code = await started.exited;
  clearTimeout(timer);
  // What the group left behind (none should outlive its leader): gone either way.
  signal('SIGKILL');
  return code;
}

/** What one shell line (or loop) of a doc printed, and the answer's status and content type. */
export interface Answered {
  stdout: string;
  /** bash's exit code (124: `timeout` ended it). */
  code: number;
  /** The last status line's code, and its content type; absent for a loop (its codes are in stdout). */
  status?: number;
  type?: string;
}

/**
 * Runs `script` (the doc's lines) through bash from `cwd`, `localhost:3000` pointed at `origin` and
 * `localhost:9464` at `metricsOrigin`. A single call's response headers are kept with curl's `-D`, which
 * leaves what the command prints as it is.
 */
export function runShown(
  script: string,
  origin: string,
  metricsOrigin: string,
  cwd: string,
  timeoutMs: number,
): Promise<Answered> {
  const headers = join(cwd, `headers-${process.hrtime.bigint()}.txt`);
  const loop = /^for /.test(script);
  let text = script
    .replaceAll(/\blocalhost:3000\b/g, origin.replace(/^http:\/\//, ''))
    .replaceAll(/\blocalhost:9464\b/g, metricsOrigin.replace(/^http:\/\//, ''));
  if (!loop) text = text.replace(/(^|\s)curl\s/, `$1curl -D ${headers} `);
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', text], { cwd, timeout: timeoutMs, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      if (error?.killed) {
        reject(new Error(`${script}: no answer within ${timeoutMs} ms\n${stderr}`));
        return;
      }
      const code = typeof error?.code === 'number' ? error.code : 0;
      const answered: Answered = { stdout, code };
      if (existsSync(headers)) {
        const head = readFileSync(headers, 'utf8');
        rmSync(headers);
        const statuses = [...head.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)];
        answered.status = Number(statuses.at(-1)?.[1]);
        answered.type = /^content-type:\s*(.+?)\s*$/im.exec(head.slice(statuses.at(-1)?.index ?? 0))?.[1];
      }
      resolve(answered);
    });
  });
}

/** Polls `probe` until it holds, every 100 ms, at most `timeoutMs`; the last error or false fails it. */
export async function pollUntil(probe: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await probe()) return;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (${String(last)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
