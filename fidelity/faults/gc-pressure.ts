/**
 * GC pressure: a server with a small old space (`--max-old-space-size`)
 * runs healthy under a light load, then starts keeping a copy of every
 * response on the JS heap (a cache without eviction: small objects, which
 * every major GC marks). As the heap fills, V8 runs major GCs more often
 * and each takes longer, until requests time out or the process dies of
 * heap exhaustion (connection errors). The precursors are heap_exhaustion
 * (the live set's growth projected to where V8 gives up) and heap_headroom
 * (the live set after each major GC against the old-generation limit),
 * whether or not a GC pause ever gets long enough for event_loop.
 * Everything here is real: V8, its collector, the event loop, the signals
 * measuring them; only the leak is written for the test.
 */
import type { BenchResult } from '@infersignal/bench';

import { resolveThresholds, type ThresholdsInput } from '@infersignal/core';

import { EVENT_LOOP_RULE } from '../../packages/core/src/signals/event-loop';
import { benchFaultRun, precursorMessage, runFaultBench, startFaultServer } from '../fault-server-process';
import { faultFigures } from './common';
import type { JudgedAlert } from './types';
import type { FaultRunFigures, FaultRunOptions, FaultScenario } from './types';

type AlertRecord = BenchResult['alerts'][number];
const DEFAULT_THRESHOLDS = resolveThresholds();

/**
 * Core's defaults: heap_headroom WARN at 70 % of the old generation live after two major GCs in a row; the event
 * loop is judged on the longest single block of each 1 s period (WARN at 100 ms).
 */
const GC_PRESSURE_THRESHOLDS: ThresholdsInput = {};

const OLD_SPACE_MIB = 96;

export interface MajorGcFigures {
  healthy: { count: number; longestMs: number };
  fault: { count: number; longestMs: number };
  /** When the first major GC pause over 100 ms (core's event_loop WARN) began, on the bench's clock. */
  firstOver100Seconds: number | null;
  /**
   * When the first pause that event_loop's rule surely raises the level for ended (bench's clock): one of 220 ms or
   * more (twice WARN, and the probe's period), or one over 120 ms that came within 10 s (10 periods) of
   * another. A single 100–200 ms pause is, by that rule, one slow request and no alert.
   */
  firstAnnouncedEndSeconds: number | null;
}

/**
 * core's event_loop with its default thresholds (GC_PRESSURE_THRESHOLDS is {}), by its own rule: WARN, the block
 * that raises the level alone, the window for a recurrence. A block reads up to one probe period short
 * of its length, so only pauses that long past each bound surely count.
 */
const LOOP_RESOLUTION_MS = EVENT_LOOP_RULE.resolutionMs;
const LOOP_WARN_MS = DEFAULT_THRESHOLDS.eventLoop.delayWarnSeconds * 1000;
const LOOP_ALONE_MS = EVENT_LOOP_RULE.aloneFactor * LOOP_WARN_MS;
const LOOP_RECUR_MS = EVENT_LOOP_RULE.recurPeriods * DEFAULT_THRESHOLDS.eventLoop.sampleIntervalMs;

/** The server's major GC pauses ([ms from the fault's start, duration ms]) split at the fault (at `faultAtMs` on the bench's clock). */
export function majorGcPauses(pauses: readonly [number, number][], faultAtMs: number): MajorGcFigures {
  const before = pauses.filter(([at]) => at < 0).map(([, ms]) => ms);
  const after = pauses.filter(([at]) => at >= 0);
  const first = after.find(([, ms]) => ms > LOOP_WARN_MS);
  const long = after.filter(([, ms]) => ms > LOOP_WARN_MS + LOOP_RESOLUTION_MS);
  const announced = long.find(
    ([at, ms], i) => ms >= LOOP_ALONE_MS + LOOP_RESOLUTION_MS || (i > 0 && at - long[i - 1]![0] <= LOOP_RECUR_MS),
  );
  return {
    healthy: { count: before.length, longestMs: Math.max(0, ...before) },
    fault: { count: after.length, longestMs: Math.max(0, ...after.map(([, ms]) => ms)) },
    firstOver100Seconds: first ? (faultAtMs + first[0]) / 1000 : null,
    firstAnnouncedEndSeconds: announced ? (faultAtMs + announced[0] + announced[1]) / 1000 : null,
  };
}

