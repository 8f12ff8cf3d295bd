import type { Llama } from 'node-llama-cpp';
import { loadErrorDetail } from './errors';

/**
 * How long a failed load waits for llama.cpp's reason. node-llama-cpp rejects with `Failed to load model`
 * and the log line with the reason arrives asynchronously from llama.cpp's thread, ~1 ms after the
 * rejection on a quiet machine, far later on a busy one; the wait ends as soon as it comes. With the log
 * off (`logLevel` disabled or fatal) no line can come and there is no wait.
 */
const REASON_WAIT_MS = 5000;
const LEVELS_WITHOUT_ERRORS: ReadonlySet<string> = new Set(['disabled', 'fatal']);

/**
 * Tees a Llama instance's logger to read the reason of a failed load from llama.cpp's log, and runs this
 * package's loads on that instance one at a time, so a line belongs to the load that is running. Lines
 * still reach the logger that was set before.
 */
class LoadLog {
  private lines: string[] | null = null;
  private onLine: (() => void) | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly llama: Llama) {
    const previous = llama.logger;
    llama.logger = (level, message) => {
      if (this.lines && (level === 'error' || level === 'fatal')) {
        const detail = loadErrorDetail(message);
        if (detail) {
          this.lines.push(detail);
          this.onLine?.();
        }
      }
      previous(level, message);
    };
  }

  /** Runs `load` after the loads before it; a rejection carries llama.cpp's reason as `detail`. */
  run<T>(load: () => Promise<T>, needsReason: (error: unknown) => boolean): Promise<T> {
    const next = this.queue.then(() => this.capture(load, needsReason));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async capture<T>(load: () => Promise<T>, needsReason: (error: unknown) => boolean): Promise<T> {
    const lines: string[] = [];
    this.lines = lines;
    try {
      return await load();
    } catch (error) {
      if (lines.length === 0 && needsReason(error) && !LEVELS_WITHOUT_ERRORS.has(this.llama.logLevel))
        await this.nextLine();
      throw new LoadFailure(error, lines.at(-1) ?? null);
    } finally {
      this.lines = null;
    }
  }

  private nextLine(): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, REASON_WAIT_MS);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.onLine = () => {
        this.onLine = null;
        done();
      };
    }).finally(() => {
      this.onLine = null;
    });
  }
}

/** A failed load with the reason llama.cpp logged for it (null when none came). */
export class LoadFailure {
  constructor(
    readonly error: unknown,
    readonly detail: string | null,
  ) {}
}

const logs = new WeakMap<Llama, LoadLog>();

export function loadLogOf(llama: Llama): LoadLog {
  let log = logs.get(llama);
  if (!log) logs.set(llama, (log = new LoadLog(llama)));
  return log;
}
