/**
 * The base every runtime wrapper (ONNX, TF.js, llama.cpp …) is built on: the load timed as core's
 * `model_load`, reloads one at a time, the hot swap (runs keep the slot they started on, a retired slot is
 * closed after its last run), the drain on release, and one shape of load and released errors naming the
 * runtime. A wrapper supplies a ModelRuntime, which says how to open and close a model, and keeps only its
 * runtime's calls, options and memory sources.
 */
import { brand } from './brand';
import { HotSwap } from './model-swap';
import type { LoadOptions, Monitor } from './types';

/** One load as the runtime sees it. */
interface ModelLoad {
  readonly model: string;
  readonly kind: 'load' | 'reload';
  /** 1 for the first load, +1 per successful reload. */
  readonly generation: number;
}

/** What a runtime wrapper implements: how to open a model, how to free it, and the hooks it needs. */
export interface ModelRuntime<S, Src> {
  /** The runtime as errors name it (`ONNX` gives `Failed to load ONNX model "m": …`). */
  readonly name: string;
  /** The `monitor.internalError` source of a failing `close` (e.g. `onnx.release`). */
  readonly closeErrorSource: string;
  /** Load span attributes (sizes, providers; never tensor data), read before the timed part. */
  attributes?(source: Src, load: ModelLoad): LoadOptions['attributes'] | Promise<LoadOptions['attributes']>;
  /**
   * Load span attributes known only once `open` succeeded (what the runtime resolved to: device, dtype), added
   * to the load span; a throw is counted as an internal error, never thrown into the load.
   */
  resultAttributes?(slot: S, load: ModelLoad): LoadOptions['attributes'];
  /** Opens the model; this is the timed part. A throw that is not a ModelLoadError goes through `loadError`. */
  open(source: Src, load: ModelLoad): Promise<S>;
  /** Frees a slot: a retired one after its last run, the serving one at release. Errors are counted, never thrown. */
  close(slot: S): void | Promise<void>;
  /** The error a failed load throws (a ModelLoadError subclass with the runtime's reason); default reason `unknown`. */
  loadError?(error: unknown, load: ModelLoad): ModelLoadError;
  /** The error runs and reloads get after release (a ModelReleasedError subclass); default a ModelReleasedError. */
  releasedError?(model: string): ModelReleasedError;
  /** After a swap, once the old slot is retired (and closed if idle). */
  swapped?(next: S, old: S): void;
  /** After each run, once a retired slot whose last run it was has been closed. */
  afterRun?(): void;
}

/** The first line of an error's message (or of `String(value)`), trimmed: runtimes put stack-like detail below. */
export function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.trim().split('\n')[0] ?? '';
}

const MAX_MESSAGE = 300;

export interface ModelLoadErrorInit<R extends string> {
  /** The runtime as ModelRuntime.name gives it. */
  runtime: string;
  model: string;
  kind: 'load' | 'reload';
  /** Why, as the runtime classifies it (default `unknown`). */
  reason?: R;
  /** The reason in words (`the model file does not exist`). */
  explanation?: string;
  /** The runtime's own line, when it gave a better one than the error (a log line, a cleaned message). */
  detail?: string | null;
  cause: unknown;
}

/**
 * A model load or reload failed. Thrown after core recorded the `error` load outcome; the runtime's own
 * error is `cause`. Each wrapper throws a subclass of its own name, so `instanceof` this class catches a
 * failed load of any runtime.
 */
export class ModelLoadError<R extends string = string> extends Error {
  override readonly name: string = 'ModelLoadError';
  readonly runtime: string;
  readonly model: string;
  readonly kind: 'load' | 'reload';
  readonly reason: R;
  readonly detail: string | null;

  constructor(init: ModelLoadErrorInit<R>) {
    let text = init.detail ?? messageOf(init.cause);
    if (text.length > MAX_MESSAGE) text = `${text.slice(0, MAX_MESSAGE)}…`;
    const why = init.explanation ? `${init.explanation} (${text})` : text;
    super(`Failed to ${init.kind} ${init.runtime} model "${init.model}": ${why}`, { cause: init.cause });
    this.runtime = init.runtime;
    this.model = init.model;
    this.kind = init.kind;
    this.reason = init.reason ?? ('unknown' as R);
    this.detail = init.detail ?? null;
  }
}
// `instanceof` holds for instances made by the other build (ESM / CommonJS) of core too.
brand(ModelLoadError, 'ModelLoadError');

/** A run or reload after `release()`. */
export class ModelReleasedError extends Error {
  override readonly name: string = 'ModelReleasedError';
  readonly runtime: string;
  readonly model: string;

