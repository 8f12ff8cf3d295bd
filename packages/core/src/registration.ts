import type { Attributes, Tracer } from '@opentelemetry/api';
import type { AlertHub } from './alerts/hub';
import type { Thresholds } from './thresholds';
import type {
  CounterRecorder,
  CounterSeries,
  Gauge,
  HistogramRecorder,
  HistogramSeries,
  Signal,
  SignalContext,
} from './contract';
import { counterSeries, histogramSeries, type Instruments } from './instruments';
import type { InstrumentSpec } from './attributes';
import type { AlertReport, Level, SignalName } from './contract';

/** What a registration needs from its monitor. */
export interface RegistrationHost {
  readonly clock: () => number;
  readonly thresholds: Thresholds;
  readonly exportMode: 'api' | 'producer';
  readonly tracer: Tracer | undefined;
  readonly maxModels: number;
  readonly genAi: { readonly operationName: string; readonly providerName: string };
  readonly instruments: Instruments;
  readonly hub: AlertHub;
  badDuration(): void;
  announce(report: AlertReport): void;
  label(kind: 'model' | 'route', value: unknown): string;
  internalError(source: string, error: unknown): void;
  remove(signal: Signal): void;
}

/**
 * The context of one registered signal. One class for every registration,
 * so the hot-path calls through it (`recordSeconds`) stay monomorphic.
 */
export class Registration implements SignalContext {
  readonly clock: () => number;
  readonly thresholds: Thresholds;
  readonly exportMode: 'api' | 'producer';
  readonly tracer: Tracer | undefined;
  readonly maxModels: number;
  readonly genAi: { readonly operationName: string; readonly providerName: string };
  signal: Signal | undefined;

  constructor(private readonly monitor: RegistrationHost) {
    this.clock = monitor.clock;
    this.thresholds = monitor.thresholds;
    this.exportMode = monitor.exportMode;
    this.tracer = monitor.tracer;
    this.maxModels = monitor.maxModels;
    this.genAi = monitor.genAi;
  }

  histogram(spec: InstrumentSpec): HistogramRecorder {
    return this.monitor.instruments.histogram(spec);
  }

  counter(spec: InstrumentSpec): CounterRecorder {
    return this.monitor.instruments.counter(spec);
  }

  gauge(spec: InstrumentSpec): Gauge {
    return this.monitor.instruments.gauge(spec);
  }

  recordSeconds(histogram: HistogramRecorder, seconds: number, attributes: Attributes): void {
    if (seconds >= 0 && seconds !== Number.POSITIVE_INFINITY) histogram.record(seconds, attributes);
    else this.monitor.badDuration();
  }

  histogramSeries(histogram: HistogramRecorder, attributes: Attributes): HistogramSeries {
    return histogramSeries(histogram, attributes);
  }

  counterSeries(counter: CounterRecorder, attributes: Attributes, atZero?: boolean): CounterSeries {
    return counterSeries(counter, attributes, atZero);
  }

  recordSecondsIn(series: HistogramSeries, seconds: number): void {
    if (seconds >= 0 && seconds !== Number.POSITIVE_INFINITY) series.record(seconds);
    else this.monitor.badDuration();
  }

  report(report: AlertReport): void {
    this.monitor.announce(report);
  }

  announced(signal: SignalName, labels: Record<string, string>): Level {
    return this.monitor.hub.level(signal, labels);
  }

  label(kind: 'model' | 'route', value: unknown): string {
    return this.monitor.label(kind, value);
  }

  internalError(source: string, error: unknown): void {
    this.monitor.internalError(source, error);
  }

  unregister(): void {
    if (this.signal) this.monitor.remove(this.signal);
  }
}
