import { InferSignalConfigError, type Monitor, type QueueTracker } from '@infersignal/core';
import { HotSwap, checkOptionKeys, checkQueueOption, resolveQueue } from '@infersignal/core/signals';
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
  const first = await timedLoad(monitor, name, 'load', loader, source);
  const queue = resolveQueue(monitor, options.queue, `tfjs:${name}`, 'options.queue', { concurrency: 1 });
  const leak =
    options.leak === false
      ? null
      : createTensorLeakDetector(monitor, () => tf.memory().numTensors, { ...options.leak, model: name });
  return new TfModel(monitor, name, loader, queue, leak, first);
}

const OPTION_KEYS = ['queue', 'loadOptions', 'leak'];
const ATTRIBUTES = { attributes: { 'infersignal.model.runtime': 'tfjs' } };

function timedLoad<M>(
  monitor: Monitor,
  name: string,
  kind: 'load' | 'reload',
  loader: (source: TfModelSource) => Promise<M>,
  source: TfModelSource,
): Promise<M> {
  return monitor.modelLoad(
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
}

class TfModel<M extends TfModelLike> implements MonitoredTfModel<M> {
  private readonly swap: HotSwap<M>;
  private gen = 1;
  private releasing: Promise<void> | undefined;
  private readonly runOptions: { model: string };

  constructor(
    private readonly monitor: Monitor,
    readonly name: string,
    private readonly loader: (source: TfModelSource) => Promise<M>,
    readonly queue: QueueTracker,
    readonly leak: TensorLeakDetector | null,
    first: M,
  ) {
    this.runOptions = { model: name };
    this.swap = new HotSwap(first, {
      release: (model) => {
        model.dispose();
      },
      onReleaseError: (err) => monitor.internalError('tfjs.dispose', err),
      releasedError: () => new ModelReleasedError(name),
      onSwap: () => {
        this.gen++;
        // The old model's weights leave the tensor count: a step, not a leak.
        this.leak?.reset();
      },
      // Sampled after a retired model's last run has disposed it.
      afterRun: leak ? () => leak.sample() : undefined,
    });
  }

  get model(): M {
    return this.swap.current;
  }
  get generation(): number {
    return this.gen;
  }
  get pending(): number {
    return this.swap.pending;
  }
  get released(): boolean {
    return this.swap.released;
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
    return this.swap.use(fn, (task) => this.queue.run(task, this.runOptions));
  }

  async reload(source: TfModelSource): Promise<void> {
    await this.swap.reload(() => timedLoad(this.monitor, this.name, 'reload', this.loader, source));
  }

  release(): Promise<void> {
    // One promise for every call, like the swap's own.
    this.releasing ??= this.swap.release().then(() => this.leak?.stop());
    return this.releasing;
  }
}
