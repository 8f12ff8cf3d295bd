/**
 * Every signal InferSignal ships, in the order of the rule file and the
 * dashboard. Adding a signal is one definition file and one line here.
 */
import type { SignalDefinition } from '../definition';
import { capacitySignal } from './capacity';
import { circuitBreakerSignal } from './circuit-breaker';
import { connectionsSignal } from './connections';
import { deviceMemorySignal } from './device-memory';
import { fleetSignal } from './fleet';
import { gpuSignal } from './gpu';
import { internalSignal } from './internal';
import { modelLoadSignal } from './model-load';
import { queueSignal } from './queue';
import { rpcSignal } from './rpc';
import { runtimeSignal } from './runtime';
import { saturationSignal } from './saturation';
import { streamSignal } from './stream';

/** Core's signal definitions, in rule-file and dashboard order. */
export const SIGNALS: readonly SignalDefinition[] = [
  queueSignal,
  capacitySignal,
  fleetSignal,
  saturationSignal,
  modelLoadSignal,
  streamSignal,
  deviceMemorySignal,
  gpuSignal,
  runtimeSignal,
  connectionsSignal,
  rpcSignal,
  circuitBreakerSignal,
  internalSignal,
];
