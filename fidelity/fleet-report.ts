/** The fleet section of docs/fidelity.md from a fleet result: what runs, per-scenario figures and the verdict line. */
import { cpus, totalmem } from 'node:os';
import {
  FLEET_GROUP_WAIT,
  FLEET_QUEUE_CAPACITY,
  FLEET_SCENARIOS,
  FLEET_SCRAPE_INTERVAL,
  FLEET_SERVICE_MS,
  LOSS_PAGE_GOAL_SECONDS,
  PAGE_PIPELINE_MS,
  type FleetResult,
  type FleetRunFigures,
  type FleetScenarioName,
} from './fleet';
import { table } from './doc-sections';
import { RAMP_LEAD_GOAL_SECONDS } from './suite';

/** The marker name of the section in docs/fidelity.md (`<!-- fleet:begin -->`). */
export const FLEET_SECTION = 'fleet';

const GOALS: Record<FleetScenarioName, string> = {
  'healthy-0.3': 'no page, every run',
  'healthy-0.6': 'no page, every run',
  step: 'no page, every run',
  ramp: `the first page ≥ ${RAMP_LEAD_GOAL_SECONDS} s before the first failed request, and one FIRING and one RESOLVED per alert, every run`,
  'replica-loss': `a page naming the slowed replica ≤ ${LOSS_PAGE_GOAL_SECONDS} s after its in-process WARN, none naming the healthy one, and one FIRING and one RESOLVED per alert, every run`,
};

const TITLES: Record<FleetScenarioName, string> = {
  'healthy-0.3': 'Healthy fleet at 0.3× of its capacity',
  'healthy-0.6': 'Healthy fleet at 0.6× of its capacity',
  step: 'Step from idle to 0.6× of fleet capacity',
  ramp: 'Fleet ramp, 0.3× → 2× of fleet capacity',
  'replica-loss': 'One replica loses half its capacity at 0.6× fleet load',
};

function spread(values: readonly number[], unit = ' s'): string {
  if (values.length === 0) return '—';
  const sorted = [...values].sort((x, y) => x - y);
  const mid = (sorted.length - 1) / 2;
  const median = (sorted[Math.floor(mid)] + sorted[Math.ceil(mid)]) / 2;
  return `min ${sorted[0].toFixed(1)}${unit} / median ${median.toFixed(1)}${unit} / max ${sorted.at(-1)!.toFixed(1)}${unit}`;
}

export interface FleetSummary {
  scenario: FleetScenarioName;
  runs: number;
  met: number;
  pages: number[];
  leads: number[];
  pageAfterWarn: number[];
  flaps: number[];
}

function summarizeFleet(result: FleetResult): FleetSummary[] {
  return FLEET_SCENARIOS.map((scenario) => {
    const runs = result.runs.filter((r) => r.scenario === scenario);
    return {
      scenario,
      runs: runs.length,
      met: runs.filter((r) => r.met).length,
      pages: runs.map((r) => r.pages),
      leads: runs.flatMap((r) => (r.leadSeconds === null ? [] : [r.leadSeconds])),
      pageAfterWarn: runs.flatMap((r) => (r.loss?.pageAfterWarnSeconds == null ? [] : [r.loss.pageAfterWarnSeconds])),
      flaps: runs.filter((r) => r.scenario === 'ramp' || r.scenario === 'replica-loss').map((r) => r.flaps),
    };
  }).filter((s) => s.runs > 0);
}

function summaryText(s: FleetSummary): string {
  const parts = [`${s.met}/${s.runs} runs met`, `pages ${s.pages.join(', ')}`];
  if (s.leads.length) parts.push(`lead ${spread(s.leads)}`);
  if (s.pageAfterWarn.length) parts.push(`page after the in-process WARN ${spread(s.pageAfterWarn)}`);
  if (s.flaps.length) parts.push(`FIRINGs per alert and episode at most ${s.flaps.join(', ')}`);
  return parts.join('; ');
}

