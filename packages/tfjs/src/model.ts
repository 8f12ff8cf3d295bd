import type { Monitor, QueueTracker } from '@infersignal/core';
import type { Tensor } from '@tensorflow/tfjs-core';
import { ModelLoadError, ModelReleasedError } from './errors';
import { createTensorLeakDetector, type TensorLeakDetector } from './leak';
import type { ModelInput, ModelOutput, MonitoredTfModel, TfModelLike, TfModelOptions, TfModelSource, TfRuntime } from './types';

/** Loads a layers model (`tf.loadLayersModel`) timed by `monitor.modelLoad`, served through a core queue. */
export function loadLayersModel(monitor: Monitor, name: string, tf: TfRuntime, source: TfModelSource, options: TfModelOptions = {}): Promise<MonitoredTfModel> {
  const load = tf.loadLayersModel;
  if (typeof load !== 'function') throw new TypeError('@infersignal/tfjs: tf.loadLayersModel is missing (pass @tensorflow/tfjs or tfjs-node)');
  return loadModel(monitor, name, tf, (src) => load.call(tf, src, options.loadOptions), source, options);
}

/** Loads a graph model (`tf.loadGraphModel`) timed by `monitor.modelLoad`, served through a core queue. */
export function loadGraphModel(monitor: Monitor, name: string, tf: TfRuntime, source: TfModelSource, options: TfModelOptions = {}): Promise<MonitoredTfModel> {
  const load = tf.loadGraphModel;
  if (typeof load !== 'function') throw new TypeError('@infersignal/tfjs: tf.loadGraphModel is missing (pass @tensorflow/tfjs or tfjs-node)');
  return loadModel(monitor, name, tf, (src) => load.call(tf, src, options.loadOptions), source, options);
}

/** Any loader: `loader(source)` is timed (kind `load`, then `reload`), the result served through a core queue. */
export async function loadModel<M extends TfModelLike>(
  monitor: Monitor,
  name: string,
  tf: Pick<TfRuntime, 'memory'>,
  loader: (source: TfModelSource) => Promise<M>,
  source: TfModelSource,
  options: TfModelOptions = {},
): Promise<MonitoredTfModel<M>> {
  const { concurrency } = options;
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) {
    throw new TypeError(`@infersignal/tfjs: options.concurrency must be an integer ≥ 1, got ${String(concurrency)}`);
  }
  const first = await timedLoad(monitor, name, 'load', loader, source);
  const queue =
    options.queue ??
    monitor.queue(options.queueName ?? `tfjs:${name}`, { concurrency: concurrency ?? 1, capacity: options.capacity, maxWaiting: options.maxWaiting });
  const leak = options.leak === false ? null : createTensorLeakDetector(monitor, () => tf.memory().numTensors, { ...options.leak, model: name });
  return new TfModel(monitor, name, loader, queue, leak, first);
}

interface Slot<M> {
  model: M;
  inFlight: number;
  retired: boolean;
}

const ATTRIBUTES = { attributes: { 'infersignal.model.runtime': 'tfjs' } };

async function timedLoad<M>(monitor: Monitor, name: string, kind: 'load' | 'reload', loader: (source: TfModelSource) => Promise<M>, source: TfModelSource): Promise<Slot<M>> {
  const model = await monitor.modelLoad(
    name,
    kind,
    async () => {
      try {
        return await loader(source);
      } catch (err) {
        throw new ModelLoadError(name, kind, { cause: err });
      }
    },
    ATTRIBUTES,
  );
  return { model, inFlight: 0, retired: false };
}

class TfModel<M extends TfModelLike> implements MonitoredTfModel<M> {
  private current: Slot<M>;
  private accepted = 0;
  private closing = false;
  private releasing: Promise<void> | null = null;
  private onDrained: (() => void) | null = null;
  private reloads: Promise<unknown> = Promise.resolve();
  private gen = 1;
  private readonly runOptions: { model: string };

  constructor(
    private readonly monitor: Monitor,
    readonly name: string,
    private readonly loader: (source: TfModelSource) => Promise<M>,
    readonly queue: QueueTracker,
    readonly leak: TensorLeakDetector | null,
    slot: Slot<M>,
  ) {
    this.current = slot;
    this.runOptions = { model: name };
  }

  get model(): M {
    return this.current.model;
  }
  get generation(): number {
    return this.gen;
  }
  get pending(): number {
    return this.accepted;
  }
  get released(): boolean {
    return this.closing;
  }

  predict(inputs: ModelInput, config?: unknown): Promise<ModelOutput> {
    return this.call((m) => m.predict(inputs, config));
  }

  execute(inputs: ModelInput, outputs?: string | string[]): Promise<Tensor | Tensor[]> {
    return this.call((m) => {
      if (!m.execute) throw new TypeError(`TF.js model "${this.name}" has no execute() (a layers model? use predict)`);
      return m.execute(inputs, outputs);
    });
  }

  executeAsync(inputs: ModelInput, outputs?: string | string[]): Promise<Tensor | Tensor[]> {
    return this.call((m) => {
      if (!m.executeAsync) throw new TypeError(`TF.js model "${this.name}" has no executeAsync() (a layers model? use predict)`);
      return m.executeAsync(inputs, outputs);
    });
  }

  /** Queued call on whichever model serves when the call starts. */
  private call<T>(fn: (model: M) => T | Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(new ModelReleasedError(this.name));
    this.accepted++;
    let result: Promise<T>;
    try {
      result = this.queue.run(async () => {
        const slot = this.current;
        slot.inFlight++;
        try {
          return await fn(slot.model);
        } finally {
          slot.inFlight--;
          if (slot.retired && slot.inFlight === 0) this.dispose(slot);
          this.leak?.sample();
        }
      }, this.runOptions);
    } catch (err) {
      this.settled();
      return Promise.reject(err);
    }
    return result.finally(() => this.settled());
  }

  private settled(): void {
    this.accepted--;
    if (this.accepted === 0 && this.onDrained) this.onDrained();
  }

  reload(source: TfModelSource): Promise<void> {
    if (this.closing) return Promise.reject(new ModelReleasedError(this.name));
    const next = this.reloads.then(() => this.swapIn(source));
    this.reloads = next.catch(() => undefined);
    return next;
  }

  private async swapIn(source: TfModelSource): Promise<void> {
    const slot = await timedLoad(this.monitor, this.name, 'reload', this.loader, source);
    if (this.closing) {
      this.dispose(slot);
      throw new ModelReleasedError(this.name);
    }
    const old = this.current;
    this.current = slot;
    this.gen++;
    old.retired = true;
    if (old.inFlight === 0) this.dispose(old);
    // The old model's weights leave the tensor count: a step, not a leak.
    this.leak?.reset();
  }

  private dispose(slot: Slot<M>): void {
    try {
      slot.model.dispose();
    } catch (err) {
      this.monitor.internalError('tfjs.dispose', err);
    }
  }

  release(): Promise<void> {
    this.releasing ??= this.drainAndRelease();
    return this.releasing;
  }

  private async drainAndRelease(): Promise<void> {
    this.closing = true;
    await this.reloads;
    if (this.accepted > 0) await new Promise<void>((resolve) => (this.onDrained = resolve));
    this.current.retired = true;
    if (this.current.inFlight === 0) this.dispose(this.current);
  }
}
