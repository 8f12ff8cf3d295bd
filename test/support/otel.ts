// The in-memory OTel side of the tests: a pull reader and the exported numbers they assert.
import {
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';

/** A pull reader: the test calls collect() and reads what an exporter would get. */
export class TestReader extends MetricReader {
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

export function createMeterProvider(): { provider: MeterProvider; reader: TestReader } {
  const reader = new TestReader();
  return { provider: new MeterProvider({ readers: [reader] }), reader };
}

/** Attributes a data point must include to match (every key equal). */
export type Match = Record<string, unknown>;

export class Exported {
  constructor(readonly metrics: ResourceMetrics) {}

  /** The first exported metric of that name (present even when it has no points yet). */
  metric(name: string): MetricData | undefined {
    for (const scope of this.metrics.scopeMetrics)
      for (const metric of scope.metrics) if (metric.descriptor.name === name) return metric;
    return undefined;
  }

  /** Names of the metrics that exported at least one data point. */
  names(): string[] {
    return this.metrics.scopeMetrics.flatMap((scope) =>
      scope.metrics.filter((metric) => metric.dataPoints.length > 0).map((metric) => metric.descriptor.name),
    );
  }

  /** Data points of a metric whose attributes include `attributes`. */
  points<T = unknown>(name: string, attributes: Match = {}): DataPoint<T>[] {
    const out: DataPoint<T>[] = [];
    for (const scope of this.metrics.scopeMetrics) {
      for (const metric of scope.metrics)
        if (metric.descriptor.name === name) out.push(...(metric.dataPoints as DataPoint<T>[]));
    }
    return out.filter((point) => Object.entries(attributes).every(([key, value]) => point.attributes[key] === value));
  }

  /** Sum of a counter (or gauge values) over the points whose attributes include `attributes`. */
  sum(name: string, attributes: Match = {}): number {
    return this.points<number>(name, attributes).reduce((total, point) => total + point.value, 0);
  }

  /** Sample count of a histogram over the matching points. */
  count(name: string, attributes: Match = {}): number {
    return this.points<Histogram>(name, attributes).reduce((total, point) => total + point.value.count, 0);
  }

  /** Value of the single matching data point (throws when not exactly one). */
  value(name: string, attributes: Match = {}): number {
    const found = this.points<number>(name, attributes);
    if (found.length !== 1) throw new Error(`${name} ${JSON.stringify(attributes)}: ${found.length} data points`);
    return found[0]!.value;
  }

  /** The first matching histogram, if any. */
  histogram(name: string, attributes: Match = {}): Histogram | undefined {
    return this.points<Histogram>(name, attributes)[0]?.value;
  }

  histograms(name: string): Histogram[] {
    return this.points<Histogram>(name).map((point) => point.value);
  }

  /** Distinct values of one attribute across a metric's points. */
  values(name: string, key: string): string[] {
    return [...new Set(this.points(name).map((point) => String(point.attributes[key])))].sort();
  }

  /** Counter value (or histogram count) per value of one attribute. */
  by(name: string, key: string, attributes: Match = {}): Record<string, number> {
    const out: Record<string, number> = {};
    for (const point of this.points(name, attributes)) {
      const k = String(point.attributes[key]);
      out[k] = (out[k] ?? 0) + (typeof point.value === 'number' ? point.value : (point.value as Histogram).count);
    }
    return out;
  }

  /** Every attribute value of every point of every metric, for leak checks. */
  allAttributeValues(): string[] {
    const out: string[] = [];
    for (const scope of this.metrics.scopeMetrics) {
      for (const metric of scope.metrics)
        for (const point of metric.dataPoints) out.push(...Object.values(point.attributes).map(String));
    }
    return out;
  }
}

export async function collect(reader: MetricReader): Promise<Exported> {
  const { resourceMetrics, errors } = await reader.collect();
  if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed');
  return new Exported(resourceMetrics);
}
