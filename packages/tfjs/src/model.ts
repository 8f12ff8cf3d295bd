import { InferSignalConfigError, type Monitor, type QueueTracker } from '@infersignal/core';
import {
  ModelHost,
  checkOptionKeys,
  checkQueueOption,
  resolveQueue,
  type ModelRuntime,
} from '@infersignal/core/signals';
import type { Tensor } from '@tensorflow/tfjs-core';
import { ModelLoadError, ModelReleasedError } from './errors';
import { createTensorLeakDetector, leakSettings, type TensorLeakDetector } from './leak';
import type {
  ModelInput,
  ModelOutput,
  MonitoredTfModel,
  TfModelLike,
  TfModelOptions,
  TfModelSource,
  TfRuntime,
} from './types';

/** Loads a layers model (`tf.loadLayersModel`) timed by `monitor.modelLoad`, served through a core queue. */
export function loadLayersModel(
  monitor: Monitor,
  name: string,
  tf: TfRuntime,
  source: TfModelSource,
  options: TfModelOptions = {},
): Promise<MonitoredTfModel> {
  const load = tf?.loadLayersModel;
  if (typeof load !== 'function')
    throw new InferSignalConfigError('tf', 'tf.loadLayersModel is missing (pass @tensorflow/tfjs or tfjs-node)');
  return loadModel(monitor, name, tf, (src) => load.call(tf, src, options.loadOptions), source, options);
}

/** Loads a graph model (`tf.loadGraphModel`) timed by `monitor.modelLoad`, served through a core queue. */
export function loadGraphModel(
  monitor: Monitor,
  name: string,
  tf: TfRuntime,
  source: TfModelSource,
  options: TfModelOptions = {},
): Promise<MonitoredTfModel> {
  const load = tf?.loadGraphModel;
  if (typeof load !== 'function')
    throw new InferSignalConfigError('tf', 'tf.loadGraphModel is missing (pass @tensorflow/tfjs or tfjs-node)');
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
  // Checked before the load, so a bad option does not cost one.
  checkOptionKeys(options, OPTION_KEYS);
  checkQueueOption(options.queue);
  if (options.leak !== undefined && options.leak !== false) leakSettings(options.leak, 'options.leak');
  let leak: TensorLeakDetector | null = null;
  const host = await ModelHost.load(
    monitor,
    name,
    tfRuntime(loader, () => leak),
    source,
  );
  const queue = resolveQueue(monitor, options.queue, `tfjs:${name}`, 'options.queue', { concurrency: 1 });
  if (options.leak !== false) {
    const detector = createTensorLeakDetector(monitor, () => tf.memory().numTensors, { ...options.leak, model: name });
    host.onReleased(() => detector.stop());
    leak = detector;
  }
  return new TfModel(host, queue, leak);
}

const OPTION_KEYS = ['queue', 'loadOptions', 'leak'];
const ATTRIBUTES = { 'infersignal.model.runtime': 'tfjs' };

/** How TF.js loads and frees a model; the load, swap and release lifecycle is core's ModelHost. */
function tfRuntime<M extends TfModelLike>(
  loader: (source: TfModelSource) => Promise<M>,
  leak: () => TensorLeakDetector | null,
): ModelRuntime<M, TfModelSource> {
  return {
    name: 'TF.js',
    closeErrorSource: 'tfjs.dispose',
    attributes: () => ATTRIBUTES,
    open: (source) => loader(source),
    close: (model) => {
      model.dispose();
    },
    loadError: (error, { model, kind }) => new ModelLoadError(model, kind, { cause: error }),
    releasedError: (model) => new ModelReleasedError(model),
    // The old model's weights leave the tensor count: a step, not a leak.
    swapped: () => leak()?.reset(),
    // Sampled after a retired model's last run has disposed it.
    afterRun: () => leak()?.sample(),
  };
}

class TfModel<M extends TfModelLike> implements MonitoredTfModel<M> {
  readonly name: string;
  private readonly runOptions: { model: string };

  constructor(
    private readonly host: ModelHost<M, TfModelSource>,
    readonly queue: QueueTracker,
    readonly leak: TensorLeakDetector | null,
  ) {
    this.name = host.model;
    this.runOptions = { model: host.model };
  }

  get model(): M {
    return this.host.current;
  }
  get generation(): number {
    return this.host.generation;
  }
  get pending(): number {
    return this.host.pending;
  }
  get released(): boolean {
    return this.host.released;
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
      if (!m.executeAsync)
        throw new TypeError(`TF.js model "${this.name}" has no executeAsync() (a layers model? use predict)`);
      return m.executeAsync(inputs, outputs);
    });
  }

  /** Queued call on whichever model serves when the call starts. */
  private call<T>(fn: (model: M) => T | Promise<T>): Promise<T> {
    return this.host.use(fn, (task) => this.queue.run(task, this.runOptions));
  }

  async reload(source: TfModelSource): Promise<void> {
    await this.host.reload(source);
  }

  release(): Promise<void> {
    return this.host.release();
  }
}
