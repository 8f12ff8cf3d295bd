/**
 * GC pressure: a server with a small old space (`--max-old-space-size`)
 * runs healthy under a light load, then starts keeping a copy of every
 * response on the JS heap (a cache without eviction: small objects, which
 * every major GC marks). As the heap fills, V8 runs major GCs more often
 * and each takes longer, until requests time out or the process dies of
 * heap exhaustion (connection errors). Everything here is real: V8, its
 * collector, the event loop, the signal measuring it; only the leak is
 * written for the test.
 */
import type { ThresholdsInput } from '@infersignal/core';
import { faultFigures, precursorMessage, runFaultBench, startFaultServer } from '../fault-server-process';
import type { FaultRunFigures, FaultRunOptions, FaultScenario } from './types';

/** Core's defaults: the event loop is judged on the longest single block of each 1 s period (WARN at 100 ms). */
export const GC_PRESSURE_THRESHOLDS: ThresholdsInput = {};

export const OLD_SPACE_MIB = 96;

export async function runGcPressure(options: FaultRunOptions): Promise<FaultRunFigures> {
  const rate = 20;
  const healthySeconds = options.short ? 4 : 30;
  // About 4.5 MB of heap a second (short) or 1.1 MB (long): the old space fills in ~20 s or ~80 s.
  const retainKiB = options.short ? 200 : 50;
  const server = await startFaultServer({
    fault: 'gc-pressure',
    thresholds: GC_PRESSURE_THRESHOLDS,
    nodeArgs: [`--max-old-space-size=${OLD_SPACE_MIB}`],
  });
  try {
    let lastState: Record<string, unknown> | null = null;
    const run = await runFaultBench(server, {
      rate,
      healthySeconds,
      faultSeconds: options.short ? 60 : 240,
      fault: { kind: 'heap-leak', retainKiB },
      timeoutMs: 2000,
      failed: async (server) => {
        if (server.exit() !== null) return true;
        lastState = (await server.state()) ?? lastState;
        return false;
      },
      signal: options.signal,
    });
    const figures = faultFigures(run, {
      scenario: 'gc-pressure',
      repeat: options.repeat,
      conditions: `${retainKiB} KiB of small objects kept per request from ${healthySeconds} s, ${rate} req/s, --max-old-space-size=${OLD_SPACE_MIB}`,
      failingSubjects: [null, 'queue "infer"'],
      expectedSignals: ['event_loop'],
    });
    const state = lastState as { heapUsedMiB?: number; retained?: number } | null;
    options.log(
      `gc-pressure #${options.repeat}: fault at ${(run.faultAtMs / 1000).toFixed(1)} s; heap ${state?.heapUsedMiB?.toFixed(0)} MiB at the last look (${state?.retained} copies); server ${server.exit() ?? 'alive'}; first precursor: ${precursorMessage(run, figures) ?? 'none'}`,
    );
    return figures;
  } finally {
    await server.stop();
  }
}

export const gcPressureScenario: FaultScenario = {
  name: 'gc-pressure',
  expectedSignal: 'event_loop',
  failureDefinition:
    'a request without a successful answer: a timeout (2 s) while the collector holds the loop, or a connection error once the process died of heap exhaustion',
  goal: 'event_loop (process-wide) before the first failed request, no alert in the healthy phase',
  run: runGcPressure,
};
