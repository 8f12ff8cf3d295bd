import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { io } from '@tensorflow/tfjs-core';
import type { DataPoint, Histogram } from '@opentelemetry/sdk-metrics';
import type { AlertEvent, Monitor, MonitorOptions } from '@infersignal/core';
import { fileSystemHandler } from '@infersignal/tfjs';
import { sleep } from '../../../test/support/async';
import { testMonitor } from '../../../test/support/monitor';
import { b1, b2, maxAbsDiff, tinyMlp, w1, w2 } from '../../../test/support/tiny-mlp';

export interface Harness {
  monitor: Monitor;
  alerts: AlertEvent[];
  points(name: string): Promise<DataPoint<unknown>[]>;
  histogram(name: string, attributes: Record<string, string>): Promise<Histogram | undefined>;
  close(): Promise<void>;
}

/** The shared test monitor on the real clock, traces through the global tracer provider as in an application. */
export function harness(options: MonitorOptions = {}): Harness {
  const t = testMonitor({ clock: undefined, traces: true, ...options });
  return {
    monitor: t.monitor,
    alerts: t.alerts,
    points: async (name) => (await t.collect()).points(name),
    histogram: async (name, attributes) => (await t.collect()).histogram(name, attributes),
    close: () => t.close(),
  };
}

export { maxAbsDiff, tinyMlp };

const grid = (rows: number, cols: number, f: (i: number, j: number) => number) =>
  Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => f(i, j)));

/**
 * Test setup: builds the tiny MLP as a layers model with the pure-JS
 * backend and saves it to a temp dir (model.json + weights) through the
 * package's node:fs IOHandler. Returns the model.json path.
 */
export async function saveTinyMlp(): Promise<string> {
  await tf.setBackend('cpu');
  const model = tf.sequential({
    layers: [tf.layers.dense({ inputShape: [4], units: 8, activation: 'relu' }), tf.layers.dense({ units: 3 })],
  });
  const weights = [
    tf.tensor2d(grid(4, 8, w1)),
    tf.tensor1d(grid(1, 8, (_, j) => b1(j))[0]),
    tf.tensor2d(grid(8, 3, w2)),
    tf.tensor1d(grid(1, 3, (_, j) => b2(j))[0]),
  ];
  model.setWeights(weights);
  tf.dispose(weights);
  const path = join(mkdtempSync(join(tmpdir(), 'infersignal-tfjs-')), 'model.json');
  await model.save(fileSystemHandler(path));
  model.dispose();
  return path;
}

/**
 * Wraps an IOHandler so its load stands for `ms` on the monitor clock `now`
 * (moved by that much before the real load): recorded durations are exact
 * whatever the machine's speed.
 */
export function taking(handler: io.IOHandler, ms: number, now: { ms: number }): io.IOHandler {
  return {
    async load() {
      now.ms += ms;
      return handler.load!();
    },
  };
}

/** Wraps an IOHandler so its load takes `delayMs` longer, measured into `measured`. */
export function delayed(handler: io.IOHandler, delayMs: number, measured: number[]): io.IOHandler {
  return {
    async load() {
      const started = performance.now();
      await sleep(delayMs);
      measured.push((performance.now() - started) / 1000);
      return handler.load!();
    },
  };
}
