/**
 * The fidelity suite reads a server's main thread from /proc (schedstat):
 * time on a CPU and time runnable but waiting for one. Checked against a
 * child that spins for a known time and one that sleeps.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { threadSchedNs } from '../fidelity/suite';

const busyMs = (sched: { onCpuNs: number; waitNs: number }): number => (sched.onCpuNs + sched.waitNs) / 1e6;

/** A child that spins for `spinMs`, then waits for its stdin to close. */
async function child(spinMs: number) {
  const code = `const end = Date.now() + ${spinMs}; while (Date.now() < end); process.stdout.write('done'); process.stdin.resume();`;
  const proc = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'ignore'] });
  await once(proc.stdout!, 'data');
  return proc;
}

describe.runIf(existsSync('/proc/self/task'))('threadSchedNs', () => {
  it("counts a spinning thread's time, on a CPU or waiting for one; an idle one adds nothing", async () => {
    const start = process.hrtime.bigint();
    const spinner = await child(400);
    const sinceStartMs = Number(process.hrtime.bigint() - start) / 1e6;
    try {
      const spun = threadSchedNs(spinner.pid)!;
      // The 400 ms spin, plus start-up, never more than the child has existed.
      expect(busyMs(spun)).toBeGreaterThanOrEqual(400);
      expect(busyMs(spun)).toBeLessThanOrEqual(sinceStartMs + 5);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const idle = threadSchedNs(spinner.pid)!;
      expect(busyMs(idle) - busyMs(spun)).toBeLessThan(100);
    } finally {
      spinner.kill();
      await once(spinner, 'exit');
    }
  });

  it('null for a process that is not there', () => {
    expect(threadSchedNs(2 ** 22 + 1)).toBeNull();
    expect(threadSchedNs(undefined)).toBeNull();
  });
});
