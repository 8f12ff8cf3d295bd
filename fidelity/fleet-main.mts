/**
 * `pnpm fidelity:fleet`: the fleet scenario suite (see fleet.ts), written
 * into docs/fidelity.md between its `<!-- fleet:begin -->` and
 * `<!-- fleet:end -->` markers with its verdict line; the result as JSON
 * under .tmp/fidelity/. Environment: FLEET_RUNS (runs of each scenario,
 * default 5), FLEET_SHORT=1 (one short run of each; prints, writes no doc),
 * FLEET_SCENARIOS (comma-separated names: only those run, and the doc is
 * left as it is), FLEET_NOTE (a sentence on the run's conditions, printed in
 * the doc), FLEET_FROM_JSON (a result file of an earlier run: rewrites the
 * section from it, with FLEET_NOTE, and runs nothing).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { abortOnSignals, intEnv, listEnv, ROOT, saveResult } from './cli';
import { replaceSection } from './doc-sections';
import { FLEET_SCENARIOS, runFleet, type FleetResult, type FleetScenarioName } from './fleet';
import { FLEET_SECTION, fleetVerdictLine, renderFleetSection } from './fleet-report';

const fromJson = process.env.FLEET_FROM_JSON?.trim();
if (fromJson) {
  const saved = JSON.parse(readFileSync(fromJson, 'utf8')) as FleetResult;
  const doc = `${ROOT}docs/fidelity.md`;
  const section = renderFleetSection(saved, process.env.FLEET_NOTE?.trim() || undefined);
  writeFileSync(doc, replaceSection(readFileSync(doc, 'utf8'), FLEET_SECTION, section));
  console.log(`wrote the fleet section of docs/fidelity.md from ${fromJson}`);
  console.log(fleetVerdictLine(saved));
  process.exit(0);
}

const short = process.env.FLEET_SHORT === '1';
const chosen = listEnv('FLEET_SCENARIOS');
const unknown = chosen.filter((name) => !FLEET_SCENARIOS.includes(name as FleetScenarioName));
if (unknown.length > 0) {
  console.error(`FLEET_SCENARIOS: unknown ${unknown.join(', ')}; known: ${FLEET_SCENARIOS.join(', ')}`);
  process.exit(2);
}
const signal = abortOnSignals();

const result = await runFleet({
  short,
  repeats: intEnv('FLEET_RUNS'),
  scenarios: chosen.length > 0 ? (chosen as FleetScenarioName[]) : short ? FLEET_SCENARIOS : undefined,
  log: (line) => console.log(line),
  signal,
});
saveResult('fleet', result);
if (chosen.length > 0) console.log('a subset of the scenarios ran: docs/fidelity.md left as it is');
else if (!short && !signal.aborted) {
  const doc = `${ROOT}docs/fidelity.md`;
  const section = renderFleetSection(result, process.env.FLEET_NOTE?.trim() || undefined);
  writeFileSync(doc, replaceSection(readFileSync(doc, 'utf8'), FLEET_SECTION, section));
  console.log('wrote the fleet section of docs/fidelity.md');
}
console.log(fleetVerdictLine(result));