/** What the message of an event_loop alert says when the process mostly waited for a CPU (core's event-loop signal). */
const WAITED_FOR_CPU = 'the process waited for a CPU';

export interface GcRunFigures extends FaultRunFigures {
  majorGc: MajorGcFigures;
  /**
   * False alerts the event_loop signal itself put down to machine load (the
   * loop was blocked, but the process spent less than half of it on a CPU):
   * what a busy neighbour does to any process, not a precursor of this fault.
   */
  falseAlertsFromMachineLoad: JudgedAlert[];
  /** The first event_loop alert raised once a major GC pause over 100 ms had begun (seconds), and its lead. */
  gcStallAlertSeconds: number | null;
  gcStallLeadSeconds: number | null;
}

/**
 * The first moment at or after `fromSeconds` when event_loop stood at WARN
 * or above (its level then, or its next rise), from every level change the
 * bench saw, not only the first per level: an earlier rise may have been a
 * neighbour's doing.
 */
function eventLoopRaisedFrom(records: readonly AlertRecord[], fromSeconds: number): number | null {
  let raised = false;
  for (const record of [...records].sort((a, b) => a.atMs - b.atMs)) {
    if (record.signal !== 'event_loop') continue;
    const up = record.level === 'warn' || record.level === 'critical';
    if (record.atMs / 1000 >= fromSeconds) {
      if (raised) return fromSeconds;
      if (up) return record.atMs / 1000;
    }
    raised = up;
  }
  return raised ? fromSeconds : null;
}

export async function runGcPressure(options: FaultRunOptions): Promise<GcRunFigures> {
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
    const figures = faultFigures(
      gcPressureScenario,
      benchFaultRun(run, {
        repeat: options.repeat,
        conditions: `${retainKiB} KiB of small objects kept per request from ${healthySeconds} s, ${rate} req/s, --max-old-space-size=${OLD_SPACE_MIB}`,
        failingSubjects: [null, 'queue "infer"'],
      }),
    );
    const state = lastState as { heapUsedMiB?: number; retained?: number; majorGcs?: [number, number][] } | null;
    const gcs = majorGcPauses(state?.majorGcs ?? [], run.faultAtMs);
    options.log(
      `gc-pressure #${options.repeat}: fault at ${(run.faultAtMs / 1000).toFixed(1)} s; heap ${state?.heapUsedMiB?.toFixed(0)} MiB at the last look (${state?.retained} copies); server ${server.exit() ?? 'alive'}; ` +
        `major GC pauses: healthy ${gcs.healthy.count}, longest ${gcs.healthy.longestMs.toFixed(0)} ms; after the fault ${gcs.fault.count}, longest ${gcs.fault.longestMs.toFixed(0)} ms, first over 100 ms at ${gcs.firstOver100Seconds?.toFixed(1) ?? '—'} s; ` +
        `first precursor: ${precursorMessage(run, figures) ?? 'none'}`,
    );
    const messageOf = (alert: JudgedAlert): string =>
      run.result.alerts.find(
        (r) => r.signal === alert.signal && r.level === alert.level && Math.abs(r.atMs / 1000 - alert.atSeconds) < 1e-6,
      )?.message ?? '';
    const gcStallAlertSeconds =
      gcs.firstOver100Seconds === null ? null : eventLoopRaisedFrom(run.result.alerts, gcs.firstOver100Seconds);
    return {
      ...figures,
      majorGc: gcs,
      falseAlertsFromMachineLoad: figures.falseAlerts.filter((a) => messageOf(a).includes(WAITED_FOR_CPU)),
      gcStallAlertSeconds,
      gcStallLeadSeconds:
        gcStallAlertSeconds !== null && figures.failureAtSeconds !== null
          ? figures.failureAtSeconds - gcStallAlertSeconds
          : null,
    };
  } finally {
    await server.stop();
  }
}

export const gcPressureScenario: FaultScenario = {
  name: 'gc-pressure',
  expectedSignals: ['heap_exhaustion', 'heap_headroom'],
  failureDefinition:
    'a request without a successful answer: a timeout (2 s) while the collector holds the loop, or a connection error once the process died of heap exhaustion',
  goal: 'heap_exhaustion or heap_headroom (the process) before the first failed request, no alert in the healthy phase',
  run: runGcPressure,
};
