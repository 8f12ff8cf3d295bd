/** The fault scenarios `pnpm fidelity` runs after the load scenarios, in this order. */
import type { FaultScenario } from './types';

export const FAULT_SCENARIOS: readonly FaultScenario[] = [];
