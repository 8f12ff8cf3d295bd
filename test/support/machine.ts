import { readFileSync } from 'node:fs';

/** Milliseconds this thread has spent runnable but waiting for a CPU (Linux's schedstat); null elsewhere. */
function runQueueWaitMs(): number | null {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return null;
  }
}

/**
 * Watches how long the machine keeps this thread off its CPUs at a stretch,
 * every `everyMs`. A test told in real time in tens of milliseconds holds
 * its story only while no such wait rivals its time scale; it asks
 * `longestMs()` before judging the order of events. Where the kernel does
 * not tell (no /proc), it reports 0.
 */
export function watchCpuWaits(everyMs = 5): { longestMs(): number; stop(): void } {
  let last = runQueueWaitMs();
  let longest = 0;
  const timer = setInterval(() => {
    const now = runQueueWaitMs();
    if (now !== null && last !== null) longest = Math.max(longest, now - last);
    last = now;
  }, everyMs);
  return {
    longestMs: () => longest,
    stop: () => clearInterval(timer),
  };
}

/**
 * Runs `fn`; returns how long it took and how much of that the machine kept
 * this thread waiting for a CPU (0 where the kernel does not tell): a bound
 * on the code's own time applies to the difference.
 */
export async function timed(fn: () => Promise<unknown>): Promise<{ ms: number; waitedMs: number }> {
  const waitedBefore = runQueueWaitMs();
  const t0 = performance.now();
  await fn();
  const ms = performance.now() - t0;
  const waitedAfter = runQueueWaitMs();
  return { ms, waitedMs: waitedBefore === null || waitedAfter === null ? 0 : waitedAfter - waitedBefore };
}