  constructor(init: { runtime: string; model: string }) {
    super(`${init.runtime} model "${init.model}" was released`);
    this.runtime = init.runtime;
    this.model = init.model;
  }
}
brand(ModelReleasedError, 'ModelReleasedError');

/**
 * A loaded model and its lifecycle: load → reload (one at a time, the old slot serves until the new one is
 * in) → hot swap → release (new runs refused, accepted ones drained, every slot closed). Made by
 * `ModelHost.load`, which performs the first load, so a host always has a slot.
 */
export class ModelHost<S, Src = unknown> {
  private readonly swap: HotSwap<S>;
  private gen = 1;
  private releasing: Promise<void> | null = null;
  private readonly stops: Array<() => unknown> = [];

  /** Loads the first slot (kind `load`, generation 1), timed as `model_load`; a failure throws its ModelLoadError. */
  static async load<S, Src>(
    monitor: Monitor,
    model: string,
    runtime: ModelRuntime<S, Src>,
    source: Src,
  ): Promise<ModelHost<S, Src>> {
    const first = await timedLoad(monitor, runtime, source, { model, kind: 'load', generation: 1 });
    return new ModelHost(monitor, model, runtime, first);
  }

  private constructor(
    private readonly monitor: Monitor,
    readonly model: string,
    private readonly runtime: ModelRuntime<S, Src>,
    first: S,
  ) {
    this.swap = new HotSwap(first, {
      release: (slot) => runtime.close(slot),
      onReleaseError: (error) => monitor.internalError(runtime.closeErrorSource, error),
      releasedError: () => runtime.releasedError?.(model) ?? new ModelReleasedError({ runtime: runtime.name, model }),
      onSwap: (next, old) => {
        this.gen++;
        runtime.swapped?.(next, old);
      },
      afterRun: runtime.afterRun && (() => runtime.afterRun?.()),
    });
  }

  /** The slot new runs start on. */
  get current(): S {
    return this.swap.current;
  }
  /** Generation of the serving slot: 1 for the first load, +1 per successful reload. */
  get generation(): number {
    return this.gen;
  }
  /** Runs accepted and not yet settled (queued or running). */
  get pending(): number {
    return this.swap.pending;
  }
  get released(): boolean {
    return this.swap.released;
  }

  /**
   * Accepts a run now and runs `fn` on the slot serving when it starts; `schedule` defers the start (a
   * queue's `run`), so a run queued before a swap runs on the new slot. Rejects once released.
   */
  use<T>(fn: (slot: S) => T | Promise<T>, schedule?: (task: () => Promise<T>) => Promise<T>): Promise<T> {
    return this.swap.use(fn, schedule);
  }

  /**
   * Loads `source` (kind `reload`) while the current slot serves, then swaps. Reloads run one at a time,
   * so each reads the generation the one before it left. A failure keeps the old slot and throws its
   * ModelLoadError; a reload that ends after `release()` closes its slot and rejects.
   */
  reload(source: Src): Promise<S> {
    return this.swap.reload(() =>
      timedLoad(this.monitor, this.runtime, source, { model: this.model, kind: 'reload', generation: this.gen + 1 }),
    );
  }

  /** Runs `stop` once after release has closed the last slot (memory sources, detectors, owned handles). */
  onReleased(stop: () => unknown): void {
    this.stops.push(stop);
  }

  /** Refuses new runs and reloads, waits for accepted ones, closes the slots, then runs the `onReleased` stops. Idempotent. */
  release(): Promise<void> {
    this.releasing ??= this.swap.release().then(async () => {
      for (const stop of this.stops) {
        try {
          await stop();
        } catch (error) {
          this.monitor.internalError(this.runtime.closeErrorSource, error);
        }
      }
    });
    return this.releasing;
  }
}

async function timedLoad<S, Src>(
  monitor: Monitor,
  runtime: ModelRuntime<S, Src>,
  source: Src,
  load: ModelLoad,
): Promise<S> {
  const attributes = await runtime.attributes?.(source, load);
  return monitor.modelLoad(
    load.model,
    load.kind,
    async () => {
      try {
        return await runtime.open(source, load);
      } catch (error) {
        // Thrown inside the timed loader, so core records the `error` outcome with this error's type.
        if (error instanceof ModelLoadError) throw error;
        throw (
          runtime.loadError?.(error, load) ??
          new ModelLoadError({ runtime: runtime.name, model: load.model, kind: load.kind, cause: error })
        );
      }
    },
    {
      attributes,
      resultAttributes: runtime.resultAttributes && ((slot) => runtime.resultAttributes?.(slot as S, load) ?? {}),
    },
  );
}
