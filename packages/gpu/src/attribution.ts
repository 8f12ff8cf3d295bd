import { existsSync } from 'node:fs';
import type { Reading } from './sources';
import type { MemoryAttribution } from './types';

export interface Attributed {
  attribution: MemoryAttribution | undefined;
  /** Bytes fed to core as `reserved`; undefined when not measurable. */
  reserved: number | undefined;
  /** Other compute processes listed on the sampled devices (for the container warning). */
  others: number;
}

/** Whether a PID exists in this process's PID namespace (Linux /proc). */
function pidVisible(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}

/**
 * Whose memory `reserved` is. NVML (and nvidia-smi) list host PIDs, so in a
 * container with its own PID namespace this process never finds itself in
 * the list although the list is not empty. Then the only honest figure is
 * the device's `used` memory, labelled as device-level.
 *
 * - this PID listed on some device → `process`: the sum of its bytes;
 * - it was listed before and is not now → `process`, 0 bytes (it let go);
 * - others listed and one of them is a PID we can see → same PID
 *   namespace, a GPU shared with other processes while this one holds
 *   nothing yet: 0, no attribution decided;
 * - others listed, none visible, never this PID → `device`: the sum of `used`;
 * - nobody listed → this process holds nothing on the GPU: 0.
 */
export function attribute(
  readings: readonly Reading[],
  previous: MemoryAttribution | undefined,
  visible: (pid: number) => boolean = pidVisible,
): Attributed {
  let queried = 0;
  let others = 0;
  let self = false;
  let processBytes: number | undefined;
  let deviceUsed = 0;
  for (const { sample, selfListed } of readings) {
    deviceUsed += sample.usedBytes;
    if (sample.processes === undefined) continue;
    queried++;
    others += sample.processes - (selfListed ? 1 : 0);
    if (selfListed) {
      self = true;
      if (sample.processBytes !== undefined) processBytes = (processBytes ?? 0) + sample.processBytes;
    }
  }
  if (readings.length === 0) return { attribution: previous, reserved: undefined, others };
  if (queried === 0) {
    // The process list could not be read: only the device-level figure survives, if already in use.
    return { attribution: previous, reserved: previous === 'device' ? deviceUsed : undefined, others };
  }
  if (self) return { attribution: 'process', reserved: processBytes, others };
  if (previous === 'process') return { attribution: 'process', reserved: 0, others };
  if (previous === 'device') return { attribution: 'device', reserved: deviceUsed, others };
  if (others === 0 || readings.some((r) => r.otherPids.some(visible)))
    return { attribution: undefined, reserved: 0, others };
  return { attribution: 'device', reserved: deviceUsed, others };
}
