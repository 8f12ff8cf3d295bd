/** docs/fidelity.md from a fidelity result: definitions, per-scenario figures and the verdict line. */
import { cpus, totalmem } from 'node:os';
import {
  describeAlert,
  FAILING_SUBJECTS,
  FIDELITY_THRESHOLDS,
  RAMP_LEAD_GOAL_SECONDS,
  SCENARIOS,
  HALVING_LOAD,
  HEAP_LEAK,
  ARRIVAL_TOLERANCE_MS,
  type FidelityResult,
  type RunFigures,
  type ScenarioName,
} from './suite';
import { FAULT_SCENARIOS } from './faults/index';
import type { FaultRunFigures, FaultScenarioName } from './faults/types';
import { block, keepForeignBlocks, readBlocks, table } from './doc-sections';
import { HEAP_LEAD_GOAL, type HeapLeakFigures, type HeapLeakRun } from './heap-leak';

interface ScenarioSummary {
  scenario: ScenarioName | FaultScenarioName | typeof HEAP_LEAK;
  runs: number;
  met: number;
  /** Leads of the runs that had a true precursor and a failure (s). */
  leads: number[];
  goal: string;
}

const GOALS: Record<ScenarioName, (short: boolean) => string> = {
  ramp: (short) =>
    short
      ? 'a true precursor no later than the first failure, every run'
      : `a true precursor ≥ ${RAMP_LEAD_GOAL_SECONDS} s before the first failure, every run`,
  step: (short) =>
    short
      ? 'a true precursor no later than the first failure, every run'
      : 'a true precursor strictly before the first failure (lead > 0), every run',
  halving: (short) =>
    short
      ? 'a true precursor no later than the first failure, every run'
      : 'a true precursor strictly before the first failure (lead > 0), every run',
  steady: () => 'no failure and no alert of any signal, every run',
};

function summary(
  scenario: ScenarioSummary['scenario'],
  runs: readonly (RunFigures | FaultRunFigures)[],
  goal: string,
): ScenarioSummary {
  return {
    scenario,
    runs: runs.length,
    met: runs.filter((r) => r.met).length,
    leads: runs.flatMap((r) => (r.leadSeconds === null ? [] : [r.leadSeconds])).sort((a, b) => a - b),
    goal,
  };
}

/** One summary per scenario that ran (all of them, unless a subset was chosen), load scenarios first. */
function summarize(result: FidelityResult): ScenarioSummary[] {
  const load = SCENARIOS.map((scenario) =>
    summary(
      scenario,
      result.runs.filter((r) => r.scenario === scenario),
      GOALS[scenario](result.short),
    ),
  );
  // Results written before fault scenarios existed have no `faults`.
  const faults = FAULT_SCENARIOS.map((scenario) =>
    summary(
      scenario.name,
      (result.faults ?? []).filter((r) => r.scenario === scenario.name),
      scenario.goal,
    ),
  );
  const heap = result.heapLeak ? [heapSummary(result.heapLeak)] : [];
  return [...load, ...faults, ...heap].filter((s) => s.runs > 0);
}

const HEAP_GOAL = `heap_exhaustion or heap_headroom ≥ ${HEAP_LEAD_GOAL.seconds} s and ≥ ${HEAP_LEAD_GOAL.share * 100} % of the leak's life before V8 aborts the process, every run of every cell; nothing raised by a healthy process`;

function heapSummary(heap: HeapLeakFigures): ScenarioSummary {
  return {
    scenario: HEAP_LEAK,
    runs: heap.runs.length + heap.healthy.length,
    met: heap.runs.filter((r) => r.met).length + heap.healthy.filter((r) => r.met).length,
    leads: heap.runs.flatMap((r) => (r.leadSeconds === null ? [] : [r.leadSeconds])).sort((a, b) => a - b),
    goal: HEAP_GOAL,
  };
}

function leadText(leads: readonly number[]): string {
  if (leads.length === 0) return 'no lead (no run had a true precursor and a failure)';
  const mid = (leads.length - 1) / 2;
  const median = (leads[Math.floor(mid)] + leads[Math.ceil(mid)]) / 2;
  return `lead min ${leads[0].toFixed(1)} s / median ${median.toFixed(1)} s / max ${leads.at(-1)!.toFixed(1)} s`;
}

