/**
 * Every signal InferSignal ships, in the order of the rule file and the
 * dashboard. Adding a signal is one definition file and one line here.
 *
 * The definitions made with `pending` (queue, capacity, fleet) are not
 * converted yet: their metrics are still in names.ts, their thresholds in
 * config.ts and their rule and panel templates in @infersignal/rules (looked
 * up by name). Their alerts (name, severity, runbook anchor, docs row) are
 * already read from here.
 */
import type { AlertDefinition, SignalDefinition } from '../definition';
import { circuitBreakerSignal } from './circuit-breaker';
import { connectionsSignal } from './connections';
import { deviceMemorySignal } from './device-memory';
import { internalSignal } from './internal';
import { modelLoadSignal } from './model-load';
import { runtimeSignal } from './runtime';
import { streamSignal } from './stream';

const pending = (name: string, alerts: AlertDefinition[]): SignalDefinition => ({ name, alerts });

const queue = pending('queue', [
  {
    name: 'InferSignalQueueWaitHigh',
    signal: 'queue_wait',
    severity: 'warning',
    runbook: 'queue-wait',
    doc: '`max by (R, queue) (job_queue_model:infersignal_queue_wait_duration_seconds:p95) and level(queue_wait) >= 1`',
  },
  {
    name: 'InferSignalQueueWaitCritical',
    signal: 'queue_wait',
    severity: 'critical',
    runbook: 'queue-wait',
    doc: 'same, `level(queue_wait) >= 2`',
  },
  {
    name: 'InferSignalQueueWaitTailHigh',
    signal: 'queue_wait',
    severity: 'warning',
    runbook: 'queue-wait-tail',
    doc: '`job_queue_model:infersignal_queue_wait_duration_seconds:p99 > 0.3`',
  },
  {
    name: 'InferSignalQueueOccupancyHigh',
    signal: 'queue_occupancy',
    severity: 'warning',
    runbook: 'queue-occupancy',
    doc: '`max by (R, queue) (infersignal_queue_occupancy_ratio) and level(queue_occupancy) >= 1`',
  },
  {
    name: 'InferSignalQueueOccupancyCritical',
    signal: 'queue_occupancy',
    severity: 'critical',
    runbook: 'queue-occupancy',
    doc: 'same, `level(queue_occupancy) >= 2`',
  },
  {
    name: 'InferSignalQueueAgeHigh',
    signal: 'queue_age',
    severity: 'warning',
    runbook: 'queue-age',
    doc: '`max by (R, queue) (infersignal_queue_wait_oldest_seconds) and level(queue_age) >= 1`',
  },
  {
    name: 'InferSignalQueueAgeCritical',
    signal: 'queue_age',
    severity: 'critical',
    runbook: 'queue-age',
    doc: 'same, `level(queue_age) >= 2`',
  },
  {
    name: 'InferSignalQueuePendingWaitHigh',
    signal: 'queue_pending_wait',
    severity: 'warning',
    runbook: 'queue-pending-wait',
    doc: '`max by (R, queue) (infersignal_queue_wait_pending_seconds / clamp_min(infersignal_queue_in_flight, 1)) and level(queue_pending_wait) >= 1`',
  },
  {
    name: 'InferSignalQueuePendingWaitCritical',
    signal: 'queue_pending_wait',
    severity: 'critical',
    runbook: 'queue-pending-wait',
    doc: 'same, `level(queue_pending_wait) >= 2`',
  },
  {
    name: 'InferSignalQueueTokenBacklogHigh',
    signal: 'queue_token_backlog',
    severity: 'warning',
    runbook: 'queue-token-backlog',
    doc: '`max by (R, queue) (infersignal_queue_tokens_drain_time_seconds) and level(queue_token_backlog) >= 1`',
  },
  {
    name: 'InferSignalQueueTokenBacklogCritical',
    signal: 'queue_token_backlog',
    severity: 'critical',
    runbook: 'queue-token-backlog',
    doc: 'same, `level(queue_token_backlog) >= 2`',
  },
  {
    name: 'InferSignalBackpressureCritical',
    signal: 'queue_backpressure',
    severity: 'critical',
    runbook: 'backpressure',
    doc: '`max by (R, infersignal_queue_name) (infersignal_queue_backpressure_level) >= 2`',
  },
]);

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
  queue,
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
