import { closeSync, openSync, readSync } from 'node:fs';

/**
 * The calling thread's run-queue wait from Linux's schedstat (`<on CPU ns>
 * <waiting ns> <slices>`), read through one open descriptor into one
 * buffer and parsed from its bytes (the event-loop probe reads it on its
 * firings: no string is made); undefined where the file is missing
 * (another OS, no schedstats).
 */
export function threadQueueReader(): { read(): number; close(): void } | undefined {
  let fd: number;
  try {
    fd = openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    return undefined;
  }
  const buffer = Buffer.alloc(96);
  return {
    read() {
      try {
        const length = readSync(fd, buffer, 0, buffer.length, 0);
        let i = 0;
        while (i < length && buffer[i] !== 0x20) i++;
        let ns = 0;
        let digits = 0;
        for (i++; i < length; i++, digits++) {
          const digit = buffer[i]! - 0x30;
          if (digit < 0 || digit > 9) break;
          ns = ns * 10 + digit;
        }
        return digits > 0 ? ns / 1e6 : Number.NaN;
      } catch {
        return Number.NaN;
      }
    },
    close: () => closeSync(fd),
  };
}