export function verdictLine(result: FidelityResult): string {
  return verdictOf(
    summarize(result).map((s) => ({
      scenario: s.scenario,
      met: s.met,
      runs: s.runs,
      lead: leadText(s.leads),
      goal: s.goal,
    })),
  );
}

interface VerdictPart {
  scenario: string;
  met: number;
  runs: number;
  lead: string;
  goal: string;
}

function verdictOf(parts: readonly VerdictPart[]): string {
  const text = parts.map((s) => `${s.scenario} ${s.met}/${s.runs} runs met (${s.lead}) — goal ${s.goal}`);
  const met = parts.filter((s) => s.runs > 0 && s.met === s.runs).length;
  return `verdict fidelity: ${text.join('; ')} [${met}/${parts.length} goals met]`;
}

/** A section's verdict, read back from its `Goal: … Result: …` line (the line every section has). */
function verdictPartOf(scenario: string, section: string): VerdictPart | null {
  const m = /^Goal: (.*)\. Result: (\d+)\/(\d+) runs met; (.*)\.$/m.exec(section);
  return m ? { scenario, goal: m[1]!, met: Number(m[2]), runs: Number(m[3]), lead: m[4]! } : null;
}

function cell(run: RunFigures): string[] {
  return [
    `${run.repeat}`,
    `${run.capacityRps.toFixed(0)}`,
    run.halvedAtSeconds === null
      ? `${run.fromRps}→${run.toRps}`
      : `${run.fromRps}, CPU halved at ${run.halvedAtSeconds.toFixed(1)} s`,
    run.failureAtSeconds === null
      ? 'none'
      : `${run.failureDetail} at ${run.failureAtSeconds.toFixed(1)} s (${run.failed}/${run.requests})`,
    run.firstAlert ? describeAlert(run.firstAlert) : '—',
    run.firstTruePrecursor ? describeAlert(run.firstTruePrecursor) : '—',
    run.leadSeconds === null ? '—' : `${run.leadSeconds.toFixed(1)} s`,
    run.falseAlerts.length ? run.falseAlerts.map(describeAlert).join('; ') : 'none',
    ageVersusWait(run),
    run.worstThreadWait ? `${run.worstThreadWait.waitMs} ms (s ${run.worstThreadWait.second})` : '—',
    run.met ? 'met' : '**not met**',
  ];
}

function at(seconds: number | null): string {
  return seconds === null ? 'never' : `${seconds.toFixed(1)} s`;
}

/** `queue_age 16.4 s / queue_wait 18.6 s`: each signal's first rise about a failing queue. */
function ageVersusWait(run: RunFigures): string {
  return `${at(run.firstAgeSeconds)} / ${at(run.firstWaitSeconds)}`;
}

/**
 * The finding on queue age against the wait histogram over a scenario's runs
 * that failed: which rose first, by how much (median), and in how many runs.
 */
