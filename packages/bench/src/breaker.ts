import type { EventEmitter } from 'node:events';
import type { Attributes, Counter, Gauge, Meter } from '@opentelemetry/api';
import { ATTR, METRICS, type Level, type Monitor } from '@infersignal/core';
import CircuitBreaker from 'opossum';

/** The breaker's instruments; names live in core's names file with every other metric. */
export const BREAKER_METRICS = {
  state: METRICS.breakerState,
  transitions: METRICS.breakerTransitions,
  calls: METRICS.breakerCalls,
} as const;

export const BREAKER_ATTR = {
  name: ATTR.breakerName,
  to: ATTR.breakerTo,
  result: ATTR.breakerResult,
} as const;

/** The signal a breaker reports to the monitor (`monitor.report`). */
export const BREAKER_SIGNAL = 'circuit_breaker';

export type BreakerState = 'closed' | 'halfOpen' | 'open';
const STATE_VALUE: Record<BreakerState, number> = { closed: 0, halfOpen: 1, open: 2 };
const STATE_LEVEL: Record<BreakerState, Level> = { closed: 'ok', halfOpen: 'warn', open: 'critical' };

export interface BreakerOptions {
  name?: string;
  /** Failure share (percent) of the rolling window that opens the breaker (seed default 30). */
  errorThresholdPercentage?: number;
  /** Calls in the window before the breaker may open (seed default 20). */
  volumeThreshold?: number;
  /** Time open before a half-open probe is let through (seed default 60 s). */
  resetTimeoutMs?: number;
  /** Per-call timeout counted as a failure (default 10 s; false: none). */
  timeoutMs?: number | false;
  /** Rolling window (default 10 s in 10 buckets). */
  rollingCountTimeoutMs?: number;
  rollingCountBuckets?: number;
  /** Rotate the window's buckets yourself (calibration does, per step). */
  rotateBucketController?: EventEmitter;
  /** Metrics go to `monitor.meter` and state changes to `monitor.report`. */
  monitor?: Monitor;
  /** Or only a meter. */
  meter?: Meter;
}

export interface BreakerTransition {
  from: BreakerState;
  to: BreakerState;
  /** Epoch ms. */
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
 * A circuit breaker around a model backend, built on opossum, with the seed
 * document's defaults (30 %, 20 calls, 60 s) and its state exported as
 * metrics and as the `circuit_breaker` signal.
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
  const monitor = options.monitor;
  const meter = options.meter ?? monitor?.meter;
  const attrs: Attributes = { [BREAKER_ATTR.name]: name };
  let gauge: Gauge | null = null;
  let transitionsCounter: Counter | null = null;
  let calls: Counter | null = null;
  const callAttrs: Record<string, Attributes> = {};
  const toAttrs: Record<string, Attributes> = {};
  for (const r of ['success', 'failure', 'timeout', 'reject']) callAttrs[r] = { ...attrs, [BREAKER_ATTR.result]: r };
  for (const s of Object.keys(STATE_VALUE)) toAttrs[s] = { ...attrs, [BREAKER_ATTR.to]: s };
  const safe = (source: string, fn: () => void) => {
    try {
      fn();
    } catch (err) {
      monitor?.internalError(source, err);
    }
  };
  if (meter) {
    safe('breaker.metrics', () => {
      gauge = meter.createGauge(BREAKER_METRICS.state.name, {
        unit: BREAKER_METRICS.state.unit,
        description: BREAKER_METRICS.state.description,
      });
      transitionsCounter = meter.createCounter(BREAKER_METRICS.transitions.name, {
        unit: BREAKER_METRICS.transitions.unit,
        description: BREAKER_METRICS.transitions.description,
      });
      calls = meter.createCounter(BREAKER_METRICS.calls.name, {
        unit: BREAKER_METRICS.calls.unit,
        description: BREAKER_METRICS.calls.description,
      });
      gauge.record(0, attrs);
    });
  }

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
      transitions.push({ from, to, at: Date.now(), windowErrorRate, windowCalls });
    safe('breaker.metrics', () => {
      gauge?.record(STATE_VALUE[to], attrs);
      transitionsCounter?.add(1, toAttrs[to]);
    });
    if (monitor) {
      safe('breaker.report', () =>
        monitor.report(
          BREAKER_SIGNAL,
          STATE_LEVEL[to],
          STATE_VALUE[to],
          (options.errorThresholdPercentage ?? 30) / 100,
          { breaker: name },
          `circuit breaker ${name} ${to} (window error rate ${(windowErrorRate * 100).toFixed(1)} % over ${windowCalls} calls)`,
        ),
      );
    }
  };
  circuit.on('open', () => enter('open'));
  circuit.on('halfOpen', () => enter('halfOpen'));
  circuit.on('close', () => enter('closed'));
  const count = (result: string) => () => safe('breaker.metrics', () => calls?.add(1, callAttrs[result]));
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
    shutdown: () => circuit.shutdown(),
  };
}
