/**
 * Every signal InferSignal ships, in the order of the rule file and the
 * dashboard. Adding a signal is one definition file and one line here.
 *
 * The definition made with `pending` (fleet) is not converted yet: its rule
 * template is still in @infersignal/rules (looked up by name), its
 * thresholds are the queue's. Its alert (name, severity, runbook anchor,
 * docs row) is already read from here.
 */
import type { AlertDefinition, SignalDefinition } from '../definition';
import { capacitySignal } from './capacity';
import { circuitBreakerSignal } from './circuit-breaker';
import { connectionsSignal } from './connections';
import { deviceMemorySignal } from './device-memory';
import { internalSignal } from './internal';
import { modelLoadSignal } from './model-load';
import { queueSignal } from './queue';
import { runtimeSignal } from './runtime';
import { streamSignal } from './stream';

const pending = (name: string, alerts: AlertDefinition[]): SignalDefinition => ({ name, alerts });

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
  capacitySignal,
  fleet,
  modelLoadSignal,
  streamSignal,
  deviceMemorySignal,
  runtimeSignal,
  connectionsSignal,
  circuitBreakerSignal,
  internalSignal,
];
