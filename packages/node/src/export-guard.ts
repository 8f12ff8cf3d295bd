/**
 * Wraps the OTLP exporters so a collector that is down or black-holed
 * costs a counter increment and, at most once per window, one warning —
 * never a stack trace per export, never a rejection the app can see.
 *
 * The exporters already bound their own in-flight work (the periodic reader
 * runs one export at a time; the batch span processor holds at most
 * `maxQueueSize` spans and drops the rest), so memory stays bounded while
 * the collector is away.
 */
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import {
  AggregationTemporality,
  InstrumentType,
  type PushMetricExporter,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { StartLogger } from './types';

/** One warning per signal per window: enough to notice, too few to flood logs. */
const WARN_INTERVAL_MS = 5 * 60_000;

export type ExportSignal = 'metrics' | 'traces';

export class ExportFailures {
  readonly dropped: Record<ExportSignal, number> = { metrics: 0, traces: 0 };
  private readonly lastWarnAt: Record<ExportSignal, number> = { metrics: -Infinity, traces: -Infinity };
  private readonly sinceWarn: Record<ExportSignal, number> = { metrics: 0, traces: 0 };

  constructor(
    private readonly logger: StartLogger,
    private readonly target: Record<ExportSignal, string>,
    private readonly now: () => number = Date.now,
  ) {}

  record(signal: ExportSignal, error: unknown): void {
    this.dropped[signal]++;
    this.sinceWarn[signal]++;
    const at = this.now();
    if (at - this.lastWarnAt[signal] < WARN_INTERVAL_MS) return;
    const count = this.sinceWarn[signal];
    this.lastWarnAt[signal] = at;
    this.sinceWarn[signal] = 0;
    const reason = error instanceof Error ? error.message : error === undefined ? 'unknown error' : String(error);
    try {
      this.logger.warn(
        `infersignal: ${signal} export to ${this.target[signal]} failed (${reason}); ` +
          `${count} export(s) dropped since the last warning, ${this.dropped[signal]} in total. ` +
          'The app is unaffected; this warning repeats at most every 5 minutes.',
      );
    } catch {
      // A broken logger must not turn an export failure into an app failure.
    }
  }
}

type ResultCallback = (result: ExportResult) => void;

function guardCallback(failures: ExportFailures, signal: ExportSignal, done: ResultCallback): ResultCallback {
  return (result) => {
    if (result.code !== ExportResultCode.SUCCESS) failures.record(signal, result.error);
    done(result);
  };
}

/**
 * Observable gauges are read as DELTA: the SDK then exports only what was
 * observed at this collection. With CUMULATIVE it re-exports a gauge's
 * last value forever, so a GPU that disappeared would keep showing its last
 * memory figures (found by the reliability suite, case 11).
 */
export function gaugeTemporality(type: InstrumentType): AggregationTemporality | undefined {
  return type === InstrumentType.OBSERVABLE_GAUGE || type === InstrumentType.GAUGE
    ? AggregationTemporality.DELTA
    : undefined;
}

/**
 * The exporter arrives later (an optional peer imported in the background):
 * work waits for it, and a failed import fails each export like a collector
 * that is down. Temporality is the configured preference, known at once.
 */
export function guardMetricExporter(
  pending: Promise<PushMetricExporter>,
  failures: ExportFailures,
  temporality: (type: InstrumentType) => AggregationTemporality,
): PushMetricExporter {
  const ready = settled(pending);
  return {
    export(metrics: ResourceMetrics, done: ResultCallback) {
      void ready.then((inner) => {
        if (inner instanceof Error) return fail(failures, 'metrics', inner, done);
        try {
          inner.export(metrics, guardCallback(failures, 'metrics', done));
        } catch (err) {
          fail(failures, 'metrics', err, done);
        }
      });
    },
    forceFlush: async () => {
      const inner = await ready;
      if (!(inner instanceof Error)) await inner.forceFlush();
    },
    shutdown: async () => {
      const inner = await ready;
      if (!(inner instanceof Error)) await inner.shutdown();
    },
    selectAggregationTemporality: (type: InstrumentType) => gaugeTemporality(type) ?? temporality(type),
  };
}

export function guardSpanExporter(pending: Promise<SpanExporter>, failures: ExportFailures): SpanExporter {
  const ready = settled(pending);
  return {
    export(spans: ReadableSpan[], done: ResultCallback) {
      void ready.then((inner) => {
        if (inner instanceof Error) return fail(failures, 'traces', inner, done);
        try {
          inner.export(spans, guardCallback(failures, 'traces', done));
        } catch (err) {
          fail(failures, 'traces', err, done);
        }
      });
    },
    shutdown: async () => {
      const inner = await ready;
      if (!(inner instanceof Error)) await inner.shutdown();
    },
    forceFlush: async () => {
      const inner = await ready;
      if (!(inner instanceof Error)) await inner.forceFlush?.();
    },
  };
}

/** The exporter, or the error its import failed with (never a rejection). */
function settled<T>(pending: Promise<T>): Promise<T | Error> {
  return pending.catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
}

function fail(failures: ExportFailures, signal: ExportSignal, err: unknown, done: ResultCallback): void {
  failures.record(signal, err);
  done({ code: ExportResultCode.FAILED, error: err as Error });
}
