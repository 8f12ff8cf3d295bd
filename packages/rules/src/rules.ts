/**
 * Prometheus recording and alerting rules generated from the monitor's
 * thresholds. One group per signal; recording rules first in each group so
 * the alerts of the same evaluation read fresh values (rules of a group run
 * in order, groups run independently).
 */
import { stringify } from 'yaml';
import { ruleKit } from './kit';
import { LABEL, recordBase } from './names';
import { formatDuration, humanPercent, humanSeconds, percentileName, quantileSuffix } from './duration';
import { holdFor, levelHold, resolveOptions, type GeneratorOptions, type ResolvedOptions } from './options';
import {
  FLEET_QUEUE_KEYS,
  QUEUE_KEYS,
  QUEUE_RECORD_LEVEL,
  REPLICA,
  alert,
  by,
  onReplica,
  recordName,
  signalLevel,
  type AlertingRule,
  type RecordingRule,
  type RuleFile,
  type RuleGroup,
} from './rule-parts';
import { capacityGroup } from './rules-runtime';

export type { AlertingRule, RuleFile } from './rule-parts';
export { RUNBOOK_ANCHORS } from './rule-parts';

/** Name of the recorded queue-wait quantile (the dashboard reads the same series). */
export function queueWaitQuantileRecord(quantile: number): string {
  return recordName([...QUEUE_RECORD_LEVEL, LABEL.model], recordBase('queueWait'), quantileSuffix(quantile));
}

/**
 * Queue wait and occupancy page on the level core's detectors announced
 * (`infersignal.signal.level`), per replica: the same quantile, window,
 * recent-requests gate, hysteresis and keep as in process, so a drained
 * burst or one slow scrape cannot page when the process stays quiet. The
 * value shown is Prometheus's own quantile or occupancy of that replica.
 * The tail alert has no in-process detector and reads the histogram.
 */
