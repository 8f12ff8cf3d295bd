/** The fault scenarios `pnpm fidelity` runs after the load scenarios, in this order. */
import { deviceMemoryScenario } from './device-memory';
import { gcPressureScenario } from './gc-pressure';
import { slowReload } from './slow-reload';
import { streamDrops } from './stream-drops';
import type { FaultScenario } from './types';

export const FAULT_SCENARIOS: readonly FaultScenario[] = [
  slowReload,
  streamDrops,
  deviceMemoryScenario,
  gcPressureScenario,
];
