/**
 * Hot-swappable model slot shared by the runtime adapters (ONNX sessions, TF.js models): runs use whichever
 * slot serves when they start, a reload swaps a new slot in without waiting for them, and a retired slot is
 * released only after the last run on it ends. Adapters keep their loading, errors and metrics; this keeps
 * the counting.
 */
export interface HotSwapOptions<S> {
  /** Frees a slot (dispose the model, release the session). Called once per slot; errors go to `onReleaseError`. */
  release(slot: S): void | Promise<void>;
  /** Where a failing `release` goes (e.g. `monitor.internalError`); never thrown into a run. */
  onReleaseError(err: unknown): void;
  /** The error a run or reload gets once `release()` has been called. */
  releasedError(): Error;
  /** After a swap, once the old slot is retired (and released if idle). */
  onSwap?(next: S, old: S): void;
  /** After each run ends on its slot, once a retired slot whose last run it was has been released. */
  afterRun?(): void;
}

interface Entry<S> {
  slot: S;
  inFlight: number;
  retired: boolean;
}

export class HotSwap<S> {
  private entry: Entry<S>;
  private accepted = 0;
  private closing = false;
  private releasing: Promise<void> | null = null;
  private onDrained: (() => void) | null = null;
  private reloads: Promise<unknown> = Promise.resolve();
  private readonly releases = new Set<Promise<void>>();

  constructor(
    initial: S,
    private readonly options: HotSwapOptions<S>,
  ) {
    this.entry = { slot: initial, inFlight: 0, retired: false };
  }

  /** The slot new runs start on. */
  get current(): S {
    return this.entry.slot;
  }
  /** Runs accepted and not yet settled (queued or running). */
  get pending(): number {
    return this.accepted;
  }
  get released(): boolean {
    return this.closing;
  }

  /**
   * Accepts a run now and runs `fn` on the slot current when it starts. `schedule` defers the start (a queue);
   * a run scheduled before a swap starts on the new slot. Rejects with `releasedError()` once released.
   */
  use<T>(fn: (slot: S) => T | Promise<T>, schedule?: (task: () => Promise<T>) => Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(this.options.releasedError());
    this.accepted++;
    let result: Promise<T>;
    try {
      result = schedule ? schedule(() => this.runOnCurrent(fn)) : this.runOnCurrent(fn);
    } catch (err) {
      this.settled();
      return Promise.reject(err);
    }
    return result.finally(() => this.settled());
  }

  private async runOnCurrent<T>(fn: (slot: S) => T | Promise<T>): Promise<T> {
    const entry = this.entry;
    entry.inFlight++;
    try {
      return await fn(entry.slot);
    } finally {
      entry.inFlight--;
      if (entry.retired && entry.inFlight === 0) this.free(entry.slot);
      this.options.afterRun?.();
    }
  }

  private settled(): void {
    this.accepted--;
    if (this.accepted === 0 && this.onDrained) this.onDrained();
  }

  /**
   * Loads a new slot and swaps it in. Reloads run one at a time (so generations stay ordered); a failed load
   * keeps the old slot; a load that finishes after `release()` frees the new slot and rejects.
   */
  reload(load: () => Promise<S>): Promise<S> {
    if (this.closing) return Promise.reject(this.options.releasedError());
    const next = this.reloads.then(() => this.swapIn(load));
    this.reloads = next.catch(() => undefined);
    return next;
  }

  private async swapIn(load: () => Promise<S>): Promise<S> {
    const slot = await load();
    if (this.closing) {
      this.free(slot);
      throw this.options.releasedError();
    }
    const old = this.entry;
    this.entry = { slot, inFlight: 0, retired: false };
    this.retire(old);
    this.options.onSwap?.(slot, old.slot);
    return slot;
  }

  private retire(entry: Entry<S>): void {
    entry.retired = true;
    if (entry.inFlight === 0) this.free(entry.slot);
  }

  /** Calls `release` synchronously (so a count taken right after sees it) and tracks it if it is async. */
  private free(slot: S): void {
    let result: void | Promise<void>;
    try {
      result = this.options.release(slot);
    } catch (err) {
      this.options.onReleaseError(err);
      return;
    }
    if (!result || typeof result.then !== 'function') return;
    const done: Promise<void> = Promise.resolve(result)
      .catch((err: unknown) => this.options.onReleaseError(err))
      .finally(() => this.releases.delete(done));
    this.releases.add(done);
  }

  /** Refuses new runs and reloads, waits for accepted runs and pending reloads, then frees the current slot. Idempotent. */
  release(): Promise<void> {
    this.releasing ??= this.drainAndRelease();
    return this.releasing;
  }

  private async drainAndRelease(): Promise<void> {
    this.closing = true;
    await this.reloads;
    if (this.accepted > 0) await new Promise<void>((resolve) => (this.onDrained = resolve));
    this.retire(this.entry);
    await Promise.all([...this.releases]);
  }
}
