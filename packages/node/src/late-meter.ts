/**
 * A MeterProvider that can be bound after its instruments exist. The
 * metrics API has no proxy provider (traces have one): a meter taken before
 * the SDK registers stays a no-op for good. InferSignal's monitor is usually
 * made at module load, before `sdk.start()`; NodeSDK then hands its provider
 * to every instrumentation (`setMeterProvider`), and this provider re-creates
 * each instrument there and moves its callbacks over — what an OTel
 * instrumentation does in `_updateMetricInstruments`.
 *
 * The cost per record is one extra property read and call.
 */
import {
  createNoopMeter,
  type BatchObservableCallback,
  type BatchObservableResult,
  type Counter,
  type Gauge,
  type Histogram,
  type Meter,
  type MeterOptions,
  type MeterProvider,
  type MetricOptions,
  type Observable,
  type ObservableCallback,
  type ObservableCounter,
  type ObservableGauge,
  type ObservableUpDownCounter,
  type UpDownCounter,
} from '@opentelemetry/api';

type SyncKind = 'createCounter' | 'createUpDownCounter' | 'createHistogram' | 'createGauge';
type AsyncKind = 'createObservableGauge' | 'createObservableCounter' | 'createObservableUpDownCounter';
type SyncInstrument = Counter & UpDownCounter & Histogram & Gauge;

class SyncProxy {
  target: SyncInstrument;

  constructor(
    readonly kind: SyncKind,
    readonly name: string,
    readonly options: MetricOptions | undefined,
    meter: Meter,
  ) {
    this.target = meter[kind](name, options) as SyncInstrument;
  }

  add(value: number, attributes?: object, context?: unknown): void {
    this.target.add(value, attributes as never, context as never);
  }

  record(value: number, attributes?: object, context?: unknown): void {
    this.target.record(value, attributes as never, context as never);
  }

  bind(meter: Meter): void {
    this.target = meter[this.kind](this.name, this.options) as SyncInstrument;
  }
}

class ObservableProxy {
  target: Observable;
  private readonly callbacks = new Set<ObservableCallback>();

  constructor(
    readonly kind: AsyncKind,
    readonly name: string,
    readonly options: MetricOptions | undefined,
    meter: Meter,
  ) {
    this.target = meter[kind](name, options);
  }

  addCallback(callback: ObservableCallback): void {
    this.callbacks.add(callback);
    this.target.addCallback(callback);
  }

  removeCallback(callback: ObservableCallback): void {
    this.callbacks.delete(callback);
    this.target.removeCallback(callback);
  }

  bind(meter: Meter): void {
    for (const callback of this.callbacks) this.target.removeCallback(callback);
    this.target = meter[this.kind](this.name, this.options);
    for (const callback of this.callbacks) this.target.addCallback(callback);
  }
}

const targetOf = (observable: Observable): Observable =>
  observable instanceof ObservableProxy ? observable.target : observable;

interface Batch {
  callback: BatchObservableCallback;
  observables: Observable[];
  /** What is registered on the current meter: the callback behind a result that maps proxies to targets. */
  registered: BatchObservableCallback;
}

class LateMeter implements Meter {
  private meter: Meter;
  private readonly sync: SyncProxy[] = [];
  private readonly observables: ObservableProxy[] = [];
  private readonly batches: Batch[] = [];

  constructor(
    meter: Meter,
    private readonly onCollect: () => void,
  ) {
    this.meter = meter;
  }

