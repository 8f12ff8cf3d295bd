/**
 * The device-memory and GC-pressure fault scenarios in their short mode,
 * once each (device memory twice, side by side: fragmentation and a leak;
 * then GC pressure alone), each against a server of its own (a child
 * process). Each run is
 * judged on its own numbers: its first failed request is the reference
 * every alert is timed against, and the fault's start splits the healthy
 * phase (where any alert is false) from the rest.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { CachingAllocator, DeviceOutOfMemoryError, MiB } from '../fidelity/fault-server-allocator';
import { DEVICE_SUBJECT, runDeviceMemory } from '../fidelity/faults/device-memory';
import { majorGcPauses, runGcPressure, type GcRunFigures } from '../fidelity/faults/gc-pressure';
import { FAULT_SCENARIOS } from '../fidelity/faults/index';
import type { FaultRunFigures } from '../fidelity/faults/types';
import { ARRIVAL_TOLERANCE_MS, describeAlert } from '../fidelity/suite';
import { hasCompiler } from '../packages/gpu/test/fake-nvml/compile';

const lines: string[] = [];
const log = (line: string): void => void lines.push(line);
let fragmentation: FaultRunFigures;
let leak: FaultRunFigures;
let gc: GcRunFigures;

const describeFigures = (run: FaultRunFigures): string =>
  `${run.conditions}: failure ${run.failureDetail} at ${run.failureAtSeconds} s; alerts ${run.alerts.map((a) => `${describeAlert(a)} [${a.verdict}]`).join(', ') || 'none'}\n${lines.join('\n')}`;

describe('which major GC pauses event_loop announces', () => {
  it('one 124 ms pause alone is not announced; a second over 120 ms within 10 s is, at its end; 250 ms is at once', () => {
    // [ms from the fault, pause ms]; the fault starts 4 s into the bench.
    const lone = majorGcPauses(
      [
        [-500, 7],
        [10_370, 124],
        [10_500, 40],
      ],
      4000,
    );
    expect(lone.healthy).toEqual({ count: 1, longestMs: 7 });
    expect(lone.fault).toEqual({ count: 2, longestMs: 124 });
    expect(lone.firstOver100Seconds).toBeCloseTo(14.37, 9);
    expect(lone.firstAnnouncedEndSeconds).toBeNull();
    const recurred = majorGcPauses(
      [
        [1000, 110],
        [11_500, 130],
        [15_000, 140],
      ],
      4000,
    );
    expect(recurred.firstOver100Seconds).toBeCloseTo(5, 9);
    // The probe reads a block up to its 20 ms period short: 110 ms may read 90, 130 reads at least 110.
    expect(recurred.firstAnnouncedEndSeconds).toBeCloseTo(19.14, 9);
    const long = majorGcPauses(
      [
        [1000, 110],
        [3000, 250],
      ],
      4000,
    );
    expect(long.firstAnnouncedEndSeconds).toBeCloseTo(7.25, 9);
  });
});

describe('the caching allocator model', () => {
  it('reuses a freed block, splits a larger one, merges neighbours and never returns a segment', () => {
    const allocator = new CachingAllocator(1024 * MiB);
    const a = allocator.alloc(100 * MiB);
    allocator.free(a);
    expect(allocator.reserved).toBe(100 * MiB);
    const b = allocator.alloc(60 * MiB);
    const c = allocator.alloc(40 * MiB);
    expect([allocator.reserved, allocator.allocated]).toEqual([100 * MiB, 100 * MiB]);
    allocator.free(b);
    allocator.free(c);
    expect(allocator.largestFree()).toBe(100 * MiB);
    allocator.alloc(101 * MiB);
    expect(allocator.reserved).toBe(100 * MiB + 102 * MiB);
  });

  it('fails an allocation no free block fits when a new segment would pass the total', () => {
    const allocator = new CachingAllocator(200 * MiB);
    allocator.free(allocator.alloc(100 * MiB));
    allocator.alloc(50 * MiB);
    // 50 MiB free in the first segment and 100 MiB left on the device: 120 fits neither.
    expect(() => allocator.alloc(120 * MiB)).toThrow(DeviceOutOfMemoryError);
    expect(allocator.failures).toBe(1);
    allocator.alloc(100 * MiB);
    expect(allocator.reserved).toBe(200 * MiB);
  });
});

describe.skipIf(!hasCompiler())('device memory and GC pressure, short mode', () => {
  beforeAll(async () => {
    // The device runs side by side; the GC run, which times the loop, alone after them.
    [fragmentation, leak] = await Promise.all([
      runDeviceMemory({ short: true, repeat: 1, log }, 'fragmentation'),
      runDeviceMemory({ short: true, repeat: 2, log }, 'leak'),
    ]);
    gc = await runGcPressure({ short: true, repeat: 1, log });
    const dir = fileURLToPath(new URL('../.tmp/fidelity/', import.meta.url));
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}device-gc-short.json`, `${JSON.stringify({ fragmentation, leak, gc, lines }, null, 2)}\n`);
  }, 180_000);

  it('registers both scenarios', () => {
    expect(FAULT_SCENARIOS.map((s) => s.name)).toEqual(expect.arrayContaining(['device-memory', 'gc-pressure']));
  });

  it.each([
    ['fragmentation', () => fragmentation],
    ['leak', () => leak],
  ])('%s: the device signal alerts before the first out-of-memory request, nothing alerts while healthy', (_, get) => {
    const run = get();
    const context = describeFigures(run);
    expect(run.failureAtSeconds, context).not.toBeNull();
    expect(run.failureDetail, context).toBe('server 500 (out of device memory)');
    const precursor = run.alerts.find(
      (a) => a.verdict === 'true' && (a.signal === 'memory_drift' || a.signal === 'gpu_fragmentation'),
    );
    expect(precursor?.subject, context).toBe(DEVICE_SUBJECT);
    expect(precursor!.atSeconds, context).toBeLessThan(run.failureAtSeconds!);
    expect(run.falseAlerts, context).toEqual([]);
    expect(run.met, context).toBe(true);
  });

  it('gc pressure: heap_headroom announces the leak about the process before the first failed request', () => {
    const context = `${describeFigures(gc)}\nmajor GC: ${JSON.stringify(gc.majorGc)}`;
    expect(gc.failureAtSeconds, context).not.toBeNull();
    const heap = gc.alerts.filter((a) => a.signal === 'heap_headroom');
    // Raised after the fault started (the healthy phase's live set is far from the limit), before the failure: WARN,
    // or CRITICAL at once where a busy machine let the heap grow past 75 % between two major GCs.
    expect(['warn', 'critical'], context).toContain(heap[0]?.level);
    expect(heap[0]?.subject, context).toBeNull();
    expect(heap[0]?.verdict, context).toBe('true');
    expect(heap[0]!.atSeconds, context).toBeLessThan(gc.failureAtSeconds!);
  });

  it('gc pressure: the leak ends the process; a major GC pause over 100 ms, where one comes, is announced by event_loop', () => {
    const context = `${describeFigures(gc)}\nmajor GC: ${JSON.stringify(gc.majorGc)}`;
    expect(gc.failureAtSeconds, context).not.toBeNull();
    const failureAt = gc.failureAtSeconds!;
    expect(['timeout', 'connection'], context).toContain(gc.failureDetail?.split(' ')[0]);
    // The collector ran far more often once the heap filled.
    expect(gc.majorGc.fault.count, context).toBeGreaterThan(gc.majorGc.healthy.count);
    // On a quiet machine the pauses can stay short all the way to heap exhaustion (longest 13–42 ms measured): then
    // event_loop rightly stays quiet (heap_headroom announces it, above). So does it for one pause of 100–200 ms
    // alone (124 ms, 0.3 s before the process died, in one CI run). Where pauses reach what the signal announces
    // (210 ms, or two over 110 ms within 10 s) and a 1 s period (with a second's slack for a thrashing collector)
    // ends before the failure, event_loop must have been raised by then.
    const announced = gc.majorGc.firstAnnouncedEndSeconds;
    if (announced !== null && announced + 2 <= failureAt) {
      expect(gc.gcStallAlertSeconds, context).not.toBeNull();
      expect(gc.gcStallAlertSeconds!, context).toBeLessThanOrEqual(failureAt + ARRIVAL_TOLERANCE_MS / 1000);
    }
    // A false alert here can only be a loop the signal itself saw waiting for a CPU (this machine's neighbours).
    expect(gc.falseAlerts, context).toEqual(gc.falseAlertsFromMachineLoad);
  });
});
