// The in-memory OTel side of the HTTP adapter tests: a pull reader and the exported numbers they assert.
import { MeterProvider, MetricReader, type DataPoint, type Histogram, type ResourceMetrics } from '@opentelemetry/sdk-metrics';

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

export class Exported {
  constructor(readonly metrics: ResourceMetrics) {}

  points(name: string): DataPoint<unknown>[] {
    const out: DataPoint<unknown>[] = [];
    for (const scope of this.metrics.scopeMetrics) {
      for (const metric of scope.metrics) if (metric.descriptor.name === name) out.push(...(metric.dataPoints as DataPoint<unknown>[]));
    }
    return out;
  }

  private matching(name: string, attributes: Record<string, string>): DataPoint<unknown>[] {
    return this.points(name).filter((point) => Object.entries(attributes).every(([key, value]) => point.attributes[key] === value));
  }

  /** Sum of a counter over the points whose attributes include `attributes`. */
  sum(name: string, attributes: Record<string, string> = {}): number {
    return this.matching(name, attributes).reduce((total, point) => total + (point.value as number), 0);
  }

  /** Sample count of a histogram over the matching points. */
  count(name: string, attributes: Record<string, string> = {}): number {
    return this.matching(name, attributes).reduce((total, point) => total + (point.value as Histogram).count, 0);
  }

  /** Distinct values of one attribute across a metric's points. */
  values(name: string, key: string): string[] {
    return [...new Set(this.points(name).map((point) => String(point.attributes[key])))].sort();
  }

  /** Every attribute value of every point of every metric, for leak checks. */
  allAttributeValues(): string[] {
    const out: string[] = [];
    for (const scope of this.metrics.scopeMetrics) {
      for (const metric of scope.metrics) for (const point of metric.dataPoints) out.push(...Object.values(point.attributes).map(String));
    }
    return out;
  }
}

export async function collect(reader: MetricReader): Promise<Exported> {
  const { resourceMetrics, errors } = await reader.collect();
  if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed');
  return new Exported(resourceMetrics);
}