export function fleetVerdictLine(result: FleetResult): string {
  const summaries = summarizeFleet(result);
  const met = summaries.filter((s) => s.met === s.runs).length;
  return `verdict fidelity fleet: ${summaries.map((s) => `${s.scenario} ${summaryText(s)}`).join(' — ')} [${met}/${summaries.length} goals met]`;
}

const esc = (text: string) => text.replace(/\|/g, '\\|');

function perAlert(run: FleetRunFigures): string {
  if (run.alerts.length === 0) return 'none';
  // The replica's address changes every run: a for the slowed (or first) one, b for the other.
  const named = (alert: string) =>
    alert
      .replace(`on replica ${run.replicas.a}`, 'on replica a')
      .replace(`on replica ${run.replicas.b}`, 'on replica b');
  return esc(run.alerts.map((c) => `${named(c.alert)}: ${c.firing} FIRING / ${c.resolved} RESOLVED`).join('; '));
}

function row(run: FleetRunFigures): string[] {
  const failure =
    run.failureAtSeconds === null
      ? 'none'
      : `${run.failureDetail} at ${run.failureAtSeconds.toFixed(1)} s (${run.failed}/${run.requests})`;
  const first = run.firstPage
    ? esc(
        `${run.firstPage.title.replace(run.replicas.a, 'a').replace(run.replicas.b, 'b')} at ${run.firstPage.atSeconds.toFixed(1)} s`,
      )
    : '—';
  const loss = run.loss;
  const timing = loss
    ? `loss at ${loss.atSeconds.toFixed(1)} s; in-process ${loss.warn ?? 'nothing'}${loss.warnAtSeconds === null ? '' : ` at ${loss.warnAtSeconds.toFixed(1)} s`}; page naming a ${loss.pageAfterWarnSeconds === null ? 'none' : `${loss.pageAfterWarnSeconds.toFixed(1)} s after it`}; naming b: ${loss.healthyNamed}`
    : run.leadSeconds !== null
      ? `lead ${run.leadSeconds.toFixed(1)} s`
      : '—';
  const episode = run.recovery
    ? `ended at ${run.recovery.atSeconds.toFixed(1)} s; ${run.recovery.allResolvedAtSeconds === null ? 'not all resolved within the bound' : `all resolved at ${run.recovery.allResolvedAtSeconds.toFixed(1)} s`}`
    : '—';
  return [
    `${run.repeat}`,
    `${run.capacityRps.toFixed(0)} (${run.replicaCapacityRps.map((c) => c.toFixed(0)).join(' + ')})`,
    `${run.fromRps}→${run.toRps}`,
    failure,
    `${run.pages}`,
    first,
    timing,
    perAlert(run),
    episode,
    [run.worstWait.a, run.worstWait.b].map((w) => (w ? `${w.waitMs} ms (s ${w.second})` : '—')).join(' / '),
    run.met ? 'met' : `**not met**: ${esc(run.misses.join('; '))}`,
  ];
}