export function ageFinding(runs: readonly RunFigures[]): string {
  const failed = runs.filter((r) => r.failureAtSeconds !== null);
  if (failed.length === 0)
    return 'Queue age against queue wait: no run failed, so neither had an overload to announce.';
  const both = failed.filter((r) => r.firstAgeSeconds !== null && r.firstWaitSeconds !== null);
  const diffs = both.map((r) => r.firstWaitSeconds! - r.firstAgeSeconds!).sort((a, b) => a - b);
  const ageFirst = diffs.filter((d) => d > 0).length;
  const waitFirst = diffs.filter((d) => d < 0).length;
  const ageOnly = failed.filter((r) => r.firstAgeSeconds !== null && r.firstWaitSeconds === null).length;
  const waitOnly = failed.filter((r) => r.firstAgeSeconds === null && r.firstWaitSeconds !== null).length;
  const neither = failed.filter((r) => r.firstAgeSeconds === null && r.firstWaitSeconds === null).length;
  const mid = (diffs.length - 1) / 2;
  const median = diffs.length ? (diffs[Math.floor(mid)]! + diffs[Math.ceil(mid)]!) / 2 : 0;
  const beforeFailure = (pick: (r: RunFigures) => number | null) =>
    failed.filter((r) => pick(r) !== null && pick(r)! <= r.failureAtSeconds!).length;
  const parts = [
    `Queue age against queue wait (column "queue_age / queue_wait", each signal's first rise about a failing queue), over the ${failed.length} run(s) that failed:`,
    both.length
      ? `queue_age rose first in ${ageFirst}, queue_wait first in ${waitFirst}${both.length - ageFirst - waitFirst ? `, both at once in ${both.length - ageFirst - waitFirst}` : ''} of the ${both.length} where both rose (queue_wait − queue_age: median ${median.toFixed(1)} s, range ${diffs[0]!.toFixed(1)} to ${diffs.at(-1)!.toFixed(1)} s)`
      : 'in no run did both rise',
    `${ageOnly ? `; only queue_age rose in ${ageOnly}` : ''}${waitOnly ? `; only queue_wait rose in ${waitOnly}` : ''}${neither ? `; neither in ${neither}` : ''}.`,
    `queue_age rose no later than the first failure in ${beforeFailure((r) => r.firstAgeSeconds)}, queue_wait in ${beforeFailure((r) => r.firstWaitSeconds)} of ${failed.length}.`,
  ];
  const verdict =
    ageFirst + ageOnly > waitFirst + waitOnly
      ? 'queue age announced this overload earlier than the wait histogram'
      : ageFirst + ageOnly === waitFirst + waitOnly
        ? 'neither queue age nor the wait histogram announced this overload earlier than the other'
        : 'queue age did not announce this overload earlier than the wait histogram';
  return `${parts[0]} ${parts[1]}${parts[2]} ${parts[3]} In short, ${verdict}: first in ${ageFirst + ageOnly} run(s) against ${waitFirst + waitOnly}.`;
}

function faultCell(run: FaultRunFigures): string[] {
  const others = run.alerts.filter((a) => a !== run.firstTruePrecursor && a.verdict !== 'false');
  return [
    `${run.repeat}`,
    run.conditions,
    run.failureAtSeconds === null ? 'none' : `${run.failureDetail} at ${run.failureAtSeconds.toFixed(1)} s`,
    run.firstTruePrecursor ? describeAlert(run.firstTruePrecursor) : '—',
    run.leadSeconds === null ? '—' : `${run.leadSeconds.toFixed(1)} s`,
    others.length ? others.map((a) => `${describeAlert(a)} (${a.verdict})`).join('; ') : 'none',
    run.falseAlerts.length ? run.falseAlerts.map(describeAlert).join('; ') : 'none',
    run.met ? 'met' : '**not met**',
  ];
}

const TITLES: Record<ScenarioName, string> = {
  ramp: 'Gradual overload ramp, 0.3× → 1.5× of capacity',
  step: 'Step, 0.5× → 2× of capacity',
  halving: `Capacity halved at ${HALVING_LOAD}× load (a CPU-bound neighbour joins the server's core)`,
  steady: 'Steady 60 % of capacity, CPU-bound neighbour on one core',
};

/**
 * How the fault scenarios are run and judged. Each scenario's own failure
 * definition is printed in its section.
 */
const FAULT_TEXT = [
  '**Fault scenarios** come after the load scenarios: a resource other than request capacity degrades',
  '(`slow-reload`: the model store; `stream-drops`: streaming clients; the others: device memory, the',
  'JS heap) while the server takes a light, steady load, until something fails. Each run starts its own',
  'server, first runs a healthy phase (the same load and operations, the resource at its usual state),',
  'then degrades the resource step by step. Each scenario defines its failure (what a user or an',
  'orchestrator would count as one) and the resources it is about, and names the signal that must',
  'announce it. The definitions above hold, with two additions: an alert about a subject in the healthy',
  'phase is **false** whatever fails later (nothing was degraded yet), and the goal is a true precursor',
  'of the expected signal before the first failure with no false alert. `FIDELITY_SCENARIOS` (e.g.',
  '`FIDELITY_SCENARIOS=slow-reload FIDELITY_RUNS=1 pnpm fidelity`) runs a subset and rewrites only the sections',
  'of the scenarios it ran, each with the run it came from, and the verdict line (read from every section);',
  'the short mode of the fault scenarios is `test/fidelity-faults.test.ts` and the other fault test files.',
];

