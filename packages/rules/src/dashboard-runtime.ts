/**
 * The dashboard row for the capacity model (ρ, headroom, predicted wait,
 * time to saturation). Same conventions as dashboard.ts:
 * names from core, threshold lines from the thresholds the rules use.
 */
import { LABEL } from './names';
import { SEL, type Layout } from './dashboard-layout';
import type { MetricKey } from './names';
import type { ResolvedOptions } from './options';

const rate = (series: string, selector: string) => `rate(${series}{${selector}}[$__rate_interval])`;

export function addCapacityRow(l: Layout, o: ResolvedOptions): void {
  const { metric } = o.names;
  const c = o.thresholds.capacity;
  const perQueue = (fn: 'max' | 'min', key: MetricKey) => `${fn} by (${LABEL.queue}) (${metric(key)}{${SEL.queue}})`;
  const legend = `{{${LABEL.queue}}}`;
  l.row('Capacity');
  l.add({
    title: 'Utilization ρ = λ·S / c',
    description:
      'Worst replica per queue. In-process, ρ is judged only for queues with an explicit concurrency (otherwise c is the peak in flight). Lines: thresholds.capacity.utilizationWarn and utilizationCritical.',
    w: 6,
    unit: 'percentunit',
    lines: [c.utilizationWarn, c.utilizationCritical],
    targets: [{ expr: perQueue('max', 'queueUtilization'), legend }],
    fieldConfig: { defaults: { min: 0 } },
  });
  l.add({
    title: 'Headroom and arrival rate',
    description:
      'Headroom = sustainable rate c / S minus the arrival rate λ (worst replica; negative: overloaded). λ is the EWMA arrival rate, the busiest replica.',
    w: 6,
    unit: 'reqps',
    targets: [
      { expr: perQueue('min', 'queueHeadroom'), legend: `headroom ${legend}` },
      { expr: perQueue('max', 'queueArrivalRate'), legend: `λ ${legend}` },
      { expr: perQueue('max', 'queueCompletionRate'), legend: `completed ${legend}` },
    ],
  });
  const waitSeries = (suffix: string) =>
    `sum by (${LABEL.queue}) (${rate(`${metric('queueWait')}_${suffix}`, SEL.queue)})`;
  l.add({
    title: 'Queue wait: predicted (M/M/c) vs measured mean',
    description:
      'Erlang C expected wait at the measured λ, S and c (not observed at ρ ≥ 1) against the measured mean wait; S is the mean service time. A measured wait far above the prediction means bursty arrivals or uneven service times.',
    w: 6,
    unit: 's',
    targets: [
      { expr: perQueue('max', 'queueWaitPredicted'), legend: `predicted ${legend}` },
      { expr: `${waitSeries('sum')} / ${waitSeries('count')}`, legend: `measured ${legend}` },
      { expr: perQueue('max', 'queueServiceTime'), legend: `S ${legend}` },
    ],
  });
  l.add({
    title: 'Time to saturation',
    description:
      'Seconds until ρ reaches 1 at its least-squares trend (only while ρ rises; 0 when saturated). Line: thresholds.capacity.saturationWarnSeconds.',
    w: 6,
    unit: 's',
    lines: [c.saturationWarnSeconds],
    lowIsBad: true,
    targets: [{ expr: perQueue('min', 'queueTimeToSaturation'), legend }],
    fieldConfig: { defaults: { min: 0 } },
  });
}
