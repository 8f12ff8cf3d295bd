import type { EventEmitter } from 'node:events';
import type { Attributes, Meter } from '@opentelemetry/api';
import { ATTR, METRICS, type Level, type Monitor } from '@infersignal/core';
import type { CounterRecorder, Gauge, GaugeObserver, Signal, SignalContext } from '@infersignal/core/signals';
import CircuitBreaker from 'opossum';

/** The breaker's instruments; names live in core's names file with every other metric. */
export const BREAKER_METRICS = {
  state: METRICS.breakerState,
  transitions: METRICS.breakerTransitions,
  calls: METRICS.breakerCalls,
} as const;

const BREAKER_ATTR = {
  name: ATTR.breakerName,
  to: ATTR.breakerTo,
  result: ATTR.breakerResult,
} as const;

/** The level a breaker announces to its monitor. */
const BREAKER_SIGNAL = 'circuit_breaker';

type BreakerState = 'closed' | 'halfOpen' | 'open';
const STATE_VALUE: Record<BreakerState, number> = { closed: 0, halfOpen: 1, open: 2 };
const STATE_LEVEL: Record<BreakerState, Level> = { closed: 'ok', halfOpen: 'warn', open: 'critical' };

export interface BreakerOptions {
  name?: string;
  /** Failure share (percent) of the rolling window that opens the breaker (default 30). */
  errorThresholdPercentage?: number;
  /** Calls in the window before the breaker may open (default 20). */
  volumeThreshold?: number;
  /** Time open before a half-open probe is let through (default 60 s). */
  resetTimeoutMs?: number;
  /** Per-call timeout counted as a failure (default 10 s; false: none). */
  timeoutMs?: number | false;
  /** Rolling window (default 10 s in 10 buckets). */
  rollingCountTimeoutMs?: number;
  rollingCountBuckets?: number;
  /** Rotate the window's buckets yourself (calibration does, per step). */
  rotateBucketController?: EventEmitter;
  /** Registers the breaker in the monitor's `circuitBreakers` signal: metrics in its export mode, state changes as levels. */
  monitor?: Monitor;
  /** Or, without a monitor, metrics on this meter only. */
  meter?: Meter;
}

export interface BreakerTransition {
  from: BreakerState;
  to: BreakerState;
  /** Epoch ms, read from the monotonic clock (a wall-clock step does not skew the gaps). */
  at: number;
  /** Failure share of the window when it happened. */
  windowErrorRate: number;
  windowCalls: number;
}

export interface Breaker<A extends unknown[], R> {
  fire(...args: A): Promise<R>;
  readonly state: BreakerState;
  readonly transitions: readonly BreakerTransition[];
  /** The opossum instance, for anything not wrapped here. */
  readonly circuit: CircuitBreaker<A, R>;
  shutdown(): void;
}

const MAX_TRANSITIONS = 1000;

/**
 * A circuit breaker around a model backend, built on opossum (defaults:
 * opens above 30 % failures once 20 calls are in the window, half-opens
 * after 60 s), its state exported as metrics and as the `circuit_breaker`
 * level of the monitor's `circuitBreakers` signal.
 */
export function createBreaker<A extends unknown[], R>(
  action: (...args: A) => Promise<R>,
  options: BreakerOptions = {},
): Breaker<A, R> {
  const name = options.name ?? (action.name || 'backend');
  const circuit = new CircuitBreaker<A, R>(action, {
    name,
    errorThresholdPercentage: options.errorThresholdPercentage ?? 30,
    volumeThreshold: options.volumeThreshold ?? 20,
    resetTimeout: options.resetTimeoutMs ?? 60_000,
    timeout: options.timeoutMs === undefined ? 10_000 : options.timeoutMs,
    rollingCountTimeout: options.rollingCountTimeoutMs ?? 10_000,
    rollingCountBuckets: options.rollingCountBuckets ?? 10,
    // Percentiles re-sort every latency on each stats read; the breaker does not need them.
    rollingPercentilesEnabled: false,
    ...(options.rotateBucketController ? { rotateBucketController: options.rotateBucketController } : {}),
  } as CircuitBreaker.Options);
  const attrs: Attributes = { [BREAKER_ATTR.name]: name };
  const metrics: BreakerMetrics = options.monitor
    ? monitorMetrics(options.monitor, name, attrs)
    : options.meter
      ? meterMetrics(options.meter, attrs)
      : NO_METRICS;
  const callAttrs: Record<string, Attributes> = {};
  const toAttrs: Record<string, Attributes> = {};
  for (const r of ['success', 'failure', 'timeout', 'reject']) callAttrs[r] = { ...attrs, [BREAKER_ATTR.result]: r };
  for (const s of Object.keys(STATE_VALUE)) toAttrs[s] = { ...attrs, [BREAKER_ATTR.to]: s };
  const safe = (source: string, fn: () => void) => {
    try {
      fn();
    } catch (err) {
      options.monitor?.internalError(source, err);
    }
  };

  let state: BreakerState = 'closed';
  const transitions: BreakerTransition[] = [];
  const enter = (to: BreakerState) => {
    if (to === state) return;
    const from = state;
    state = to;
    const stats = circuit.stats;
    // opossum's own rule: failures (timeouts included) / fires in the window.
    const windowCalls = stats.fires;
    const windowErrorRate = windowCalls ? stats.failures / windowCalls : 0;
    if (transitions.length < MAX_TRANSITIONS)
      transitions.push({ from, to, at: performance.timeOrigin + performance.now(), windowErrorRate, windowCalls });
    safe('breaker.metrics', () =>
      metrics.entered(
        to,
        toAttrs[to]!,
        (options.errorThresholdPercentage ?? 30) / 100,
        `circuit breaker ${name} ${to} (window error rate ${(windowErrorRate * 100).toFixed(1)} % over ${windowCalls} calls)`,
      ),
    );
  };
  // Before opossum's own listener, which arms the reset timer: a preemption
  // between the two then lengthens the recorded open time, never shortens it.
  circuit.prependListener('open', () => enter('open'));
  circuit.on('halfOpen', () => enter('halfOpen'));
  circuit.on('close', () => enter('closed'));
  const count = (result: string) => () => safe('breaker.metrics', () => metrics.call(callAttrs[result]!));
  circuit.on('success', count('success'));
  circuit.on('failure', count('failure'));
  circuit.on('timeout', count('timeout'));
  circuit.on('reject', count('reject'));

  return {
    fire: (...args: A) => circuit.fire(...args),
    get state() {
      return state;
    },
    transitions,
    circuit,
    shutdown: () => {
      circuit.shutdown();
      metrics.remove();
    },
  };
}