/** The name of a scenario's block in the doc. */
const sectionBlock = (scenario: string): string => `scenario-${scenario}`;

/** Every scenario the doc can hold, in its order. */
function scenarioOrder(): string[] {
  return [...SCENARIOS, ...FAULT_SCENARIOS.map((f) => f.name), HEAP_LEAK];
}

function runLine(result: FidelityResult, note: string | undefined): string {
  const cpu = cpus();
  const line = `Run: ${result.startedAt}, ${result.repeats} repeat(s) of each scenario it ran, ${(result.wallSeconds / 60).toFixed(1)} min in all; ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}.`;
  return note ? `${line} Note: ${note}` : line;
}

function heapSection(heap: HeapLeakFigures, summary: ScenarioSummary): string[] {
  const cells = new Map<string, HeapLeakRun[]>();
  for (const run of heap.runs) {
    const key = `${run.node}|${run.limitMiB}|${run.leakMiBs}`;
    cells.set(key, [...(cells.get(key) ?? []), run]);
  }
  const first = (run: HeapLeakRun): string => {
    const rises = [
      run.firstExhaustion && { name: 'heap_exhaustion', ...run.firstExhaustion },
      run.firstHeadroom && { name: 'heap_headroom', ...run.firstHeadroom },
    ].filter((r) => r !== null);
    const earliest = rises.sort((a, b) => a!.seconds - b!.seconds)[0];
    return earliest ? `${earliest.name} ${earliest.level.toUpperCase()}` : 'none';
  };
  const list = (runs: HeapLeakRun[], pick: (r: HeapLeakRun) => string): string => runs.map(pick).join(', ');
  const rows = [...cells.values()].map((runs) => [
    runs[0]!.node,
    `${runs[0]!.limitMiB}`,
    `${runs[0]!.leakMiBs}`,
    `${runs.filter((r) => r.met).length}/${runs.length}`,
    list(runs, (r) => (r.diedSeconds === null ? 'survived' : r.diedSeconds.toFixed(0))),
    [...new Set(runs.map(first))].join('; '),
    list(runs, (r) => (r.leadSeconds === null ? '—' : r.leadSeconds.toFixed(1))),
    list(runs, (r) => (r.leadShare === null ? '—' : `${(r.leadShare * 100).toFixed(0)} %`)),
    [...new Set(runs.map((r) => r.abort ?? 'no abort'))].join('; '),
  ]);
  const dropped = heap.dropped.length
    ? `Left out: ${heap.dropped.map((d) => `Node ${d.node} ${d.limitMiB} MiB at ${d.leakMiBs} MiB/s (expected life ${(d.expectedLifeSeconds / 60).toFixed(0)} min)`).join(', ')}: an expected life (the leak filling 80 % of the limit) over the bound of ${heap.lifeBoundSeconds} s, which keeps the whole grid within the session that runs it; \`packages/core/test/heap.test.ts\` simulates those rates (0.5 MiB/s up to 1 GiB) against the same detector, and \`pnpm heap-leak-cells --limit 1024 --rate 0.5\` runs one for real.`
    : `No cell left out (life bound ${heap.lifeBoundSeconds} s).`;
  return [
    `## Heap leak: steady leaks until V8 aborts the process (expected signal \`heap_exhaustion\` or \`heap_headroom\`)`,
    '',
    'Each run is a real Node process (test/support/heap-leak-child.ts) started with `--max-old-space-size=LIMIT`',
    "and a monitor as a server runs it (core's defaults, the one-second tick): 2 s healthy, then it keeps",
    `LEAK MiB/s of small objects (64.7 bytes each with their array slot, what every major GC must mark) under ${heap.garbageMiBs} MiB/s`,
    'of short-lived garbage, paced by the wall clock, until V8 aborts it ("Ineffective mark-compacts near heap',
    'limit" or "Reached heap limit"). The lead is from the first heap alert to the process\'s end; the share is the',
    "lead over the leak's life (its start to the abort). The runs of all cells go side by side, up to",
    `${heap.concurrency} cells and ${(heap.memoryBudgetMiB / 1024).toFixed(0)} GiB of heap limits at once, the longest first (${(heap.wallSeconds / 60).toFixed(1)} min in all). The healthy runs`,
    'hold a steady cache of half the limit, a 64th of it replaced every 100 ms (objects that die old, so major GCs',
    `come and the heap is a sawtooth over a steady live set), under the same garbage, for ${heap.healthy[0]?.seconds ?? 0} s each,`,
    'beside the leak cells. The series exist from the first scrape, before any major GC:',
    '`packages/core/test/heap.test.ts` ("every other heap series from the first scrape").',
    '',
    dropped,
    '',
    `Goal: ${summary.goal}. Result: ${summary.met}/${summary.runs} runs met; ${leadText(summary.leads)}.`,
    '',
    table(
      [
        'Node',
        'limit MiB',
        'leak MiB/s',
        'runs met',
        'died after (s)',
        'first alert',
        'lead (s)',
        "share of the leak's life",
        'end',
      ],
      rows,
    ),
    '',
    table(
      ['healthy: Node', 'limit MiB', 'cache MiB', 'length', 'alerts', 'major GCs', 'live ratio at the end', 'goal'],
      heap.healthy.map((h) => [
        h.node,
        `${h.limitMiB}`,
        `${h.cacheMiBs}`,
        `${h.seconds} s`,
        h.alerts.length
          ? h.alerts.map((a) => `${a.signal} ${a.level.toUpperCase()} at ${a.seconds.toFixed(0)} s`).join('; ')
          : 'none',
        `${h.majorGcs ?? '?'}`,
        h.liveRatio === null ? '?' : h.liveRatio.toFixed(2),
        h.met ? 'met' : '**not met**',
      ]),
    ),
  ];
}

