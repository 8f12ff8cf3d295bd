import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MeterProvider, MetricReader, type DataPoint, type Histogram, type MetricData } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createMonitor, type AlertEvent, type Monitor, type MonitorOptions } from '@infersignal/core';

export const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
export const fixtureBytes = (name: string): Uint8Array => new Uint8Array(readFileSync(fixture(name)));

/** A reader the test pulls from (no timer). */
class PullReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export interface Harness {
  monitor: Monitor;
  alerts: AlertEvent[];
  spans: InMemorySpanExporter;
  metric(name: string): Promise<MetricData | undefined>;
  points(name: string): Promise<DataPoint<unknown>[]>;
  histogram(name: string, attributes: Record<string, string>): Promise<Histogram | undefined>;
  close(): Promise<void>;
}

/** A monitor wired to a real OTel SDK meter and tracer provider, detectors on manual tick. */
export function harness(options: Partial<MonitorOptions> = {}): Harness {
  const reader = new PullReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const alerts: AlertEvent[] = [];
  const monitor = createMonitor({ meterProvider, tracerProvider, detectorIntervalMs: 0, onAlert: (e) => alerts.push(e), logger: { warn() {} }, ...options });
  async function metric(name: string): Promise<MetricData | undefined> {
    const { resourceMetrics } = await reader.collect();
    return resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
  }
  async function points(name: string): Promise<DataPoint<unknown>[]> {
    return ((await metric(name))?.dataPoints ?? []) as DataPoint<unknown>[];
  }
  return {
    monitor,
    alerts,
    spans,
    metric,
    points,
    async histogram(name, attributes) {
      const point = (await points(name)).find((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v));
      return point?.value as Histogram | undefined;
    },
    async close() {
      await monitor.close();
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// The weight formulas of scripts/make-onnx-models.py, recomputed here so every output number is checked.
const w1 = (i: number, j: number) => (((i * 3 + j * 5) % 7) - 3) / 4;
const b1 = (j: number) => ((j % 3) - 1) / 8;
const w2 = (i: number, j: number) => (((i * 2 + j * 7) % 5) - 2) / 4;
const b2 = (j: number) => j / 4;

/** tiny-mlp.onnx in JS: one row of 4 → 3. */
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

export const CHAIN_DIM = 512;
const chainWeights = [0, 1].map((k) => {
  const w = new Float64Array(CHAIN_DIM * CHAIN_DIM);
  for (let i = 0; i < CHAIN_DIM; i++) for (let j = 0; j < CHAIN_DIM; j++) w[i * CHAIN_DIM + j] = (((i * 7 + j * 13 + k * 5) % 17) - 8) / 256;
  return w;
});

/** matmul-chain.onnx in JS: one row of 512 → 512 (two MatMul + Relu layers). */
export function matmulChain(row: ArrayLike<number>): Float64Array {
  let x = Float64Array.from(row);
  for (const w of chainWeights) {
    const y = new Float64Array(CHAIN_DIM);
    for (let i = 0; i < CHAIN_DIM; i++) {
      const xi = x[i];
      if (xi === 0) continue;
      for (let j = 0; j < CHAIN_DIM; j++) y[j] += xi * w[i * CHAIN_DIM + j];
    }
    for (let j = 0; j < CHAIN_DIM; j++) y[j] = Math.max(0, y[j]);
    x = y;
  }
  return x;
}

/** Deterministic input values in [-1, 1). */
export function inputs(seed: number, length: number): Float32Array {
  const out = new Float32Array(length);
  let s = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    out[i] = ((s >>> 0) / 2 ** 32) * 2 - 1;
  }
  return out;
}

export function maxAbsDiff(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < expected.length; i++) max = Math.max(max, Math.abs(actual[i] - expected[i]));
  return max;
}
