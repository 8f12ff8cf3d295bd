/**
 * The `circuit_breaker` signal: the state, transitions and calls of a
 * circuit breaker (`createBreaker` in @infersignal/breaker, which records
 * them and announces the state as a level).
 */
import { ATTR } from '../attributes';
import { defineSignal } from '../definition';

const metrics = {
  breakerState: {
    name: 'infersignal.breaker.state',
    type: 'gauge',
    unit: '{state}',
    description: 'Circuit breaker state: 0 closed, 1 half-open, 2 open (@infersignal/breaker createBreaker).',
    attributes: [ATTR.breakerName],
  },
  breakerTransitions: {
    name: 'infersignal.breaker.transitions',
    type: 'counter',
    unit: '{transition}',
    description: 'Circuit breaker state changes, by the state entered.',
    attributes: [ATTR.breakerName, ATTR.breakerTo],
  },
  breakerCalls: {
    name: 'infersignal.breaker.calls',
    type: 'counter',
    unit: '{call}',
    description: 'Calls through the circuit breaker, by result (success, failure, timeout, reject).',
    attributes: [ATTR.breakerName, ATTR.breakerResult],
  },
} as const;

export const circuitBreakerSignal = defineSignal({
  name: 'circuit_breaker',
  metrics,
  alerts: [
    {
      name: 'InferSignalCircuitBreakerOpen',
      signal: 'circuit_breaker',
      severity: 'critical',
      runbook: 'circuit-breaker-open',
      doc: '`max by (job, instance, infersignal_breaker_name) (max_over_time(infersignal_breaker_state[1m])) == 2`',
    },
  ],
  rules(k) {
    const hold = k.hold(0);
    const name = k.label(ATTR.breakerName);
    const window = k.options.rateWindow;
    // max_over_time bridges the short half-open probes of a breaker that keeps re-opening; a breaker that stays closed a whole window ends the alert.
    return {
      name: 'infersignal.circuit_breaker',
      rules: [
        k.alert(
          'InferSignalCircuitBreakerOpen',
          `max ${k.by(...k.replicaKeys, name)} (max_over_time(${k.metric(metrics.breakerState)}[${window}])) == 2`,
          hold,
          'Circuit breaker open',
          `Circuit breaker {{ $labels.${name} }} of replica ${k.replica} ({{ $labels.job }}) was open in every ${window} for ${hold}: its backend keeps failing, and calls through the breaker fail fast instead of waiting.`,
        ),
      ],
    };
  },
});