function queueGroup(o: ResolvedOptions): RuleGroup {
  const { metric, bucket } = o.names;
  const q = o.thresholds.queue;
  const hold = holdFor(o, q.forSeconds);
  const level = levelHold(o);
  const keep = formatDuration(q.keepFiringSeconds);
  const quantiles = [...new Set([0.5, 0.95, 0.99, q.waitQuantile, o.tailQuantile])].sort((a, b) => a - b);
  const recordings: RecordingRule[] = quantiles.map((quantile) => ({
    record: queueWaitQuantileRecord(quantile),
    expr: `histogram_quantile(${quantile}, sum ${by('le', ...QUEUE_KEYS, LABEL.model)} (rate(${bucket('queueWait')}[${o.rateWindow}])))`,
  }));
  const wait = `max ${by(...QUEUE_KEYS)} (${queueWaitQuantileRecord(q.waitQuantile)})`;
  const tail = queueWaitQuantileRecord(o.tailQuantile);
  const on = onReplica(LABEL.queue);
  const waitLevel = signalLevel(o, 'queue_wait', [LABEL.queue]);
  const occupancyLevel = signalLevel(o, 'queue_occupancy', [LABEL.queue]);
  const queueWhere = `Queue {{ $labels.${LABEL.queue} }} on replica ${REPLICA} ({{ $labels.job }})`;
  const where = `{{ $labels.${LABEL.model} }} on queue {{ $labels.${LABEL.queue} }}, replica ${REPLICA} ({{ $labels.job }})`;
  const pq = percentileName(q.waitQuantile);
  const occupancy = `max ${by(...QUEUE_KEYS)} (${metric('queueOccupancy')})`;
  const oldest = `max ${by(...QUEUE_KEYS)} (${metric('queueWaitOldest')})`;
  const ageLevel = signalLevel(o, 'queue_age', [LABEL.queue]);
  // Per slot: while requests wait, every slot is busy, so the requests in flight are the slots.
  const pendingPerSlot = `max ${by(...QUEUE_KEYS)} (${metric('queueWaitPending')} / clamp_min(${metric('queueInFlight')}, 1))`;
  const pendingLevel = signalLevel(o, 'queue_pending_wait', [LABEL.queue]);
  const drain = `max ${by(...QUEUE_KEYS)} (${metric('queueTokensDrainTime')})`;
  const tokenLevel = signalLevel(o, 'queue_token_backlog', [LABEL.queue]);
  const held = (what: string) =>
    `the in-process ${what} detector (same thresholds, window, hysteresis and keep) raised its level`;
  return {
    name: 'infersignal.queue',
    rules: [
      ...recordings,
      alert(
        o,
        'InferSignalQueueWaitHigh',
        'queue_wait',
        'warning',
        `${wait} and ${on} (${waitLevel} >= 1)`,
        level,
        `${pq} queue wait above ${humanSeconds(q.waitWarnSeconds)}`,
        `${queueWhere}: ${held('queue_wait')} to WARN, ${pq} wait above ${humanSeconds(q.waitWarnSeconds)} (thresholds.queue.waitWarnSeconds); Prometheus reads ${pq} {{ $value | humanizeDuration }} over ${o.rateWindow}. Requests wait before inference starts: the replica is close to saturation.`,
        // The page keeps firing as core keeps its WARN (thresholds.queue.keepFiringSeconds), so a missed scrape does not end it.
        keep,
      ),
      alert(
        o,
        'InferSignalQueueWaitCritical',
        'queue_wait',
        'critical',
        `${wait} and ${on} (${waitLevel} >= 2)`,
        level,
        `${pq} queue wait above ${humanSeconds(q.waitCriticalSeconds)}`,
        `${queueWhere}: ${held('queue_wait')} to CRITICAL, ${pq} wait above ${humanSeconds(q.waitCriticalSeconds)} (thresholds.queue.waitCriticalSeconds); Prometheus reads ${pq} {{ $value | humanizeDuration }} over ${o.rateWindow}. The queue is saturated and sheds; drain this replica or scale out.`,
        // In process CRITICAL lowers at once (it sheds); the page keeps for the same time as the WARN, so one episode is one page.
        keep,
      ),
      alert(
        o,
        'InferSignalQueueWaitTailHigh',
        'queue_wait',
        'warning',
        `${tail} > ${o.tailSeconds}`,
        hold,
        `${percentileName(o.tailQuantile)} queue wait above ${humanSeconds(o.tailSeconds)}`,
        `${percentileName(o.tailQuantile)} queue wait of ${where} is {{ $value | humanizeDuration }}, above ${humanSeconds(o.tailSeconds)} for ${hold}. The tail waits even if the median does not.`,
      ),
      alert(
        o,
        'InferSignalQueueOccupancyHigh',
        'queue_occupancy',
        'warning',
        `${occupancy} and ${on} (${occupancyLevel} >= 1)`,
        level,
        `Queue occupancy at or above ${humanPercent(q.occupancyWarn)}`,
        `${queueWhere} is {{ $value | humanizePercentage }} full (waiting + in flight over capacity): ${held('queue_occupancy')} to WARN, at or above ${humanPercent(q.occupancyWarn)} (thresholds.queue.occupancyWarn).`,
        keep,
      ),
      alert(
        o,
        'InferSignalQueueOccupancyCritical',
        'queue_occupancy',
        'critical',
        `${occupancy} and ${on} (${occupancyLevel} >= 2)`,
        level,
        `Queue occupancy above ${humanPercent(q.occupancyCritical)}`,
        `${queueWhere} is {{ $value | humanizePercentage }} full: ${held('queue_occupancy')} to CRITICAL, above ${humanPercent(q.occupancyCritical)} (thresholds.queue.occupancyCritical). New requests are shed.`,
        keep,
      ),
      alert(
        o,
        'InferSignalQueueAgeHigh',
        'queue_age',
        'warning',
        `${oldest} and ${on} (${ageLevel} >= 1)`,
        level,
        `Oldest waiting request older than ${humanSeconds(q.ageWarnSeconds)}`,
        `${queueWhere}: the oldest request still waiting has waited {{ $value | humanizeDuration }}, more than ${humanSeconds(q.ageWarnSeconds)} (thresholds.queue.ageWarnSeconds): ${held('queue_age')} to WARN. It has not started yet, so the wait histogram does not show it: the queue is stuck or falling behind.`,
        keep,
      ),
      alert(
        o,
        'InferSignalQueueAgeCritical',
        'queue_age',
        'critical',
        `${oldest} and ${on} (${ageLevel} >= 2)`,
        level,
        `Oldest waiting request older than ${humanSeconds(q.ageCriticalSeconds)}`,
        `${queueWhere}: the oldest request still waiting has waited {{ $value | humanizeDuration }}, more than ${humanSeconds(q.ageCriticalSeconds)} (thresholds.queue.ageCriticalSeconds): ${held('queue_age')} to CRITICAL. Requests are not being started: check the runtime behind the queue.`,
        keep,
      ),
      alert(
        o,
        'InferSignalQueuePendingWaitHigh',
        'queue_pending_wait',
        'warning',
        `${pendingPerSlot} and ${on} (${pendingLevel} >= 1)`,
        level,
        `Waits still accruing above ${humanSeconds(q.pendingWaitWarnSeconds)} per slot`,
        `${queueWhere}: the requests still waiting have already waited {{ $value | humanizeDuration }} per slot together, more than ${humanSeconds(q.pendingWaitWarnSeconds)} (thresholds.queue.pendingWaitWarnSeconds): ${held('queue_pending_wait')} to WARN. Many requests have each waited a while, which the wait histogram shows only once they start: the queue is falling behind.`,
        keep,
      ),
      alert(
        o,
        'InferSignalQueuePendingWaitCritical',
        'queue_pending_wait',
        'critical',
        `${pendingPerSlot} and ${on} (${pendingLevel} >= 2)`,
        level,
        `Waits still accruing above ${humanSeconds(q.pendingWaitCriticalSeconds)} per slot`,
        `${queueWhere}: the requests still waiting have already waited {{ $value | humanizeDuration }} per slot together, more than ${humanSeconds(q.pendingWaitCriticalSeconds)} (thresholds.queue.pendingWaitCriticalSeconds): ${held('queue_pending_wait')} to CRITICAL. Requests are piling up faster than they start: scale out, shed, or check the runtime behind the queue.`,
        keep,
      ),
      alert(
        o,
        'InferSignalQueueTokenBacklogHigh',
        'queue_token_backlog',
        'warning',
        `${drain} and ${on} (${tokenLevel} >= 1)`,
        level,
        `LLM token backlog takes longer than ${humanSeconds(q.tokenDrainWarnSeconds)} to drain`,
        `${queueWhere}: the output tokens owed to the running requests and asked for by the waiting ones (max_tokens scaled by the share recent requests used) take {{ $value | humanizeDuration }} at the output rate the queue has been serving at, more than ${humanSeconds(q.tokenDrainWarnSeconds)} (thresholds.queue.tokenDrainWarnSeconds): ${held('queue_token_backlog')} to WARN. A request arriving now waits behind that work: the queue holds more tokens than it can serve soon.`,
        keep,
      ),
      alert(
        o,
        'InferSignalQueueTokenBacklogCritical',
        'queue_token_backlog',
        'critical',
        `${drain} and ${on} (${tokenLevel} >= 2)`,
        level,
        `LLM token backlog takes longer than ${humanSeconds(q.tokenDrainCriticalSeconds)} to drain`,
        `${queueWhere}: the token backlog takes {{ $value | humanizeDuration }} to drain at the measured output rate, more than ${humanSeconds(q.tokenDrainCriticalSeconds)} (thresholds.queue.tokenDrainCriticalSeconds): ${held('queue_token_backlog')} to CRITICAL. Scale out, lower max_tokens or shed before the waiting requests time out.`,
        keep,
      ),
      alert(
        o,
        'InferSignalBackpressureCritical',
        'queue_backpressure',
        'critical',
        `max ${by(...QUEUE_KEYS)} (${metric('backpressureLevel')}) >= 2`,
        hold,
        'Backpressure level CRITICAL',
        `${queueWhere} reports backpressure level CRITICAL (occupancy or ${pq} wait past the critical thresholds) for ${hold}; admit() turns away the requests past the queue's occupancy and wait targets with Retry-After ${o.thresholds.queue.retryAfterSeconds}s, until it has turned none away for ${humanSeconds(o.thresholds.queue.shedHoldSeconds)} (thresholds.queue.shedHoldSeconds) and those levels cleared by their hysteresis.`,
      ),
    ],
  };
}

