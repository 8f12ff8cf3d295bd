/**
 * The test monitor the model wrappers' tests share: real clock unless given
 * one, plus a real OTel SDK tracer provider whose spans the test reads.
 */
import type { DataPoint, Histogram } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { AlertEvent, Monitor, MonitorOptions } from '@infersignal/core';
import { testMonitor } from './monitor';

export interface Harness {
  monitor: Monitor;
  alerts: AlertEvent[];
  spans: InMemorySpanExporter;
  points(name: string): Promise<DataPoint<unknown>[]>;
  histogram(name: string, attributes: Record<string, string>): Promise<Histogram | undefined>;
  close(): Promise<void>;
}

export function harness(options: Partial<MonitorOptions> = {}): Harness {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const t = testMonitor({ clock: undefined, traces: 'all', tracerProvider, ...options });
  return {
    monitor: t.monitor,
    alerts: t.alerts,
    spans,
    points: async (name) => (await t.collect()).points(name),
    histogram: async (name, attributes) => (await t.collect()).histogram(name, attributes),
    async close() {
      await t.close();
      await tracerProvider.shutdown();
    },
  };
}
