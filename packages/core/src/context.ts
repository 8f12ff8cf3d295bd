import type { Attributes, Tracer } from '@opentelemetry/api';
import type { AlertHub } from './alerts/hub';
import type { Thresholds } from './config';
import type { Instruments } from './instruments';
import type { GlitchAttribution } from './signals/attribution';

/** What every signal needs from its monitor; built once in createMonitor. */
export interface MonitorContext {
  readonly clock: () => number;
  readonly thresholds: Thresholds;
  readonly instruments: Instruments;
  readonly hub: AlertHub;
  /** Undefined when traces are off. */
  readonly tracer: Tracer | undefined;
  readonly maxModels: number;
  /** The capped, sanitised model label shared by every signal (`_other` past maxModels). */
  modelLabel(value: unknown): string;
  internalError(source: string, error: unknown): void;
  /** What else was elevated when a P99 glitch fires, and the likely cause. */
  attributeGlitch(now: number, windowMs: number): GlitchAttribution;
  /** Counts a negative or non-finite duration (a clock that went backwards) instead of recording it. */
  badDuration(): void;
}

/** Records a duration in seconds unless it is negative or not finite. */
export function recordSeconds(
  ctx: MonitorContext,
  histogram: { record(value: number, attributes?: Attributes): void },
  seconds: number,
  attributes: Attributes,
): void {
  if (seconds >= 0 && seconds !== Number.POSITIVE_INFINITY) histogram.record(seconds, attributes);
  else ctx.badDuration();
}