/** The signals whose levels a fleet page counts. */
const FLEET_SIGNALS = ['capacity', 'queue_wait', 'queue_occupancy'] as const;
/** The signals whose per-replica pages a fleet page stands for (inhibited in the Alertmanager config): those, and shedding. */
export const FLEET_INHIBITS = [...FLEET_SIGNALS, 'queue_backpressure'] as const;

/**
 * Fleet-wide overload: at least `fleetShare` of the replicas serving a
 * queue (and at least two) have a capacity, queue-wait or occupancy level
 * at WARN or above. One page that says fleet-wide, instead of one per
 * replica: the generated Alertmanager config inhibits the per-replica pages
 * of these signals while it fires. Replicas are counted from the
 * backpressure gauge, which every queue of every replica exports.
 */
function fleetGroup(o: ResolvedOptions): RuleGroup {
  const { metric } = o.names;
  const signals = FLEET_SIGNALS.join('|');
  const fleet = by(...FLEET_QUEUE_KEYS);
  const perReplica = by('job', 'instance', LABEL.queue);
  const affected = `count ${fleet} (max ${perReplica} (${metric('signalLevel')}{${LABEL.signal}=~"${signals}"}) >= 1)`;
  const replicas = `count ${fleet} (max ${perReplica} (${metric('backpressureLevel')}))`;
  // The page lists the replicas it stands for: Prometheus runs this query when it renders the description.
  const list = `{{ range $i, $r := printf \`max by (instance) (${metric('signalLevel')}{job="%s", ${LABEL.queue}="%s", ${LABEL.signal}=~"${signals}"}) >= 1\` $labels.job $labels.${LABEL.queue} | query | sortByLabel "instance" }}{{ if $i }}, {{ end }}{{ $r.Labels.instance }}{{ end }}`;
  return {
    name: 'infersignal.fleet',
    rules: [
      alert(
        o,
        'InferSignalFleetOverloaded',
        'fleet',
        'critical',
        `${affected} / ${replicas} >= ${o.fleetShare} and on (${FLEET_QUEUE_KEYS.join(', ')}) ${affected} >= 2`,
        levelHold(o),
        `Fleet-wide: ${humanPercent(o.fleetShare)} or more of the replicas overloaded`,
        `Fleet-wide overload of queue {{ $labels.${LABEL.queue} }} ({{ $labels.job }}): {{ $value | humanizePercentage }} of its replicas have capacity, queue wait or occupancy at WARN or above in process (at least ${humanPercent(o.fleetShare)}, option fleetShare, and at least 2): ${list}. This is not one sick replica: the fleet lacks capacity; scale out. The per-replica pages of these signals are held back while this one fires.`,
        formatDuration(o.thresholds.queue.keepFiringSeconds),
      ),
    ],
  };
}