/** The body of one scenario's section, from this run. */
function freshSection(result: FidelityResult, summary: ScenarioSummary, run: string): string[] {
  if (summary.scenario === HEAP_LEAK) return [...heapSection(result.heapLeak!, summary), '', run];
  const fault = FAULT_SCENARIOS.find((f) => f.name === summary.scenario);
  if (fault)
    return [
      `## Fault: ${fault.name} (expected signal ${fault.expectedSignals.map((signal) => `\`${signal}\``).join(' or ')})`,
      '',
      `Failure: ${fault.failureDefinition}.`,
      '',
      `Goal: ${summary.goal}. Result: ${summary.met}/${summary.runs} runs met; ${leadText(summary.leads)}.`,
      '',
      table(
        ['run', 'conditions', 'first failure', 'first true precursor', 'lead', 'other alerts', 'false alerts', 'goal'],
        (result.faults ?? []).filter((r) => r.scenario === fault.name).map(faultCell),
      ),
      '',
      run,
    ];
  const runs = result.runs.filter((r) => r.scenario === summary.scenario);
  return [
    `## ${TITLES[summary.scenario as ScenarioName]}`,
    '',
    `Goal: ${summary.goal}. Result: ${summary.met}/${summary.runs} runs met; ${leadText(summary.leads)}.`,
    '',
    table(
      [
        'run',
        'capacity req/s',
        'offered req/s',
        'first failure',
        'first alert',
        'first true precursor',
        'lead',
        'false alerts',
        'queue_age / queue_wait',
        'server thread’s worst wait for a CPU',
        'goal',
      ],
      runs.map(cell),
    ),
    '',
    ageFinding(runs),
    ...notOverloadedText(result, summary.scenario as ScenarioName),
    '',
    run,
  ];
}

/** The runs of a scenario in which nothing failed, each run again (see `notOverloaded` in suite.ts). */
function notOverloadedText(result: FidelityResult, scenario: ScenarioName): string[] {
  const runs = (result.notOverloaded ?? []).filter((r) => r.scenario === scenario);
  if (runs.length === 0) return [];
  const listed = runs.map(
    (r) =>
      `#${r.repeat} at ${r.fromRps}→${r.toRps} req/s of ${r.capacityRps.toFixed(0)} (alerts: ${r.alerts.length ? r.alerts.map(describeAlert).join('; ') : 'none'})`,
  );
  return [
    '',
    `Not overloaded, so run again on a fresh server (not counted above): ${runs.length} run(s) in which nothing failed, the machine's other load having eased after the capacity measurement: ${listed.join(', ')}.`,
  ];
}