export function renderFleetSection(result: FleetResult, note?: string): string {
  const cpu = cpus();
  const s = result.settings;
  const lines = [
    '## Fleet: is the page as trustworthy as the in-process alert?',
    '',
    'Written by `pnpm fidelity:fleet` (fidelity/fleet.ts; `FLEET_RUNS` sets the runs of each scenario, default 5;',
    '`FLEET_SCENARIOS=ramp,step` runs a subset and leaves this section as it is; `FLEET_FROM_JSON=.tmp/fidelity/fleet-….json`',
    'rewrites it from a saved result). Its short mode, one shortened replica-loss run (its first seconds are a step',
    'from idle to 0.6×), is `test/fidelity-fleet.test.ts`, part of `pnpm test`: it asserts that every page follows',
    'an in-process raise of the replica it names, that the slowed replica is named, and that no alert fires twice.',
    'This section sits between `<!-- fleet:begin -->` and `<!-- fleet:end -->`: `pnpm fidelity` rewrites the rest of',
    'the file and keeps it.',
    '',
    'Each run starts two replicas of one server, each a process of its own (test/support/fleet-replica.ts: Fastify 5,',
    `\`start()\` of \`@infersignal/node\` with its defaults, the \`@infersignal/fastify\` plugin with an \`infer\` queue of ${FLEET_QUEUE_CAPACITY}, one`,
    `request at a time, shedding with 503 at CRITICAL; the model is a ${FLEET_SERVICE_MS} ms timer, so capacity is set by service time,`,
    'not by a CPU the two share). It measures each replica’s capacity as the single-process suite does, both at',
    'once: 5 closed-loop windows of 3 users (median), then 10 s of open-loop load at 0.6× of that figure; the',
    'capacity is the lower of the closed-loop figure and 1 / the S the replica reports at the end of it (on a busy',
    'machine a replica’s timer runs late, and its S with it). The fleet’s capacity is the sum of the two. It waits',
    'until both are calm, then starts a real Prometheus that',
    `scrapes both every ${FLEET_SCRAPE_INTERVAL} with the rules \`renderRules()\` generates (defaults) and a real Alertmanager`,
    `with the config \`renderAlertmanagerConfig()\` generates (group_wait and group_interval ${FLEET_GROUP_WAIT} instead of 30 s`,
    'and 5 m, so a run lasts a minute or two), which posts to a webhook receiver in the suite. `@infersignal/bench`',
    'offers an open-loop load on loopback, half to each replica (a round-robin balancer); a request fails on a',
    '503 or no answer within 2 s. A **page** is a FIRING notification on the webhook; the run’s clock starts',
    'once Prometheus has scraped both replicas.',
    '',
    '- **healthy-0.3 / healthy-0.6**: the fleet at 0.3× / 0.6× of its capacity for',
    `  ${s.healthySeconds} s (and ${PAGE_PIPELINE_MS / 1000} s more for a page on its way). **step**: idle for ${s.stepIdleSeconds} s, then 0.6× at once.`,
    `- **ramp**: 0.3× → ${s.rampTo}× over ${s.rampSeconds} s, one rate step per second; 8 s after the first shed the`,
    '  episode ends: the load falls back to 0.3× until every page resolved (bounded).',
    `- **replica-loss**: 0.6× for ${s.lossBaselineSeconds} s, then replica a’s service time doubles (its share is now 1.2× of`,
    '  what it can serve, b stays at 0.6×) until a page names a and 5 s more; then a gets its speed back, the',
    '  load stays, until every page resolved (bounded). The in-process WARN is a’s first raised level after the',
    '  loss (any signal, from its monitor’s alert events).',
    '- **Flaps**: FIRING and RESOLVED per alert (its name and subject), counted from the webhook payloads',
    '  (each alert of a group notification says whether it resolved); an episode should give one of each.',
    '- **Worst wait for a CPU**: the longest a replica’s main thread was runnable but waiting for a CPU in',
    '  one second of the run (Linux schedstat): a replica’s requests wait that long whatever its load, and a',
    '  second of it is a stall its detectors see as queue wait.',
    '',
    `Run: ${result.startedAt}, ${result.repeats} run(s) of each scenario, ${(result.wallSeconds / 60).toFixed(1)} min; ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}.`,
  ];
  if (note) lines.push('', `Note: ${note}`);
  for (const summary of summarizeFleet(result)) {
    lines.push(
      '',
      `### ${TITLES[summary.scenario]}`,
      '',
      `Goal: ${GOALS[summary.scenario]}. Result: ${summaryText(summary)}.`,
      '',
      table(
        [
          'run',
          'capacity req/s (a + b)',
          'offered req/s',
          'first failure',
          'pages',
          'first page',
          'timing',
          'per alert',
          'episode',
          'worst wait for a CPU (a / b)',
          'goal',
        ],
        result.runs.filter((r) => r.scenario === summary.scenario).map(row),
      ),
    );
  }
  lines.push('', '```', fleetVerdictLine(result), '```');
  return lines.join('\n');
}
