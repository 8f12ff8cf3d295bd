import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, MetricReader, type DataPoint, type Histogram, type MetricData } from '@opentelemetry/sdk-metrics';
import { createMonitor, type AlertEvent, type MonitorOptions } from '../src/index';

/** A reader collected on demand. */
export class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export async function collect(reader: MetricReader): Promise<Map<string, MetricData>> {
  const { resourceMetrics } = await reader.collect();
  const out = new Map<string, MetricData>();
  for (const scope of resourceMetrics.scopeMetrics) for (const metric of scope.metrics) out.set(metric.descriptor.name, metric);
  return out;
}

/** Data points of a metric whose attributes include `match`. */
export function points<T = number | Histogram>(metrics: Map<string, MetricData>, name: string, match: Record<string, unknown> = {}): DataPoint<T>[] {
  const metric = metrics.get(name);
  if (!metric) return [];
  return (metric.dataPoints as DataPoint<T>[]).filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v));
}

export function sum(metrics: Map<string, MetricData>, name: string, match: Record<string, unknown> = {}): number {
  return points<number>(metrics, name, match).reduce((acc, p) => acc + p.value, 0);
}

/** A monitor on a real SDK MeterProvider, with a manual clock and manual detector ticks. */
export function setup(options: MonitorOptions = {}) {
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  let now = 1_000_000;
  const alerts: AlertEvent[] = [];
  const warnings: string[] = [];
  const monitor = createMonitor({
    meterProvider,
    clock: () => now,
    detectorIntervalMs: 0,
    traces: false,
    logger: { warn: (m) => warnings.push(m) },
    onAlert: (e) => alerts.push(e),
    ...options,
  });
  return {
    monitor,
    reader,
    meterProvider,
    alerts,
    warnings,
    advance(ms: number) {
      now += ms;
    },
    set(ms: number) {
      now = ms;
    },
    now: () => now,
    collect: () => collect(reader),
  };
}

export { AggregationTemporality, InMemoryMetricExporter };
