/**
 * docs/fidelity.md as the suite writes it: a subset run rewrites only its
 * scenarios' sections and the verdict, other writers' blocks stay, the
 * queue-age finding counts what the runs show, and the step and halving
 * goals ask for a lead above 0. Pure functions over made-up run figures: no
 * server, no timing.
 */
import { describe, expect, it } from 'vitest';
import { block, keepForeignBlocks, readBlocks } from '../fidelity/doc-sections';
import { ageFinding, renderDoc } from '../fidelity/report';
import type { JudgedAlert } from '../fidelity/faults/types';
import { goalMet, type FidelityResult, type RunFigures } from '../fidelity/suite';
import type { HeapLeakFigures } from '../fidelity/heap-leak';

function alert(signal: string, level: string, atSeconds: number, verdict: JudgedAlert['verdict']): JudgedAlert {
  return { signal, level, subject: 'queue "infer"', atSeconds, offeredFactor: 2, verdict };
}

function run(
  scenario: RunFigures['scenario'],
  repeat: number,
  failureAt: number | null,
  alerts: JudgedAlert[],
  age: number | null,
  wait: number | null,
): RunFigures {
  const first = alerts.find((a) => a.verdict === 'true') ?? null;
  const figures: Omit<RunFigures, 'met'> = {
    scenario,
    repeat,
    capacityRps: 60,
    fromRps: 30,
    toRps: 120,
    durationSeconds: 30,
    requests: 1000,
    failed: failureAt === null ? 0 : 100,
    failureAtSeconds: failureAt,
    failureDetail: failureAt === null ? null : 'shed 503',
    alerts,
    firstAlert: alerts[0] ?? null,
    firstTruePrecursor: first,
    leadSeconds: first && failureAt !== null ? failureAt - first.atSeconds : null,
    falseAlerts: [],
    firstAgeSeconds: age,
    firstWaitSeconds: wait,
    halvedAtSeconds: scenario === 'halving' ? 15 : null,
    neighbour: null,
    worstSendLag: null,
    nearFirstTrouble: [],
    worstThreadWait: null,
    threadNearFirstTrouble: [],
  };
  return { ...figures, met: goalMet(figures, false) };
}

function result(runs: RunFigures[], heapLeak?: HeapLeakFigures): FidelityResult {
  return {
    startedAt: '2026-01-01T00:00:00.000Z',
    short: false,
    repeats: 1,
    settings: { steadySeconds: 600, rampSeconds: 90, rampTo: 1.5, stepSeconds: 15, rows: 1024 },
    capacities: [],
    runs,
    faults: [],
    ...(heapLeak ? { heapLeak } : {}),
    wallSeconds: 60,
  };
}