/** The rule templates still kept here, by signal definition name (the others are the definitions' own). */
const TEMPLATES: Record<string, (o: ResolvedOptions) => RuleGroup> = {
  queue: queueGroup,
  capacity: capacityGroup,
  fleet: fleetGroup,
};

/** The rule groups for the given thresholds and options: one per signal definition that has rules. */
export function buildRules(options: GeneratorOptions = {}): RuleFile {
  const o = resolveOptions(options);
  const groups: RuleGroup[] = [];
  for (const signal of o.signals) {
    const group = signal.rules ? signal.rules(ruleKit(o, signal)) : TEMPLATES[signal.name]?.(o);
    if (group) groups.push(group);
  }
  return { groups };
}

/** Every alerting rule of a rule file, in order. */
export function alertingRules(file: RuleFile): AlertingRule[] {
  return file.groups.flatMap((group) => group.rules.filter((rule): rule is AlertingRule => 'alert' in rule));
}

const GENERATED_HEADER =
  'Generated by @infersignal/rules from the InferSignal thresholds. Do not edit by hand: change the thresholds and regenerate.';

/** YAML text of the rules, as `promtool check rules` and Prometheus read it. */
export function renderRules(options: GeneratorOptions = {}): string {
  return toYaml(buildRules(options));
}

export function toYaml(value: unknown, header = GENERATED_HEADER): string {
  return `# ${header}\n${stringify(value, { lineWidth: 0 })}`;
}