  createCounter(name: string, options?: MetricOptions): Counter {
    return this.keep(new SyncProxy('createCounter', name, options, this.meter));
  }
  createUpDownCounter(name: string, options?: MetricOptions): UpDownCounter {
    return this.keep(new SyncProxy('createUpDownCounter', name, options, this.meter));
  }
  createHistogram(name: string, options?: MetricOptions): Histogram {
    return this.keep(new SyncProxy('createHistogram', name, options, this.meter));
  }
  createGauge(name: string, options?: MetricOptions): Gauge {
    return this.keep(new SyncProxy('createGauge', name, options, this.meter));
  }
  createObservableGauge(name: string, options?: MetricOptions): ObservableGauge {
    return this.keepObservable(new ObservableProxy('createObservableGauge', name, options, this.meter));
  }
  createObservableCounter(name: string, options?: MetricOptions): ObservableCounter {
    return this.keepObservable(new ObservableProxy('createObservableCounter', name, options, this.meter));
  }
  createObservableUpDownCounter(name: string, options?: MetricOptions): ObservableUpDownCounter {
    return this.keepObservable(new ObservableProxy('createObservableUpDownCounter', name, options, this.meter));
  }

  addBatchObservableCallback(callback: BatchObservableCallback, observables: Observable[]): void {
    const batch: Batch = {
      callback,
      observables: [...observables],
      registered: (result: BatchObservableResult) => {
        this.onCollect();
        return callback({
          observe: (observable, value, attributes) => result.observe(targetOf(observable), value, attributes),
        });
      },
    };
    this.batches.push(batch);
    this.meter.addBatchObservableCallback(batch.registered, batch.observables.map(targetOf));
  }

  removeBatchObservableCallback(callback: BatchObservableCallback, observables: Observable[]): void {
    const index = this.batches.findIndex((batch) => batch.callback === callback);
    if (index < 0) return;
    const [batch] = this.batches.splice(index, 1);
    this.meter.removeBatchObservableCallback(batch.registered, observables.map(targetOf));
  }

  bind(meter: Meter): void {
    for (const batch of this.batches)
      this.meter.removeBatchObservableCallback(batch.registered, batch.observables.map(targetOf));
    this.meter = meter;
    for (const instrument of this.sync) instrument.bind(meter);
    for (const instrument of this.observables) instrument.bind(meter);
    for (const batch of this.batches)
      meter.addBatchObservableCallback(batch.registered, batch.observables.map(targetOf));
  }

  private keep(proxy: SyncProxy): SyncInstrument {
    this.sync.push(proxy);
    return proxy as unknown as SyncInstrument;
  }

  private keepObservable(proxy: ObservableProxy): ObservableGauge {
    this.observables.push(proxy);
    return proxy as unknown as ObservableGauge;
  }
}

/**
 * Starts on the no-op provider; `bind(provider)` moves every meter made so
 * far (and later ones) to `provider`. Binding the no-op provider again is
 * ignored, so NodeSDK's first `setMeterProvider` (made before it registers
 * its own) cannot undo a real binding.
 */
export class LateMeterProvider implements MeterProvider {
  private provider: MeterProvider | undefined;
  private readonly meters = new Map<string, { meter: LateMeter; version?: string; options?: MeterOptions }>();

  /** `onCollect` is told each time a reader runs an observable batch callback made through this provider. */
  constructor(private readonly onCollect: () => void = () => {}) {}

  get bound(): boolean {
    return this.provider !== undefined;
  }

  getMeter(name: string, version?: string, options?: MeterOptions): Meter {
    const key = `${name}\u0000${version ?? ''}\u0000${options?.schemaUrl ?? ''}`;
    let entry = this.meters.get(key);
    if (!entry) {
      const target = this.provider?.getMeter(name, version, options) ?? createNoopMeter();
      entry = { meter: new LateMeter(target, () => this.onCollect()), version, options };
      this.meters.set(key, entry);
    }
    return entry.meter;
  }

  /** Binds to `provider`; returns false (and changes nothing) when it is the no-op provider or the current one. */
  bind(provider: MeterProvider): boolean {
    if (provider === this.provider) return false;
    const probe = provider.getMeter('@infersignal/node');
    // By name too: the API's CommonJS and ESM builds each have their own no-op meter.
    if (probe === createNoopMeter() || probe.constructor?.name === 'NoopMeter') return false;
    this.provider = provider;
    for (const [key, entry] of this.meters) {
      const name = key.slice(0, key.indexOf('\u0000'));
      entry.meter.bind(provider.getMeter(name, entry.version, entry.options));
    }
    return true;
  }
}
