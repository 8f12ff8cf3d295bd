/**
 * Fleet-wide overload (`fleet`): at least `fleetShare` of the replicas
 * serving a queue (and at least two) have a capacity, queue-wait or
 * occupancy level at WARN or above. One page that says fleet-wide, instead
 * of one per replica: while it fires, the generated rules hold back the
 * per-replica pages of those signals, shedding, the queue's age, pending
 * wait and token backlog.
 *
 * Its own definition, not part of the queue's: it reads the levels of two
 * definitions (queue and capacity) across every replica of a job, and has
 * its own rule group, option and alert. It records no metric and has no
 * in-process detector: one replica cannot see the fleet. Replicas are
 * counted from the queue's backpressure gauge, which every queue of every
 * replica exports.
 */
import { ATTR } from '../attributes';
import { defineSignal } from '../definition';
import type { QueueThresholds } from '../thresholds';
import { internalSignal } from './internal';
import { queueSignal } from './queue';

/** The signals whose levels a fleet page counts. */
const COUNTED = ['capacity', 'queue_wait', 'queue_occupancy'];

export const fleetSignal = defineSignal({
  name: 'fleet',
  ruleOptions: {
    /**
     * Share of the replicas serving a queue (at least two of them) whose capacity, queue-wait or
     * occupancy level is WARN or above from which InferSignalFleetOverloaded pages.
     */
    fleetShare: { default: 0.5, accepts: { type: 'number', above: 0, max: 1 } },
  },
  alerts: [
    {
      name: 'InferSignalFleetOverloaded',
      signal: 'fleet',
      severity: 'critical',
      runbook: 'fleet-overloaded',
      doc: 'replicas of a `job` and queue with `capacity`, `queue_wait` or `queue_occupancy` at WARN or above, over the replicas exporting that queue, `>= 0.5`, and at least 2 of them; the description lists those replicas (a template `query`)',
      // The per-replica pages of the queue wait behind it: those of the signals it counts, shedding, and the
      // waits and backlog an overloaded queue piles up on every replica at once.
      inhibits: {
        signals: [...COUNTED, 'queue_backpressure', 'queue_age', 'queue_pending_wait', 'queue_token_backlog'],
        on: [ATTR.queue],
      },
    },
  ],
  rules(k) {
    const q = k.thresholds.queue as unknown as QueueThresholds;
    const share = k.option('fleetShare');
    const queue = k.label(ATTR.queue);
    const level = k.metric(internalSignal.metrics.signalLevel);
    const signal = k.label(ATTR.signal);
    const signals = COUNTED.join('|');
    const fleetKeys = ['job', queue];
    const fleet = k.by(...fleetKeys);
    const perReplica = k.by('job', 'instance', queue);
    const affected = `count ${fleet} (max ${perReplica} (${level}{${signal}=~"${signals}"}) >= 1)`;
    const replicas = `count ${fleet} (max ${perReplica} (${k.metric(queueSignal.metrics.backpressureLevel)}))`;
    // The page lists the replicas it stands for: Prometheus runs this query when it renders the description.
    const list = `{{ range $i, $r := printf \`max by (instance) (${level}{job="%s", ${queue}="%s", ${signal}=~"${signals}"}) >= 1\` $labels.job $labels.${queue} | query | sortByLabel "instance" }}{{ if $i }}, {{ end }}{{ $r.Labels.instance }}{{ end }}`;
    return {
      name: 'infersignal.fleet',
      rules: [
        k.alert(
          'InferSignalFleetOverloaded',
          `${affected} / ${replicas} >= ${share} and on (${fleetKeys.join(', ')}) ${affected} >= 2`,
          k.levelHold,
          `Fleet-wide: ${k.humanPercent(share)} or more of the replicas overloaded`,
          `Fleet-wide overload of queue {{ $labels.${queue} }} ({{ $labels.job }}): {{ $value | humanizePercentage }} of its replicas have capacity, queue wait or occupancy at WARN or above in process (at least ${k.humanPercent(share)}, option fleetShare, and at least 2): ${list}. This is not one sick replica: the fleet lacks capacity; scale out. The per-replica pages of these signals are held back while this one fires.`,
          k.formatDuration(q.keepFiringSeconds),
        ),
      ],
    };
  },
});
