import type { TextMapGetter } from '@opentelemetry/api';
import { InferSignalConfigError } from './errors';
import {
  ADAPTER_OPTION_KEYS,
  booleanOption,
  checkModelOption,
  checkOptionKeys,
  resolveQueue,
  type AdapterOptions,
} from './options';
import type { Monitor, QueueOptions, QueueTracker, Ticket } from './types';

/** What the adapter itself says about its gate. */
export interface RequestGateSettings {
  /** Name the gate's internal errors are counted under (`express`, `grpc`): `<source>.model`, `<source>.shed`. */
  readonly source: string;
  /** Queue made when `options.queue` does not name one. */
  readonly queue: string;
  /** The adapter's own options besides AdapterOptions' (`queue`, `model`, `shed`, `autoStart`); others are refused. */
  readonly keys: Iterable<string>;
  /** Settings of a queue the gate makes, under the user's (e.g. concurrency 1 for a runtime session). */
  readonly queueDefaults?: QueueOptions;
}

/**
 * The front door of a request-serving adapter, whatever the protocol:
 * which queue, which model label, whether to shed. HTTP (`@infersignal/http`)
 * and gRPC build their request lifecycles on it, so shedding and labelling
 * behave the same everywhere. Made once per adapter registration.
 */
export interface RequestGate {
  readonly monitor: Monitor;
  readonly tracker: QueueTracker;
  readonly source: string;
  /** Start the ticket automatically (the response head, the handler call). */
  readonly autoStart: boolean;
  /**
   * The model label of a request: the option's name, or its function's
   * answer for (a, b), through `monitor.label('model')`; `fallback` when
   * there is no option or the function returns undefined or throws (a
   * throw is counted as internal error `<source>.model`).
   */
  model<A, B>(fallback: string | undefined, a: A, b?: B): string | undefined;
  /** Any label function, with the same fallback and error rule (`<source>.<kind>`). */
  label<A, B>(
    kind: 'model' | 'route',
    fn: string | ((a: A, b: B) => string | undefined) | undefined,
    fallback: string | undefined,
    a: A,
    b: B,
  ): string | undefined;
  /**
   * With shedding on and the queue saying shed: records the request as
   * `rejected` and returns the retry hint in seconds (finite, > 0).
   * Otherwise undefined: take the request. A failing check admits (counted
   * as `<source>.shed`): shedding protects the server, answering is its job.
   * `carrier`, `getter`: the request's incoming trace context (QueueTracker.reject).
   */
  shed<Carrier>(model: string | undefined, carrier?: Carrier, getter?: TextMapGetter<Carrier>): number | undefined;
  /** Arrival: a ticket in the gate's queue. */
  enqueue(model: string | undefined): Ticket;
}

class Gate implements RequestGate {
  readonly tracker: QueueTracker;
  readonly source: string;
  readonly autoStart: boolean;
  private readonly shedding: boolean;
  private readonly modelOption: AdapterOptions['model'];

  constructor(
    readonly monitor: Monitor,
    options: AdapterOptions,
    settings: RequestGateSettings,
  ) {
    this.source = settings.source;
    checkOptionKeys(options, [...ADAPTER_OPTION_KEYS, ...settings.keys]);
    checkModelOption('options.model', options.model);
    this.modelOption = options.model;
    this.shedding = booleanOption('options.shed', options.shed, false);
    this.autoStart = booleanOption('options.autoStart', options.autoStart, true);
    this.tracker = resolveQueue(monitor, options.queue, settings.queue, 'options.queue', settings.queueDefaults);
    // A model named by the option is known from the mount: the series a rule reads of it exist before its first request.
    if (typeof options.model === 'string') monitor.label('model', options.model);
  }

  model<A, B>(fallback: string | undefined, a: A, b?: B): string | undefined {
    return this.label('model', this.modelOption as ((a: A, b?: B) => string | undefined) | undefined, fallback, a, b);
  }

  label<A, B>(
    kind: 'model' | 'route',
    fn: string | ((a: A, b: B) => string | undefined) | undefined,
    fallback: string | undefined,
    a: A,
    b: B,
  ): string | undefined {
    if (fn === undefined) return fallback;
    if (typeof fn === 'string') return this.monitor.label(kind, fn);
    try {
      const value = fn(a, b);
      if (value !== undefined) return this.monitor.label(kind, value);
    } catch (error) {
      this.monitor.internalError(`${this.source}.${kind}`, error);
    }
    return fallback;
  }

  shed<Carrier>(model: string | undefined, carrier?: Carrier, getter?: TextMapGetter<Carrier>): number | undefined {
    if (!this.shedding) return undefined;
    try {
      const admission = this.tracker.admit();
      if (admission.admit) return undefined;
      this.tracker.reject(model, carrier, getter);
      const seconds = admission.retryAfterSeconds;
      return Number.isFinite(seconds) && seconds > 0 ? seconds : 1;
    } catch (error) {
      this.monitor.internalError(`${this.source}.shed`, error);
      return undefined;
    }
  }

  enqueue(model: string | undefined): Ticket {
    return this.tracker.enqueue(model);
  }
}

/**
 * Validates an adapter's options in the shared dialect (unknown keys,
 * `queue`, `model`, `shed`, `autoStart`; errors name `options.<field>`)
 * and makes the gate. The adapter checks its own extra keys itself.
 */
export function createRequestGate<Args extends unknown[]>(
  monitor: Monitor,
  options: AdapterOptions<Args> | undefined,
  settings: RequestGateSettings,
): RequestGate {
  if (typeof monitor?.queue !== 'function')
    throw new InferSignalConfigError('monitor', 'must be a monitor from createMonitor()');
  // The model function's parameters are the adapter's business; the gate passes them through.
  return new Gate(monitor, (options === undefined ? {} : options) as AdapterOptions, settings);
}
