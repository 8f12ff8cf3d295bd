/**
 * Sinks for the OTel SDK in benchmarks: a pull reader that is collected
 * on demand, a push exporter and a span exporter that drop what they get
 * (counting it), so every variant pays the SDK's real recording and
 * collection costs and none pays for I/O the others do not do.
 */
import {
  MetricReader,
  type MetricProducer,
  type PushMetricExporter,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

/** `ExportResultCode.SUCCESS` of @opentelemetry/core (not a dependency here). */
const SUCCESS = 0;
type ExportResult = Parameters<PushMetricExporter['export']>[1] extends (result: infer R) => void ? R : never;

/** A pull reader: `collect()` when you want the data, nothing on a timer. */
export class PullReader extends MetricReader {
  constructor(metricProducers?: MetricProducer[]) {
    super(metricProducers ? { metricProducers } : {});
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export class DropSpanExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.spans += spans.length;
    done({ code: SUCCESS } as ExportResult);
  }
  async shutdown(): Promise<void> {}
}

/** Sum of the `count` of every histogram data point of one metric in a collection. */
export function histogramCount(resourceMetrics: ResourceMetrics, name: string): number {
  let count = 0;
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      for (const point of metric.dataPoints) count += (point.value as { count?: number }).count ?? 0;
    }
  }
  return count;
}
