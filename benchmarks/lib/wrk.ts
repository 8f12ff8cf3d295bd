/**
 * wrk (https://github.com/wg/wrk; Debian's `wrk` package) as the server
 * suite's load generator: a run of whole seconds, read from its report.
 * Kept apart from load.ts (no suite settings here), so tests can run it.
 */
import { execFile, spawnSync } from 'node:child_process';

/** What the suite reads from the load generator's side of a window. */
export interface WindowLoad {
  p99Ms: number;
  /** Failed requests: connection errors, read/write errors, timeouts, non-2xx answers. */
  errors: number;
}

/** wrk's version (`wrk debian/4.1.0-3+b2`), or undefined when it is not on PATH. */
export function wrkVersion(): string | undefined {
  // `wrk --version` prints its version and usage, and exits 1.
  const run = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (run.error !== undefined) return undefined;
  return /^wrk \S+/.exec(run.stdout ?? '')?.[0] ?? 'wrk';
}

/** One thread, `connections` keep-alive connections, `seconds` whole seconds against `url`. */
export function runWrk(url: string, connections: number, seconds: number): Promise<WindowLoad> {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', url];
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { timeout: (seconds + 30) * 1000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`wrk ${args.join(' ')}: ${error.message}\n${stderr}`));
      else {
        try {
          resolve(parseWrk(stdout));
        } catch (parseError) {
          reject(parseError);
        }
      }
    });
  });
}

/** Reads `wrk --latency`'s report: its 99th percentile, and every failure it counts. */
export function parseWrk(report: string): WindowLoad {
  const p99 = /^\s*99%\s+([\d.]+)(us|ms|s)\s*$/m.exec(report);
  if (!p99) throw new Error(`wrk printed no 99th percentile (was --latency given?):\n${report}`);
  const unitMs = { us: 1e-3, ms: 1, s: 1e3 }[p99[2] as 'us' | 'ms' | 's'];
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(report);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(report);
  const socketErrors = socket ? socket.slice(1).reduce((n, count) => n + Number(count), 0) : 0;
  return { p99Ms: Number(p99[1]) * unitMs, errors: socketErrors + (non2xx ? Number(non2xx[1]) : 0) };
}
