import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { io } from '@tensorflow/tfjs-core';
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import { createMonitor, type AlertEvent, type Monitor } from '@infersignal/core';
import { fileSystemHandler } from '@infersignal/tfjs';

class PullReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export interface Harness {
  monitor: Monitor;
  alerts: AlertEvent[];
  points(name: string): Promise<DataPoint<unknown>[]>;
  histogram(name: string, attributes: Record<string, string>): Promise<Histogram | undefined>;
  close(): Promise<void>;
}

export function harness(): Harness {
  const reader = new PullReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const alerts: AlertEvent[] = [];
  const monitor = createMonitor({ meterProvider, detectorIntervalMs: 0, onAlert: (e) => alerts.push(e), logger: { warn() {} } });
  async function points(name: string): Promise<DataPoint<unknown>[]> {
    const { resourceMetrics } = await reader.collect();
    const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
    return (metric?.dataPoints ?? []) as DataPoint<unknown>[];
  }
  return {
    monitor,
    alerts,
    points,
    async histogram(name, attributes) {
      const point = (await points(name)).find((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v));
      return point?.value as Histogram | undefined;
    },
    async close() {
      await monitor.close();
      await meterProvider.shutdown();
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// Same weights as the ONNX tiny MLP (scripts/make-onnx-models.py), so one JS reference serves both.
const w1 = (i: number, j: number) => (((i * 3 + j * 5) % 7) - 3) / 4;
const b1 = (j: number) => ((j % 3) - 1) / 8;
const w2 = (i: number, j: number) => (((i * 2 + j * 7) % 5) - 2) / 4;
const b2 = (j: number) => j / 4;
const grid = (rows: number, cols: number, f: (i: number, j: number) => number) =>
  Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => f(i, j)));

export function tinyMlp(row: ArrayLike<number>): number[] {
  const hidden = Array.from({ length: 8 }, (_, j) => {
    let sum = b1(j);
    for (let i = 0; i < 4; i++) sum += row[i] * w1(i, j);
    return Math.max(0, sum);
  });
  return Array.from({ length: 3 }, (_, j) => {
    let sum = b2(j);
    for (let i = 0; i < 8; i++) sum += hidden[i] * w2(i, j);
    return sum;
  });
}

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
  const weights = [tf.tensor2d(grid(4, 8, w1)), tf.tensor1d(grid(1, 8, (_, j) => b1(j))[0]), tf.tensor2d(grid(8, 3, w2)), tf.tensor1d(grid(1, 3, (_, j) => b2(j))[0])];
  model.setWeights(weights);
  tf.dispose(weights);
  const path = join(mkdtempSync(join(tmpdir(), 'infersignal-tfjs-')), 'model.json');
  await model.save(fileSystemHandler(path));
  model.dispose();
  return path;
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

export function maxAbsDiff(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < expected.length; i++) max = Math.max(max, Math.abs(actual[i] - expected[i]));
  return max;
}
