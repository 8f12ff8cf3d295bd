import { InferSignalConfigError, type Monitor } from '@infersignal/core';
import {
  fieldOrDefault,
  SlidingWindow,
  checkOptionKeys,
  linearFit,
  type Signal,
  type SignalContext,
} from '@infersignal/core/signals';

/** The signal name this detector reports under (not one of core's own signals). */
export const TENSOR_LEAK_SIGNAL = 'tensor_leak';

export interface LeakDetectorOptions {
  /** Model label of the alert. */
  model: string;
  /** Samples (requests) in the window; the slope is judged once it is full. Default 30. */
  windowSize?: number;
  /** Growth of numTensors per request at which the window counts as leaking. Default 0.5. */
  minSlope?: number;
  /** Minimum R² of the linear fit, so a noisy flat count does not trip it. Default 0.8. */
  minR2?: number;
}

export interface TensorLeakDetector {
  /** Record numTensors now (the model wrapper calls this after each request). */
  sample(): void;
  /** Least-squares slope of numTensors per request over the window (0 until full). */
  readonly slope: number;
  readonly leaking: boolean;
  reset(): void;
  /** Takes the detector out of the monitor's `tensorLeak` signal (the model was released). A leak it announced clears. */
  stop(): void;
}

interface LeakSettings {
  windowSize: number;
  minSlope: number;
  minR2: number;
}

const KEYS = ['model', 'windowSize', 'minSlope', 'minR2'];

/** Checks the detector's options (`prefix` is their dotted path); the model wrapper calls it before loading. */
export function leakSettings(options: unknown, prefix = 'options'): LeakSettings {
  checkOptionKeys(options, KEYS, prefix);
  const o = options as Partial<LeakDetectorOptions>;
  const windowSize = o.windowSize ?? 30;
  const minSlope = o.minSlope ?? 0.5;
  const minR2 = o.minR2 ?? 0.8;
  if (!Number.isInteger(windowSize) || windowSize < 3 || windowSize > 100_000)
    throw new InferSignalConfigError(
      `${prefix}.windowSize`,
      `must be an integer in [3, 100000], got ${String(windowSize)}`,
    );
  if (typeof minSlope !== 'number' || !(minSlope > 0) || !Number.isFinite(minSlope))
    throw new InferSignalConfigError(`${prefix}.minSlope`, `must be a number > 0, got ${String(minSlope)}`);
  if (typeof minR2 !== 'number' || !(minR2 >= 0 && minR2 <= 1))
    throw new InferSignalConfigError(`${prefix}.minR2`, `must be in [0, 1], got ${String(minR2)}`);
  return { windowSize, minSlope, minR2 };
}

/**
 * One model's detector: numTensors sampled after requests that should leave
 * the count where it was. A handler that forgets `dispose()` adds the same
 * few tensors per request, a straight line; a balanced one stays flat (it
 * may wobble with concurrent requests, which the R² bound rejects).
 */
class Detector implements TensorLeakDetector {
  // Core's window and least-squares fit; x is the request index (1 "second" per sample), so the slope is tensors per request.
  private readonly window: SlidingWindow;
  private index = 0;
  slope = 0;
  leaking = false;
  readonly labels: Record<string, string>;

  constructor(
    private readonly signal: TensorLeakSignal,
    readonly model: string,
    private readonly numTensors: () => number,
    private readonly settings: LeakSettings,
  ) {
    this.window = new SlidingWindow(settings.windowSize);
    this.labels = { model };
  }

  sample(): void {
    try {
      this.window.push(this.numTensors(), this.index++ * 1000);
      if (this.window.length === this.settings.windowSize) this.judge();
    } catch (err) {
      this.signal.ctx.internalError('tfjs.leak', err);
    }
  }

  private judge(): void {
    const { minSlope, minR2, windowSize } = this.settings;
    const fit = linearFit(this.window);
    this.slope = fit.slope;
    const now = this.slope >= minSlope && fit.r2 >= minR2;
    if (now === this.leaking) return;
    this.leaking = now;
    this.signal.ctx.report({
      signal: TENSOR_LEAK_SIGNAL,
      level: now ? 'warn' : 'ok',
      value: this.slope,
      threshold: minSlope,
      labels: this.labels,
      message: now
        ? `TF.js tensor count grows by ${this.slope.toFixed(2)} tensors per request over the last ${windowSize} requests (model ${this.model}): a handler is not disposing its tensors`
        : `TF.js tensor count is flat again (model ${this.model})`,
    });
  }

  reset(): void {
    this.window.clear();
    this.index = 0;
    this.slope = 0;
  }

  stop(): void {
    if (!this.signal.detectors.delete(this)) return;
    if (this.leaking) {
      this.leaking = false;
      this.signal.ctx.report({
        signal: TENSOR_LEAK_SIGNAL,
        level: 'ok',
        value: 0,
        threshold: this.settings.minSlope,
        labels: this.labels,
      });
    }
  }
}

/**
 * The `tensorLeak` signal of one monitor: every model's detector. Judged
 * after each request (no tick); snapshot section `tensorLeak`, by model.
 */
class TensorLeakSignal implements Signal {
  readonly name = 'tensorLeak';
  readonly detectors = new Set<Detector>();

  constructor(readonly ctx: SignalContext) {}

  snapshot(): Record<string, { slope: number; leaking: boolean }> | undefined {
    if (this.detectors.size === 0) return undefined;
    const out: Record<string, { slope: number; leaking: boolean }> = {};
    for (const d of this.detectors) out[d.model] = { slope: d.slope, leaking: d.leaking };
    return out;
  }
}

const signals = new WeakMap<Monitor, TensorLeakSignal>();

/**
 * Tensor-leak detector of one model, registered in the monitor's
 * `tensorLeak` signal. `numTensors` is process-wide, so every model in the
 * process shares it. Invalid options throw an InferSignalConfigError naming
 * the field.
 */
export function createTensorLeakDetector(
  monitor: Monitor,
  numTensors: () => number,
  options: LeakDetectorOptions,
): TensorLeakDetector {
  if (typeof monitor?.register !== 'function')
    throw new InferSignalConfigError('monitor', 'must be a monitor from createMonitor()');
  if (typeof numTensors !== 'function')
    throw new InferSignalConfigError('numTensors', 'must be a function returning tf.memory().numTensors');
  const settings = leakSettings(options);
  const model = fieldOrDefault<string | undefined>(
    'options.model',
    options.model,
    { type: 'string', maxLength: 128 },
    undefined,
  );
  if (model === undefined) throw new InferSignalConfigError('options.model', 'must name the model the alert is about');
  let signal = signals.get(monitor);
  if (signal === undefined) {
    signal = monitor.register((ctx) => new TensorLeakSignal(ctx));
    signals.set(monitor, signal);
  }
  const detector = new Detector(signal, model, numTensors, settings);
  signal.detectors.add(detector);
  return detector;
}