/** Where a breaker's state, transitions and calls go. */
interface BreakerMetrics {
  entered(to: BreakerState, toAttributes: Attributes, threshold: number, message: string): void;
  call(attributes: Attributes): void;
  remove(): void;
}

const NO_METRICS: BreakerMetrics = { entered() {}, call() {}, remove() {} };

/** One breaker as its monitor's signal sees it. */
interface RegisteredBreaker {
  state: BreakerState;
  readonly attributes: Attributes;
}

/**
 * The breakers of one monitor, registered through the Signal contract like
 * every signal: counters in the monitor's export mode, the state gauge read
 * at collection, the `circuit_breaker` level per breaker, and a snapshot
 * section `circuitBreakers` (state by breaker name).
 */
class BreakerSignal implements Signal {
  readonly name = 'circuitBreakers';
  readonly breakers = new Map<string, RegisteredBreaker>();
  readonly transitions: CounterRecorder;
  readonly calls: CounterRecorder;
  private readonly state: Gauge;

  constructor(readonly ctx: SignalContext) {
    this.state = ctx.gauge(BREAKER_METRICS.state);
    this.transitions = ctx.counter(BREAKER_METRICS.transitions);
    this.calls = ctx.counter(BREAKER_METRICS.calls);
  }

  observe(observer: GaugeObserver): void {
    for (const b of this.breakers.values()) observer.observe(this.state, STATE_VALUE[b.state], b.attributes);
  }

  snapshot(): Record<string, { state: BreakerState }> | undefined {
    if (this.breakers.size === 0) return undefined;
    const out: Record<string, { state: BreakerState }> = {};
    for (const [name, b] of this.breakers) out[name] = { state: b.state };
    return out;
  }
}

const signals = new WeakMap<Monitor, BreakerSignal>();

function monitorMetrics(monitor: Monitor, name: string, attributes: Attributes): BreakerMetrics {
  let signal = signals.get(monitor);
  if (signal === undefined) {
    signal = monitor.register((ctx) => new BreakerSignal(ctx));
    signals.set(monitor, signal);
  }
  const registered = signal;
  const breaker: RegisteredBreaker = { state: 'closed', attributes };
  registered.breakers.set(name, breaker);
  const labels = { breaker: name };
  return {
    entered(to, toAttributes, threshold, message) {
      breaker.state = to;
      registered.transitions.add(1, toAttributes);
      registered.ctx.report({
        signal: BREAKER_SIGNAL,
        level: STATE_LEVEL[to],
        value: STATE_VALUE[to],
        threshold,
        labels,
        message,
      });
    },
    call(callAttributes) {
      registered.calls.add(1, callAttributes);
    },
    remove() {
      if (registered.breakers.get(name) === breaker) registered.breakers.delete(name);
    },
  };
}

/** Without a monitor: the OTel API on the given meter (a synchronous state gauge). */
function meterMetrics(meter: Meter, attributes: Attributes): BreakerMetrics {
  const spec = BREAKER_METRICS;
  const gauge = meter.createGauge(spec.state.name, { unit: spec.state.unit, description: spec.state.description });
  const transitions = meter.createCounter(spec.transitions.name, {
    unit: spec.transitions.unit,
    description: spec.transitions.description,
  });
  const calls = meter.createCounter(spec.calls.name, { unit: spec.calls.unit, description: spec.calls.description });
  gauge.record(0, attributes);
  return {
    entered(to, toAttributes) {
      gauge.record(STATE_VALUE[to], attributes);
      transitions.add(1, toAttributes);
    },
    call(callAttributes) {
      calls.add(1, callAttributes);
    },
    remove() {},
  };
}
