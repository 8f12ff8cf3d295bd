/** docs/fidelity.md from a fidelity result: definitions, per-scenario figures and the verdict line. */
import { cpus, totalmem } from 'node:os';
import {
  describeAlert,
  FAILING_SUBJECTS,
  FIDELITY_THRESHOLDS,
  RAMP_LEAD_GOAL_SECONDS,
  SCENARIOS,
  ARRIVAL_TOLERANCE_MS,
  type FidelityResult,
  type RunFigures,
  type ScenarioName,
} from './suite';
import { FAULT_SCENARIOS } from './faults/index';
import type { FaultRunFigures, FaultScenarioName } from './faults/types';

interface ScenarioSummary {
  scenario: ScenarioName | FaultScenarioName;
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
  step: () => 'a true precursor no later than the first failure, every run',
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
  return [...load, ...faults].filter((s) => s.runs > 0);
}

function leadText(leads: readonly number[]): string {
  if (leads.length === 0) return 'no lead (no run had a true precursor and a failure)';
  const mid = (leads.length - 1) / 2;
  const median = (leads[Math.floor(mid)] + leads[Math.ceil(mid)]) / 2;
  return `lead min ${leads[0].toFixed(1)} s / median ${median.toFixed(1)} s / max ${leads.at(-1)!.toFixed(1)} s`;
}

export function verdictLine(result: FidelityResult): string {
  const summaries = summarize(result);
  const parts = summaries.map(
    (s) => `${s.scenario} ${s.met}/${s.runs} runs met (${leadText(s.leads)}) — goal ${s.goal}`,
  );
  const met = summaries.filter((s) => s.runs > 0 && s.met === s.runs).length;
  return `verdict fidelity: ${parts.join('; ')} [${met}/${summaries.length} goals met]`;
}

function cell(run: RunFigures): string[] {
  return [
    `${run.repeat}`,
    `${run.capacityRps.toFixed(0)}`,
    `${run.fromRps}→${run.toRps}`,
    run.failureAtSeconds === null
      ? 'none'
      : `${run.failureDetail} at ${run.failureAtSeconds.toFixed(1)} s (${run.failed}/${run.requests})`,
    run.firstAlert ? describeAlert(run.firstAlert) : '—',
    run.firstTruePrecursor ? describeAlert(run.firstTruePrecursor) : '—',
    run.leadSeconds === null ? '—' : `${run.leadSeconds.toFixed(1)} s`,
    run.falseAlerts.length ? run.falseAlerts.map(describeAlert).join('; ') : 'none',
    run.worstThreadWait ? `${run.worstThreadWait.waitMs} ms (s ${run.worstThreadWait.second})` : '—',
    run.met ? 'met' : '**not met**',
  ];
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

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

const TITLES: Record<ScenarioName, string> = {
  ramp: 'Gradual overload ramp, 0.3× → 1.5× of capacity',
  step: 'Step, 0.5× → 2× of capacity',
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
  '`FIDELITY_SCENARIOS=slow-reload FIDELITY_RUNS=1 pnpm fidelity`) runs a subset and leaves this file as it is;',
  'the short mode of the fault scenarios is `test/fidelity-faults.test.ts` and the other fault test files.',
];

export function renderDoc(result: FidelityResult, note?: string): string {
  const cpu = cpus();
  const { steadySeconds, rampSeconds, stepSeconds, rows } = result.settings;
  const lines = [
    '# Fidelity: do the warnings come before the failures, and only then?',
    '',
    'Regenerated by `pnpm fidelity` (the long mode; `FIDELITY_RUNS` sets the repeats, default 5,',
    '`FIDELITY_STEADY_SECONDS` the steady run, default 600). The short mode (`FIDELITY_SHORT=1`, one',
    'shortened run of each scenario: ramp 20 s to 2.5×, step 5 s + 5 s, steady 10 s) is `test/fidelity.test.ts`,',
    'part of `pnpm test`, which asserts the same orderings on the run’s own numbers (a steady run that',
    'fails there, because the machine starved the server, must at least have announced the failure).',
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
    'load), in two phases. First 5 consecutive windows of one closed loop of 3 users, after a 400 ms',
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
    'server’s own work or a CPU it did not get. (The short mode runs the closed loop only, and sizes its',
    'ramp and step from no less than the fastest window / 1.25: it runs beside other tests, whose load',
    'can slow most windows.)',
    '',
    '**Definitions.** A request *fails* when it gets no successful response: a 503 (shed or queue full),',
    `a timeout, a connection error. The failing resources of /v1/infer are ${FAILING_SUBJECTS.join(', ')}.`,
    '- A **true precursor** is an alert (WARN or CRITICAL) about a resource that then fails, raised',
    '  before the first failed request. The alert and the failed response reach the suite over',
    `  different channels, so an alert that arrives within ${ARRIVAL_TOLERANCE_MS} ms after the failure counts as raised no`,
    '  later than it (its lead is then slightly negative). The **lead** is the time from the first true',
    '  precursor to the first failed request.',
    '- A **false alert** is any alert in a run where nothing fails, or an alert about a subject that does',
    '  not fail (another queue, another model, a device).',
    '- A process-wide alert (no subject: event loop, …) in a run that fails is listed as neither.',
    '- The multiple after an alert (`0.42×`) is the offered load, as a multiple of the measured capacity,',
    '  when it was seen.',
    '',
    ...FAULT_TEXT,
    '',
    `Scenario lengths: ramp ${rampSeconds} s (one rate step per second), step ${stepSeconds} s + ${stepSeconds} s, steady ${steadySeconds} s.`,
    `Server thresholds: \`${JSON.stringify(FIDELITY_THRESHOLDS)}\` (the demo's: rate and wait windows of`,
    'seconds, not the production defaults of tens of seconds, so a signal follows a load that changes',
    'within seconds); everything else is core’s default.',
    '',
    `Run: ${result.startedAt}, ${result.repeats} repeat(s) of each scenario, ${(result.wallSeconds / 60).toFixed(1)} min; ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}.`,
  ];
  if (note) lines.push('', `Note: ${note}`);
  for (const summary of summarize(result)) {
    const fault = FAULT_SCENARIOS.find((f) => f.name === summary.scenario);
    if (fault) {
      lines.push(
        '',
        `## Fault: ${fault.name} (expected signal ${fault.expectedSignals.map((signal) => `\`${signal}\``).join(' or ')})`,
        '',
        `Failure: ${fault.failureDefinition}.`,
        '',
        `Goal: ${summary.goal}. Result: ${summary.met}/${summary.runs} runs met; ${leadText(summary.leads)}.`,
        '',
        table(
          [
            'run',
            'conditions',
            'first failure',
            'first true precursor',
            'lead',
            'other alerts',
            'false alerts',
            'goal',
          ],
          (result.faults ?? []).filter((r) => r.scenario === fault.name).map(faultCell),
        ),
      );
      continue;
    }
    const runs = result.runs.filter((r) => r.scenario === summary.scenario);
    lines.push(
      '',
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
          'server thread’s worst wait for a CPU',
          'goal',
        ],
        runs.map(cell),
      ),
    );
  }
  lines.push('', '```', verdictLine(result), '```', '');
  return lines.join('\n');
}
