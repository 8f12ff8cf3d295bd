/**
 * Device memory: a server whose requests use device memory through a
 * caching allocator (fault-server-allocator.ts, a model of onnxruntime's
 * BFC arena) runs healthy under a light load, then one of two faults sets
 * in, alternating by repeat (odd: fragmentation, even: leak):
 *
 * - fragmentation: each request's activation grows a little (longer
 *   inputs); the block the last request freed is too small for the next,
 *   so the arena reserves a new segment while the freed ones stay cached:
 *   reserved climbs while allocated stays flat;
 * - leak: each request keeps a 20 MiB block that is never freed (a tensor
 *   still referenced); each fills a segment of its own exactly, so the
 *   reserved − allocated gap stays flat and fragmentation falls: only
 *   allocated grows (memory_drift's allocated fit, not its gap fit).
 *
 * The failure is the model's out-of-memory: a request whose block fits no
 * free block, when a new segment would pass the device's total, gets a
 * 500, timed when the server answers it (a timeout on a starved machine is
 * another failure, logged beside it, not this one).
 *
 * Simulated: the allocator and the device (a fake libnvidia-ml.so.1 whose
 * per-process figure is the allocator's reserved bytes). Real: the
 * `@infersignal/gpu` sampler loading that library through koffi and calling
 * the NVML entry points, core's deviceMemory signal and its detectors, the
 * alert events, the HTTP load.
 */
import { rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ThresholdsInput } from '@infersignal/core';
import { compileFakeNvml } from '../../packages/gpu/test/fake-nvml/compile';
import type { DevicePlan, FaultCommand } from '../fault-server';
import { benchFaultRun, precursorMessage, runFaultBench, startFaultServer } from '../fault-server-process';
import { faultFigures } from './common';
import type { FaultRunFigures, FaultRunOptions, FaultScenario } from './types';

/**
 * The sampler reads the device every 250 ms and the drift detector fits
 * the last 20 samples (5 s): the production defaults (1 s, 60 samples)
 * shortened as the load scenarios shorten their rate windows, so the signal
 * follows a fault that lasts seconds. The fragmentation bound is core's default (0.65).
 */
const DEVICE_MEMORY_THRESHOLDS: ThresholdsInput = {
  deviceMemory: { driftWindowSamples: 20 },
};

const DEVICE_PLAN: DevicePlan = { totalMiB: 8192, weightsMiB: 2048, activationMiB: 512, sampleMs: 250 };

export const DEVICE_SUBJECT = 'device "gpu0"';

export type DeviceFault = 'fragmentation' | 'leak';

/** Odd repeats fragment, even ones leak. */
const deviceFaultOf = (repeat: number): DeviceFault => (repeat % 2 === 1 ? 'fragmentation' : 'leak');

interface Settings {
  rate: number;
  healthySeconds: number;
  faultSeconds: number;
  command: FaultCommand;
  describe: string;
}

/**
 * Short: the fault reaches the device's total in about 10 s; long: in about 40 s,
 * after a healthy phase of 30 s (5 windows of the drift detector).
 */
function settings(fault: DeviceFault, short: boolean): Settings {
  const rate = 20;
  const healthySeconds = short ? 4 : 30;
  if (fault === 'fragmentation') {
    const creep = short ? 2 : 1;
    return {
      rate,
      healthySeconds,
      faultSeconds: short ? 30 : 120,
      command: { kind: 'fragmentation', creepMiBPerSecond: creep },
      describe: `fragmentation: activations of ${DEVICE_PLAN.activationMiB} MiB growing ${creep} MiB/s`,
    };
  }
  const leakMiB = 20;
  return {
    rate,
    healthySeconds,
    faultSeconds: short ? 30 : 120,
    command: { kind: 'leak', leakMiB },
    describe: `leak: ${leakMiB} MiB kept per request`,
  };
}

export async function runDeviceMemory(
  options: FaultRunOptions,
  fault = deviceFaultOf(options.repeat),
): Promise<FaultRunFigures> {
  const s = settings(fault, options.short);
  const library = compileFakeNvml();
  const configDir = mkdtempSync(join(tmpdir(), 'infersignal-fidelity-nvml-'));
  try {
    const server = await startFaultServer({
      fault: 'device-memory',
      thresholds: DEVICE_MEMORY_THRESHOLDS,
      env: {
        NVML_LIBRARY: library,
        FAKE_NVML_CONFIG: join(configDir, 'nvml.conf'),
        DEVICE: JSON.stringify(DEVICE_PLAN),
      },
    });
    try {
      const run = await runFaultBench(server, {
        rate: s.rate,
        healthySeconds: s.healthySeconds,
        faultSeconds: s.faultSeconds,
        fault: s.command,
        timeoutMs: 2000,
        failed: async (server) => Number((await server.state())?.oomFailures ?? 0) > 0,
        signal: options.signal,
      });
      const state = await server.state();
      const figures = faultFigures(
        deviceMemoryScenario,
        benchFaultRun(run, {
          repeat: options.repeat,
          conditions: `${s.describe} from ${s.healthySeconds} s, ${s.rate} req/s; device ${DEVICE_PLAN.totalMiB} MiB, weights ${DEVICE_PLAN.weightsMiB} MiB, BFC-style arena`,
          // The failed requests went through queue "infer" too.
          failingSubjects: [DEVICE_SUBJECT, 'queue "infer"'],
          failure: {
            atMs: typeof state?.firstOomMs === 'number' ? run.faultAtMs + state.firstOomMs : null,
            detail: typeof state?.firstOomMs === 'number' ? 'server 500 (out of device memory)' : null,
          },
        }),
      );
      const other = run.result.firstFailure;
      options.log(
        `device-memory #${options.repeat} (${fault}): fault at ${(run.faultAtMs / 1000).toFixed(1)} s; the bench's first failed request: ${other ? `${other.errorClass} ${other.detail} at ${(other.atMs / 1000).toFixed(1)} s` : 'none'}; at the end reserved ${Number(state?.reservedMiB).toFixed(0)} MiB, allocated ${Number(state?.allocatedMiB).toFixed(0)} MiB, ${state?.oomFailures} OOM; first precursor: ${precursorMessage(run, figures) ?? 'none'}`,
      );
      return figures;
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(configDir, { recursive: true, force: true });
    rmSync(dirname(library), { recursive: true, force: true });
  }
}

export const deviceMemoryScenario: FaultScenario = {
  name: 'device-memory',
  expectedSignals: ['memory_drift', 'gpu_fragmentation'],
  failureDefinition:
    'a request the device cannot place: no cached free block fits its activation and a new segment would pass the device total (500, out of device memory). The allocator and the device are simulated (a model of a BFC arena; a fake libnvidia-ml.so.1 listing its reserved bytes); the NVML calls through koffi, the sampler, the detectors and the alerts are real',
  goal: 'memory_drift or gpu_fragmentation on the device before the first out-of-memory request, no alert in the healthy phase and none about another subject',
  run: (options) => runDeviceMemory(options),
};
