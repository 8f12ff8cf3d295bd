/** The fault scenarios `pnpm fidelity` runs after the load scenarios, in this order. */
import { slowReload } from './slow-reload';
import { streamDrops } from './stream-drops';
import type { FaultScenario } from './types';

export const FAULT_SCENARIOS: readonly FaultScenario[] = [slowReload, streamDrops];
