/**
 * `pnpm fidelity`: the scenario suite (see suite.ts), written into
 * docs/fidelity.md with its verdict line; the result as JSON under
 * .tmp/fidelity/. Environment: FIDELITY_RUNS (repeats, default 5),
 * FIDELITY_STEADY_SECONDS (default 600), FIDELITY_SHORT=1 (one short run
 * of each; prints, writes no doc), FIDELITY_NOTE (a sentence on the run's
 * conditions, printed in the doc), FIDELITY_SCENARIOS (comma-separated
 * names, load, fault or `heap-leak`, e.g. `slow-reload,stream-drops`: only
 * those run, and only their sections of the doc and its verdict line are
 * rewritten), FIDELITY_HEAP_NODES (Node lines of the heap-leak cells,
 * default 20), FIDELITY_HEAP_HEALTHY_SECONDS (each healthy heap run,
 * default 600), FIDELITY_HEAP_LIFE_BOUND (s: cells expected to live longer
 * are left out, default 450), FIDELITY_HEAP_CONCURRENCY (leak cells at
 * once, default 3), FIDELITY_FROM_JSON (a saved result under .tmp/fidelity:
 * runs nothing, writes that result's sections of the doc again).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { abortOnSignals, intEnv, listEnv, ROOT, saveResult } from './cli';
import { FAULT_SCENARIOS } from './faults/index';
import { renderDoc, verdictLine } from './report';
import { runFidelity, selectScenarios, type FidelityResult } from './suite';

const short = process.env.FIDELITY_SHORT === '1';
const scenarios = listEnv('FIDELITY_SCENARIOS');
// Checked before anything starts: a typo fails at once, naming the known scenarios.
try {
  selectScenarios(scenarios, FAULT_SCENARIOS);
} catch (error) {
  console.error(`FIDELITY_SCENARIOS: ${(error as Error).message}`);
  process.exit(2);
}
// FIDELITY_FROM_JSON=path: no run; the doc's sections of that saved result are written again with this code's report
// (after a change to the report, or with a corrected FIDELITY_NOTE).
const fromJson = process.env.FIDELITY_FROM_JSON?.trim();
if (fromJson) {
  const saved = JSON.parse(readFileSync(fromJson, 'utf8')) as FidelityResult;
  const doc = `${ROOT}docs/fidelity.md`;
  const previous = existsSync(doc) ? readFileSync(doc, 'utf8') : '';
  writeFileSync(doc, renderDoc(saved, process.env.FIDELITY_NOTE?.trim() || undefined, previous));
  console.log(`wrote the sections of ${fromJson} into docs/fidelity.md`);
  console.log(verdictLine(saved));
  process.exit(0);
}
const signal = abortOnSignals();

const result = await runFidelity({
  short,
  repeats: intEnv('FIDELITY_RUNS'),
  steadySeconds: intEnv('FIDELITY_STEADY_SECONDS'),
  scenarios,
  faults: FAULT_SCENARIOS,
  heapLeak: {
    nodes: process.env.FIDELITY_HEAP_NODES?.split(',').map((n) => n.trim()) ?? ['20'],
    healthySeconds: intEnv('FIDELITY_HEAP_HEALTHY_SECONDS'),
    lifeBoundSeconds: intEnv('FIDELITY_HEAP_LIFE_BOUND'),
    concurrency: intEnv('FIDELITY_HEAP_CONCURRENCY'),
  },
  log: (line) => console.log(line),
  signal,
});
saveResult('fidelity', result);
if (!short && !signal.aborted) {
  // A subset rewrites its own sections and the verdict; the other sections and other writers' blocks stay.
  const doc = `${ROOT}docs/fidelity.md`;
  const previous = existsSync(doc) ? readFileSync(doc, 'utf8') : '';
  writeFileSync(doc, renderDoc(result, process.env.FIDELITY_NOTE?.trim() || undefined, previous));
  console.log(
    scenarios.length > 0
      ? `wrote the sections of ${scenarios.join(', ')} into docs/fidelity.md`
      : 'wrote docs/fidelity.md',
  );
}
console.log(verdictLine(result));