/**
 * The sections of an earlier doc, by scenario: its blocks, or, in a doc
 * written before sections were blocks, its `## ` sections recognized by
 * their titles (each then gets the earlier run's `Run:` line, which stood
 * in that doc's header).
 */
function previousSections(previous: string): Map<string, string> {
  const sections = new Map<string, string>();
  for (const b of readBlocks(previous))
    if (b.name.startsWith('scenario-')) sections.set(b.name.slice('scenario-'.length), b.body);
  if (sections.size > 0) return sections;
  const runLineBefore = /^Run: .*$/m.exec(previous)?.[0];
  const byTitle = new Map<string, string>(Object.entries(TITLES).map(([name, title]) => [title, name]));
  const text = previous.split(/\n```\nverdict fidelity/)[0]!;
  for (const part of text.split(/\n(?=## )/).slice(1)) {
    const title = /^## (.*)$/m.exec(part)![1]!;
    const name = byTitle.get(title) ?? /^Fault: (\S+)/.exec(title)?.[1];
    if (name === undefined) continue;
    sections.set(name, runLineBefore ? `${part.trimEnd()}\n\n${runLineBefore}` : part.trimEnd());
  }
  return sections;
}

/**
 * docs/fidelity.md: the definitions, one section per scenario and the
 * verdict line. With `previous` (the doc as it stands), the sections of the
 * scenarios this run did not run are kept from it, the verdict line is read
 * from every section, and any other writer's blocks stay at the end.
 */
export function renderDoc(result: FidelityResult, note?: string, previous = ''): string {
  const { steadySeconds, rampSeconds, stepSeconds, rows } = result.settings;
  const lines = [
    '# Fidelity: do the warnings come before the failures, and only then?',
    '',
    'Regenerated by `pnpm fidelity` (the long mode; `FIDELITY_RUNS` sets the repeats, default 5,',
    '`FIDELITY_STEADY_SECONDS` the steady run, default 600). The short mode (`FIDELITY_SHORT=1`, one',
    'shortened run of each scenario: ramp 20 s to 2.5×, step 5 s + 5 s, steady 10 s) is `test/fidelity.test.ts`,',
    'part of `pnpm test`, which asserts the same orderings on the run’s own numbers (a steady run that',
    'fails there, because the machine starved the server, must at least have announced the failure).',
    'The heap-leak cells run in real processes of their own (fidelity/heap-leak.ts; `pnpm heap-leak-cells`',
    'runs single cells); their short check is `test/heap-leak-process.test.ts`.',
    '',
    'Each run starts the fastify-onnx example server (examples/fastify-onnx, ONNX Runtime, one model',
    `slot, ${rows} rows per batch) as a child process on 127.0.0.1, measures its capacity, waits until no`,
    'signal is raised and every queue’s utilization is under 0.5 (a measurement can leave a queue near its',
    'bound with nothing raised yet), then offers an open-loop load to `POST /v1/infer` with `@infersignal/bench`.',
    'Alerts are the server’s own alert events (what a listener or the webhook gets: the server prints',
    'each, naming its subject), timed when they reach the suite; the bench also scrapes /metrics every',
    '500 ms, and the earlier of the two sightings counts. (A scrape alone sees a level change late',
    'exactly when it matters: an overloaded server answers /metrics from the same busy event loop.)',
    'A fresh server per run, so no earlier run shaped its detectors (the servers of a repeat start side by',
    'side and wait idle for their turn).',
    '',
    '**Capacity** is measured before every run, on that server (for steady, with the neighbour already',
    'running: on 2 cores it takes half the machine, and 60 % of the capacity without it is not a healthy',
    'load; for halving, with the server pinned to core 0, where its neighbour joins it later), in two phases. First 5 consecutive windows of one closed loop of 3 users, after a 400 ms',
    'warm-up (the queue runs one request at a time, so a window’s throughput is 1 / the service time of',
    'the whole request path); the closed-loop figure is the median window. A short closed loop overstates',
    'what the server sustains (ONNX Runtime runs the model on the main thread, and under open-loop',
    'arrivals each run also waits behind other requests’ HTTP work, more of it the higher the load: S',
    'read 13–17 ms under a steady open-loop load of 40 req/s where the windows read 8.5–11 ms), so an',
    'open-loop phase of 20 s at 60 % of that figure (the steady scenario’s load) follows, and the',
    'capacity is the lowest of the closed-loop figure, 1 / the highest S the server reports during it',
    '(read at 10, 15 and 20 s, each over its 10 s service window): the S its `capacity` alert divides',
    'by, in the regime the scenarios run in, and the rate that would keep the server’s main thread busy',
    'all the time (the phase’s rate / the share of its last 10 s the thread was on a CPU or waiting for',
    'one, from /proc schedstat: S covers the model run only, the thread also does the HTTP work). The',
    'JSON keeps both phases’ figures, and for each run the server’s main thread second by second around',
    'the first failure or alert (ms on a CPU, ms waiting for one): whether a slow second was the',
    'server’s own work or a CPU it did not get. The overload scenarios (ramp, step, halving) are sized from',
    'no less than the closed-loop figure and the fastest window / 1.25 (the column "capacity req/s" is that',
    'size): on a shared machine others’ load can slow most windows and then ease, and a load sized from',
    'the lower figure then overloads nothing; steady keeps the lower figure, under which it must stay',
    'healthy. (The short mode runs the closed loop only, and sizes its ramp and step the same way.)',
    '',
    `**Halving** offers ${HALVING_LOAD}× of that size throughout; when the first stage ends a busy loop pinned to core 0 starts,`,
    'beside the server pinned there (every thread, `taskset -a`), and takes half the core: the same load is then',
    `${(HALVING_LOAD * 2).toFixed(1)}× of what the server has, and its queue fills at a fifth of that, as it would behind a CPU-bound neighbour or`,
    'a model that became twice as slow.',
    '',
    '**Definitions.** A request *fails* when it gets no successful response: a 503 (shed or queue full),',
    `a timeout (2 s), a connection error. The failing resources of /v1/infer are ${FAILING_SUBJECTS.join(', ')}.`,
    '- A **true precursor** is an alert (WARN or CRITICAL) about a resource that then fails, raised',
    '  before the first failed request. The alert and the failed response reach the suite over',
    `  different channels, so an alert that arrives within ${ARRIVAL_TOLERANCE_MS} ms after the failure counts as raised no`,
    '  later than it (its lead is then slightly negative); the step and halving goals ask for a lead',
    '  above 0, so there it does not help. The **lead** is the time from the first true',
    '  precursor to the first failed request.',
    '- A **false alert** is any alert in a run where nothing fails, or an alert about a subject that does',
    '  not fail (another queue, another model, a device).',
    '- A process-wide alert (no subject: event loop, …) in a run that fails is listed as neither.',
    '- The multiple after an alert (`0.42×`) is the offered load, as a multiple of the measured capacity,',
    '  when it was seen (after a halving, of what is left).',
    '- **queue_age / queue_wait**: the first rise (any level) of each signal about a failing queue: the age',
    '  of the oldest request still waiting against the wait histogram, which records a wait only when the',
    '  request leaves the queue.',
    '',
    ...FAULT_TEXT,
    '',
    `Scenario lengths: ramp ${rampSeconds} s (one rate step per second), step ${stepSeconds} s + ${stepSeconds} s, halving ${stepSeconds} s + ${stepSeconds + 15} s, steady ${steadySeconds} s.`,
    `Server thresholds: \`${JSON.stringify(FIDELITY_THRESHOLDS)}\` (the demo's: rate and wait windows of`,
    'seconds, not the production defaults of tens of seconds, so a signal follows a load that changes',
    'within seconds); everything else is core’s default.',
  ];
  const run = runLine(result, note);
  const fresh = new Map<string, string>();
  for (const summary of summarize(result)) fresh.set(summary.scenario, freshSection(result, summary, run).join('\n'));
  const earlier = previousSections(previous);
  const parts: VerdictPart[] = [];
  for (const scenario of scenarioOrder()) {
    const body = fresh.get(scenario) ?? earlier.get(scenario);
    if (body === undefined) continue;
    lines.push('', block(sectionBlock(scenario), body));
    const part = verdictPartOf(scenario, body);
    if (part) parts.push(part);
  }
  lines.push('', '```', verdictOf(parts), '```', '');
  return keepForeignBlocks(lines.join('\n'), previous, (name) => !name.startsWith('scenario-'));
}
