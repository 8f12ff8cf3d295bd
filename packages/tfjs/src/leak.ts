import { SlidingWindow, linearFit, type Monitor } from '@infersignal/core';

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
}

/**
 * Tensor-leak signal: numTensors sampled after requests that should leave
 * the count where it was. A handler that forgets `dispose()` adds the same
 * few tensors per request, a straight line; a balanced one stays flat (it
 * may wobble with concurrent requests, which the R² bound rejects).
 * `numTensors` is process-wide, so every model in the process shares it.
 */
export function createTensorLeakDetector(
  monitor: Monitor,
  numTensors: () => number,
  options: LeakDetectorOptions,
): TensorLeakDetector {
  const size = options.windowSize ?? 30;
  const minSlope = options.minSlope ?? 0.5;
  const minR2 = options.minR2 ?? 0.8;
  if (!Number.isInteger(size) || size < 3)
    throw new TypeError(`@infersignal/tfjs: leak.windowSize must be an integer ≥ 3, got ${String(size)}`);
  if (!(minSlope > 0)) throw new TypeError(`@infersignal/tfjs: leak.minSlope must be > 0, got ${String(minSlope)}`);
  if (!(minR2 >= 0 && minR2 <= 1))
    throw new TypeError(`@infersignal/tfjs: leak.minR2 must be in [0, 1], got ${String(minR2)}`);
  const labels = { model: options.model };
  // Core's window and least-squares fit; x is the request index (1 "second" per sample), so the slope is tensors per request.
  const window = new SlidingWindow(size);
  let index = 0;
  let slope = 0;
  let leaking = false;

  function judge(): void {
    const fit = linearFit(window);
    slope = fit.slope;
    const now = slope >= minSlope && fit.r2 >= minR2;
    if (now === leaking) return;
    leaking = now;
    monitor.report(
      TENSOR_LEAK_SIGNAL,
      now ? 'warn' : 'ok',
      slope,
      minSlope,
      labels,
      now
        ? `TF.js tensor count grows by ${slope.toFixed(2)} tensors per request over the last ${size} requests (model ${options.model}): a handler is not disposing its tensors`
        : `TF.js tensor count is flat again (model ${options.model})`,
    );
  }

  return {
    sample() {
      try {
        window.push(numTensors(), index++ * 1000);
        if (window.length === size) judge();
      } catch (err) {
        monitor.internalError('tfjs.leak', err);
      }
    },
    get slope() {
      return slope;
    },
    get leaking() {
      return leaking;
    },
    reset() {
      window.clear();
      index = 0;
      slope = 0;
    },
  };
}
