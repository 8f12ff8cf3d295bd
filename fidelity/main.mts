/**
 * `pnpm fidelity`: the scenario suite (see suite.ts), written into
 * docs/fidelity.md with its verdict line; the result as JSON under
 * .tmp/fidelity/. Environment: FIDELITY_RUNS (repeats, default 5),
 * FIDELITY_STEADY_SECONDS (default 600), FIDELITY_SHORT=1 (one short run
 * of each; prints, writes no doc), FIDELITY_NOTE (a sentence on the run's
 * conditions, printed in the doc), FIDELITY_SCENARIOS (comma-separated
 * names, load or fault, e.g. `slow-reload,stream-drops`: only those run;
 * the doc is written only when every scenario ran).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { keepSections } from './doc-sections';
import { FAULT_SCENARIOS } from './faults/index';
import { renderDoc, verdictLine } from './report';
import { runFidelity, selectScenarios } from './suite';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

function intEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${raw}`);
  return value;
}

const short = process.env.FIDELITY_SHORT === '1';
const scenarios = (process.env.FIDELITY_SCENARIOS ?? '')
  .split(',')
  .map((name) => name.trim())
  .filter(Boolean);
// Checked before anything starts: a typo fails at once, naming the known scenarios.
try {
  selectScenarios(scenarios, FAULT_SCENARIOS);
} catch (error) {
  console.error(`FIDELITY_SCENARIOS: ${(error as Error).message}`);
  process.exit(2);
}
const abort = new AbortController();
process.once('SIGINT', () => abort.abort());
process.once('SIGTERM', () => abort.abort());

const result = await runFidelity({
  short,
  repeats: intEnv('FIDELITY_RUNS'),
  steadySeconds: intEnv('FIDELITY_STEADY_SECONDS'),
  scenarios,
  faults: FAULT_SCENARIOS,
  log: (line) => console.log(line),
  signal: abort.signal,
});
mkdirSync(`${ROOT}.tmp/fidelity`, { recursive: true });
const json = `${ROOT}.tmp/fidelity/fidelity-${result.startedAt.replace(/[:.]/g, '-')}.json`;
writeFileSync(json, `${JSON.stringify(result, null, 2)}\n`);
console.log(`JSON result: ${json}`);
if (scenarios.length > 0) console.log('a subset of the scenarios ran: docs/fidelity.md left as it is');
else if (!short && !abort.signal.aborted) {
  const doc = `${ROOT}docs/fidelity.md`;
  // Sections other commands write (`<!-- NAME:begin -->` … `<!-- NAME:end -->`, e.g. the fleet suite's) stay.
  const fresh = renderDoc(result, process.env.FIDELITY_NOTE?.trim() || undefined);
  writeFileSync(doc, existsSync(doc) ? keepSections(readFileSync(doc, 'utf8'), fresh) : fresh);
  console.log('wrote docs/fidelity.md');
}
console.log(verdictLine(result));
