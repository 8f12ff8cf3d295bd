/**
 * Views: inference-sized histogram buckets and a cardinality limit.
 *
 * The SDK's default buckets (0–10 000, made for milliseconds) put every
 * queue wait measured in seconds into the first two buckets; core's
 * HISTOGRAM_BUCKETS span 1 ms–60 s for queue wait and TTFT and up to 10 min
 * for model loads.
 *
 * Only the bucketed histograms get a View: a second, catch-all View would
 * make the SDK export those histograms twice. Every other instrument gets
 * the same cardinality limit from the readers' `cardinalitySelector`.
 */
import { HISTOGRAM_BUCKETS } from '@infersignal/core';
import { AggregationType, type ViewOptions } from '@opentelemetry/sdk-metrics';

export function inferenceViews(cardinalityLimit: number): ViewOptions[] {
  return Object.entries(HISTOGRAM_BUCKETS).map(([instrumentName, boundaries]) => ({
    instrumentName,
    aggregation: { type: AggregationType.EXPLICIT_BUCKET_HISTOGRAM, options: { boundaries: [...boundaries] } },
    aggregationCardinalityLimit: cardinalityLimit,
  }));
}
