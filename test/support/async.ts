// Timing helpers the adapter tests share: bounded waits, gates, a worker pool.

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `total` jobs with at most `concurrency` at a time. */
export async function pool(total: number, concurrency: number, job: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) await job(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Polls `condition` every few ms, failing after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

/** A promise the test opens by hand. */
export function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** Collects unhandled rejections while `fn` runs. */
export async function withUnhandledRejections(fn: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listener = (reason: unknown): void => {
    seen.push(reason);
  };
  process.on('unhandledRejection', listener);
  try {
    await fn();
    // Give a stray rejection one more turn to surface.
    await sleep(20);
  } finally {
    process.off('unhandledRejection', listener);
  }
  return seen;
}
