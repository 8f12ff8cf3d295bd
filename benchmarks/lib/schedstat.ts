import { readFileSync } from 'node:fs';

/**
 * The calling thread's scheduler figures (Linux; NaN elsewhere), µs: time on
 * a CPU and time runnable but waiting for one (another thread or process had
 * it).
 */
export function threadSchedule(): { runUs: number; waitUs: number } {
  try {
    const [run, wait] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ');
    return { runUs: Number(run) / 1000, waitUs: Number(wait) / 1000 };
  } catch {
    return { runUs: Number.NaN, waitUs: Number.NaN };
  }
}