describe('fidelity doc sections', () => {
  it('reads named blocks and keeps the ones a rewrite does not write', () => {
    const previous = `# old\n\n${block('scenario-step', 'old step')}\n\n${block('fleet', 'fleet table\n| a |')}\n`;
    expect(readBlocks(previous).map((b) => [b.name, b.body])).toEqual([
      ['scenario-step', 'old step'],
      ['fleet', 'fleet table\n| a |'],
    ]);
    const fresh = `# new\n\n${block('scenario-step', 'new step')}\n`;
    const merged = keepForeignBlocks(fresh, previous, (name) => !name.startsWith('scenario-'));
    expect(readBlocks(merged).map((b) => [b.name, b.body])).toEqual([
      ['scenario-step', 'new step'],
      ['fleet', 'fleet table\n| a |'],
    ]);
  });

  it('a block that quotes its own markers in its text is read whole', () => {
    const body = 'It sits between `<!-- fleet:begin -->` and `<!-- fleet:end -->`.\n\n| runs |\n|---|\n| 5 |';
    const doc = `# doc\n\n${block('scenario-step', 'step')}\n\n${block('fleet', body)}\n`;
    expect(readBlocks(doc).map((b) => [b.name, b.body])).toEqual([
      ['scenario-step', 'step'],
      ['fleet', body],
    ]);
    const merged = keepForeignBlocks(`# new\n\n${block('scenario-step', 'new')}\n`, doc, (name) => name === 'fleet');
    expect(readBlocks(merged).find((b) => b.name === 'fleet')?.body).toBe(body);
  });

  it('a subset run rewrites its sections and the verdict; the others and the fleet block stay', () => {
    const full = renderDoc(
      result([
        run('steady', 1, null, [], null, null),
        run('step', 1, 16, [alert('queue_occupancy', 'warn', 16, 'true')], null, null),
      ]),
    );
    expect(full).toContain('step 0/1 runs met (lead min 0.0 s');
    const withFleet = `${full}\n${block('fleet', 'the fleet suite wrote this')}\n`;
    const subset = renderDoc(
      result([run('step', 1, 16, [alert('queue_age', 'warn', 15.4, 'true')], 15.4, 17)]),
      undefined,
      withFleet,
    );
    const blocks = new Map(readBlocks(subset).map((b) => [b.name, b.body]));
    expect(blocks.get('scenario-steady')).toBe(readBlocks(full).find((b) => b.name === 'scenario-steady')!.body);
    expect(blocks.get('scenario-step')).toContain('| 1 | 60 | 30→120 | shed 503 at 16.0 s (100/1000) |');
    expect(blocks.get('fleet')).toBe('the fleet suite wrote this');
    expect(subset).toMatch(
      /verdict fidelity: steady 1\/1 runs met \(.*\) — goal .*; step 1\/1 runs met \(lead min 0\.6 s .*\[2\/2 goals met\]/,
    );
    // The fleet block stays last, after the verdict.
    expect(subset.indexOf('<!-- fleet:begin -->')).toBeGreaterThan(subset.indexOf('verdict fidelity'));
  });

  it('a doc written before sections were blocks: its sections are recognized by their titles', () => {
    const legacy = [
      '# Fidelity',
      '',
      'Run: 2025-01-01T00:00:00Z, 5 repeat(s) of each scenario, 97.5 min.',
      '',
      '## Gradual overload ramp, 0.3× → 1.5× of capacity',
      '',
      'Goal: a true precursor ≥ 10 s before the first failure, every run. Result: 5/5 runs met; lead min 43.3 s / median 51.3 s / max 55.5 s.',
      '',
      '## Step, 0.5× → 2× of capacity',
      '',
      'Goal: old. Result: 5/5 runs met; lead min 0.0 s / median 0.0 s / max 0.0 s.',
      '',
      '```',
      'verdict fidelity: old',
      '```',
      '',
    ].join('\n');
    const doc = renderDoc(
      result([run('halving', 1, 30, [alert('capacity', 'warn', 20, 'true')], 24, null)]),
      undefined,
      legacy,
    );
    const blocks = new Map(readBlocks(doc).map((b) => [b.name, b.body]));
    expect(blocks.get('scenario-ramp')).toContain('Run: 2025-01-01T00:00:00Z');
    expect(blocks.get('scenario-step')).toContain('Goal: old.');
    expect(blocks.get('scenario-halving')).toContain('CPU halved at 15.0 s');
    const retried = renderDoc({
      ...result([run('halving', 1, 30, [alert('capacity', 'warn', 20, 'true')], 24, null)]),
      notOverloaded: [run('halving', 1, null, [], null, null)],
    });
    expect(retried).toContain(
      'Not overloaded, so run again on a fresh server (not counted above): 1 run(s) in which nothing failed',
    );
    expect(doc).toMatch(
      /verdict fidelity: ramp 5\/5 runs met .*; step 5\/5 .*; halving 1\/1 runs met \(lead min 10\.0 s/,
    );
  });

  it('the heap-leak section: one row per cell, the healthy runs, the cells left out, in the verdict', () => {
    const leak = (repeat: number, lead: number) => ({
      node: '20',
      limitMiB: 128,
      leakMiBs: 2,
      repeat,
      diedSeconds: 50,
      abort: 'Ineffective mark-compacts near heap limit',
      firstExhaustion: { level: 'warn', seconds: 50 - lead },
      firstHeadroom: null,
      leadSeconds: lead,
      leadShare: lead / 50,
      met: lead >= 15,
    });
    const heap: HeapLeakFigures = {
      garbageMiBs: 10,
      lifeBoundSeconds: 900,
      memoryBudgetMiB: 12288,
      concurrency: 3,
      dropped: [{ node: '20', limitMiB: 1024, leakMiBs: 0.5, expectedLifeSeconds: 1638 }],
      runs: [leak(1, 20), leak(2, 12)],
      healthy: [
        { node: '20', limitMiB: 128, cacheMiBs: 64, seconds: 600, alerts: [], majorGcs: 80, liveRatio: 0.6, met: true },
      ],
      wallSeconds: 900,
    };
    const doc = renderDoc(result([], heap));
    expect(doc).toContain('| 20 | 128 | 2 | 1/2 | 50, 50 | heap_exhaustion WARN | 20.0, 12.0 | 40 %, 24 % |');
    expect(doc).toContain('| 20 | 128 | 64 | 600 s | none | 80 | 0.60 | met |');
    expect(doc).toContain('Left out: Node 20 1024 MiB at 0.5 MiB/s (expected life 27 min)');
    expect(doc).toMatch(/verdict fidelity: heap-leak 2\/3 runs met \(lead min 12\.0 s .*\[0\/1 goals met\]/);
  });
});

describe('step and halving goals, queue age against wait', () => {
  it('a lead of 0 (the WARN at the instant of the first shed) does not meet the step goal; any lead above 0 does', () => {
    expect(run('step', 1, 16, [alert('queue_occupancy', 'warn', 16.02, 'true')], null, null).met).toBe(false);
    expect(run('step', 1, 16, [alert('queue_occupancy', 'warn', 15.7, 'true')], null, null).met).toBe(true);
    expect(run('halving', 1, 30, [], null, null).met).toBe(false);
  });

  it('the finding counts which rose first and by how much', () => {
    const runs = [
      run('step', 1, 17, [], 16.1, 17.6),
      run('step', 2, 17, [], 16.3, 17.3),
      run('step', 3, 17, [], 16.5, null),
      run('step', 4, null, [], null, null),
    ];
    expect(ageFinding(runs)).toBe(
      'Queue age against queue wait (column "queue_age / queue_wait", each signal\'s first rise about a failing queue), over the 3 run(s) that failed: queue_age rose first in 2, queue_wait first in 0 of the 2 where both rose (queue_wait − queue_age: median 1.3 s, range 1.0 to 1.5 s); only queue_age rose in 1. queue_age rose no later than the first failure in 3, queue_wait in 0 of 3. In short, queue age announced this overload earlier than the wait histogram: first in 3 run(s) against 0.',
    );
  });
});
