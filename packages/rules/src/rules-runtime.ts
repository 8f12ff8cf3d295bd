/**
 * Rule groups for the signals core gained after the request-level ones:
 * predictive capacity (utilization ρ, time to saturation). Same shape as rules.ts: names only through core's METRICS,
 * numbers only from the thresholds (or a documented generator option).
 */
import { LABEL } from './names';
import { formatDuration, humanPercent, humanSeconds } from './duration';
import { levelHold, type ResolvedOptions } from './options';
import { QUEUE_KEYS, REPLICA, alert, by, onReplica, signalLevel, type RuleGroup } from './rule-parts';

/**
 * Capacity pages on the level core's capacity detector announced, per
 * replica: the same warm-up, judged-only-with-a-known-concurrency rule,
 * sustained-trend gate (the projection under saturationWarnSeconds over
 * 2.5 trend windows, so a step in load is not a trend), hold and keep.
 * Each alert then says why from the gauges: ρ above its bound
 * (utilization), or the trend (time to saturation).
 */
export function capacityGroup(o: ResolvedOptions): RuleGroup {
  const { metric } = o.names;
  const c = o.thresholds.capacity;
  const hold = levelHold(o);
  // As core keeps its WARN (thresholds.capacity.keepFiringSeconds); the CRITICAL page too, so one episode is one page.
  const keep = formatDuration(c.keepFiringSeconds);
  const utilization = `max ${by(...QUEUE_KEYS)} (${metric('queueUtilization')})`;
  const level = signalLevel(o, 'capacity', [LABEL.queue]);
  const on = onReplica(LABEL.queue);
  const where = `Queue {{ $labels.${LABEL.queue} }} on replica ${REPLICA} ({{ $labels.job }})`;
  const model = 'ρ = arrival rate × mean service time / concurrency';
  return {
    name: 'infersignal.capacity',
    rules: [
      alert(
        o,
        'InferSignalCapacityUtilizationHigh',
        'capacity',
        'warning',
        `${utilization} > ${c.utilizationWarn} and ${on} (${level} >= 1)`,
        hold,
        `Queue utilization above ${humanPercent(c.utilizationWarn)}`,
        `${where} runs at utilization {{ $value | humanizePercentage }} (${model}), above ${humanPercent(c.utilizationWarn)} (thresholds.capacity.utilizationWarn); the in-process capacity detector holds WARN. Queue wait grows steeply from here: the early warning before it moves.`,
        keep,
      ),
      alert(
        o,
        'InferSignalCapacityUtilizationCritical',
        'capacity',
        'critical',
        `${utilization} and ${on} (${level} >= 2)`,
        hold,
        `Queue utilization at or above ${humanPercent(c.utilizationCritical)}`,
        `${where} runs at utilization {{ $value | humanizePercentage }}; the in-process capacity detector holds CRITICAL, ρ at or above ${humanPercent(c.utilizationCritical)} (thresholds.capacity.utilizationCritical) for ${formatDuration(c.forSeconds)} (thresholds.capacity.forSeconds). Arrivals match or exceed what this replica can serve; its backlog and queue wait grow without bound.`,
        keep,
      ),
      alert(
        o,
        'InferSignalTimeToSaturationLow',
        'capacity',
        'warning',
        `min ${by(...QUEUE_KEYS)} (${metric('queueTimeToSaturation')}) < ${c.saturationWarnSeconds} and ${on} (${level} >= 1)`,
        hold,
        `Queue saturates within ${humanSeconds(c.saturationWarnSeconds)} at the current trend`,
        `${where}: at the least-squares trend of its utilization over thresholds.capacity.trendWindowSeconds, ρ reaches 1 in {{ $value | humanizeDuration }}, under ${humanSeconds(c.saturationWarnSeconds)} (thresholds.capacity.saturationWarnSeconds), and the in-process capacity detector holds WARN (the trend held over 2.5 trend windows, so a step in load does not raise it). Load is rising faster than the replica can absorb.`,
        keep,
      ),
    ],
  };
}
