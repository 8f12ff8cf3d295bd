/**
 * Every signal InferSignal ships, in the order of the rule file and the
 * dashboard. Adding a signal is one definition file and one line here.
 *
 * The definitions made with `pending` (capacity, fleet) are not converted
 * yet: their metrics are still in names.ts, their thresholds in config.ts
 * and their rule and panel templates in @infersignal/rules (looked up by
 * name). Their alerts (name, severity, runbook anchor, docs row) are already
 * read from here.
 */
import type { AlertDefinition, SignalDefinition } from '../definition';
import { circuitBreakerSignal } from './circuit-breaker';
import { connectionsSignal } from './connections';
import { deviceMemorySignal } from './device-memory';
import { internalSignal } from './internal';
import { modelLoadSignal } from './model-load';
import { queueSignal } from './queue';
import { runtimeSignal } from './runtime';
import { streamSignal } from './stream';

const pending = (name: string, alerts: AlertDefinition[]): SignalDefinition => ({ name, alerts });

const capacity = pending('capacity', [
  {
    name: 'InferSignalCapacityUtilizationHigh',
    signal: 'capacity',
    severity: 'warning',
    runbook: 'capacity-utilization',
    doc: '`max by (R, queue) (infersignal_queue_utilization_ratio) > 0.8 and level(capacity) >= 1`',
  },
  {
    name: 'InferSignalCapacityUtilizationCritical',
    signal: 'capacity',
    severity: 'critical',
    runbook: 'capacity-utilization',
    doc: '`max by (R, queue) (infersignal_queue_utilization_ratio) and level(capacity) >= 2`',
  },
  {
    name: 'InferSignalTimeToSaturationLow',
    signal: 'capacity',
    severity: 'warning',
    runbook: 'time-to-saturation',
    doc: '`min by (R, queue) (infersignal_queue_saturation_time_seconds) < 60 and level(capacity) >= 1`',
  },
]);

const fleet = pending('fleet', [
  {
    name: 'InferSignalFleetOverloaded',
    signal: 'fleet',
    severity: 'critical',
    runbook: 'fleet-overloaded',
    doc: 'replicas of a `job` and queue with `capacity`, `queue_wait` or `queue_occupancy` at WARN or above, over the replicas exporting that queue, `>= 0.5`, and at least 2 of them; the description lists those replicas (a template `query`)',
  },
]);

/** Core's signal definitions, in rule-file and dashboard order. */
export const SIGNALS: readonly SignalDefinition[] = [
  queueSignal,
  capacity,
  fleet,
  modelLoadSignal,
  streamSignal,
  deviceMemorySignal,
  runtimeSignal,
  connectionsSignal,
  circuitBreakerSignal,
  internalSignal,
];
