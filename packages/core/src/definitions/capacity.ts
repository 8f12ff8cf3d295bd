/**
 * The `capacity` signal: a queue's utilization ρ = λ·S / c, its headroom,
 * the Erlang C wait it predicts and the time until ρ reaches 1 at its
 * trend, judged per queue by the queue's capacity model.
 */
import { ATTR, type InstrumentSpec } from '../attributes';
import { InferSignalConfigError } from '../config-error';
import { defineSignal } from '../definition';
import type { CapacityThresholds } from '../thresholds';
import { queueSignal } from './queue';

const metrics = {
  queueArrivalRate: {
    name: 'infersignal.queue.arrival.rate',
    type: 'gauge',
    unit: '{request}/s',
    description: 'Arrival rate λ of the queue (EWMA, half-life capacity.rateHalfLifeSeconds).',
    attributes: [ATTR.queue],
  },
  queueCompletionRate: {
    name: 'infersignal.queue.completion.rate',
    type: 'gauge',
    unit: '{request}/s',
    description: 'Completion rate of the queue over capacity.rateWindowSeconds.',
    attributes: [ATTR.queue],
  },
  queueServiceTime: {
    name: 'infersignal.queue.service.time',
    type: 'gauge',
    unit: 's',
    description:
      "Mean service time S over capacity.serviceWindowSeconds, or over its last sixth (2–5 s) when that is confidently higher (a sudden slowdown): start of inference → end, or → the slot's release when `queue.run()` holds it (the response may still be written after).",
    attributes: [ATTR.queue],
  },
  queueServiceTimeP90: {
    name: 'infersignal.queue.service.time.p90',
    type: 'gauge',
    unit: 's',
    description: 'P90 service time over capacity.serviceWindowSeconds.',
    attributes: [ATTR.queue],
  },
  queueUtilization: {
    name: 'infersignal.queue.utilization',
    type: 'gauge',
    unit: '1',
    description: 'Utilization ρ = λ·S / c (c = the queue concurrency).',
    attributes: [ATTR.queue],
    feeds: 'capacity.utilizationWarn / capacity.utilizationCritical',
  },
  queueHeadroom: {
    name: 'infersignal.queue.headroom',
    type: 'gauge',
    unit: '{request}/s',
    description: 'Sustainable rate c / S minus the arrival rate λ; negative when overloaded.',
    attributes: [ATTR.queue],
  },
  queueWaitPredicted: {
    name: 'infersignal.queue.wait.predicted',
    type: 'gauge',
    unit: 's',
    description: 'Expected queue wait of an M/M/c queue (Erlang C) at the measured λ, S and c; not observed at ρ ≥ 1.',
    attributes: [ATTR.queue],
  },
  queueTimeToSaturation: {
    name: 'infersignal.queue.saturation.time',
    type: 'gauge',
    unit: 's',
    description:
      'Seconds until ρ reaches 1 at its least-squares trend over capacity.trendWindowSeconds; observed only while ρ rises.',
    attributes: [ATTR.queue],
    feeds: 'capacity.saturationWarnSeconds',
  },
} as const;

const positive = { type: 'number', above: 0 } as const;
const nonNegative = { type: 'number', min: 0 } as const;

export const capacitySignal = defineSignal({
  name: 'capacity',
  metrics,
  thresholds: {
    group: 'capacity',
    fields: {
      utilizationWarn: { default: 0.8, accepts: { type: 'number', min: 0, max: 1 } },
      utilizationCritical: { default: 0.95, accepts: positive },
      saturationWarnSeconds: { default: 60, accepts: positive },
      rateWindowSeconds: { default: 10, accepts: positive },
      rateHalfLifeSeconds: { default: 2, accepts: positive },
      serviceWindowSeconds: { default: 30, accepts: positive },
      trendWindowSeconds: { default: 30, accepts: positive },
      forSeconds: { default: 2, accepts: nonNegative },
      keepFiringSeconds: { default: 10, accepts: nonNegative },
      backpressure: { default: false, accepts: { type: 'boolean' } },
    },
    check(values, prefix) {
      if ((values.utilizationWarn as number) < (values.utilizationCritical as number)) return;
      throw new InferSignalConfigError(
        `${prefix}.capacity.utilizationWarn`,
        `must be below capacity.utilizationCritical (${values.utilizationCritical}), got ${values.utilizationWarn}`,
      );
    },
  },
  alerts: [
    {
      name: 'InferSignalCapacityUtilizationHigh',
      signal: 'capacity',
      severity: 'warning',
      runbook: 'capacity-utilization',
      doc: '`max by (R, queue) (infersignal_queue_utilization_ratio) > 0.8 and level(capacity) >= 1`',
    },
    {
      name: 'InferSignalCapacityUtilizationCritical',
      signal: 'capacity',
      severity: 'critical',
      runbook: 'capacity-utilization',
      doc: '`max by (R, queue) (infersignal_queue_utilization_ratio) and level(capacity) >= 2`',
    },
    {
      name: 'InferSignalTimeToSaturationLow',
      signal: 'capacity',
      severity: 'warning',
      runbook: 'time-to-saturation',
      doc: '`min by (R, queue) (infersignal_queue_saturation_time_seconds) < 60 and level(capacity) >= 1`',
    },
  ],

  rules(k) {
    const c = k.thresholds.capacity as unknown as CapacityThresholds;
    const queue = k.label(ATTR.queue);
    const keys = [...k.replicaKeys, queue];
    const hold = k.levelHold;
    // As core keeps its WARN (thresholds.capacity.keepFiringSeconds); the CRITICAL page too, so one episode is one page.
    const keep = k.formatDuration(c.keepFiringSeconds);
    const utilization = `max ${k.by(...keys)} (${k.metric(metrics.queueUtilization)})`;
    const level = k.signalLevel('capacity', [queue]);
    const on = k.onReplica(queue);
    const where = `Queue {{ $labels.${queue} }} on replica ${k.replica} ({{ $labels.job }})`;
    const model = 'ρ = arrival rate × mean service time / concurrency';
    return {
      name: 'infersignal.capacity',
      rules: [
        k.alert(
          'InferSignalCapacityUtilizationHigh',
          `${utilization} > ${c.utilizationWarn} and ${on} (${level} >= 1)`,
          hold,
          `Queue utilization above ${k.humanPercent(c.utilizationWarn)}`,
          `${where} runs at utilization {{ $value | humanizePercentage }} (${model}), above ${k.humanPercent(c.utilizationWarn)} (thresholds.capacity.utilizationWarn); the in-process capacity detector holds WARN. Queue wait grows steeply from here: the early warning before it moves.`,
          keep,
        ),
        k.alert(
          'InferSignalCapacityUtilizationCritical',
          `${utilization} and ${on} (${level} >= 2)`,
          hold,
          `Queue utilization at or above ${k.humanPercent(c.utilizationCritical)}`,
          `${where} runs at utilization {{ $value | humanizePercentage }}; the in-process capacity detector holds CRITICAL, ρ at or above ${k.humanPercent(c.utilizationCritical)} (thresholds.capacity.utilizationCritical) for ${k.formatDuration(c.forSeconds)} (thresholds.capacity.forSeconds). Arrivals match or exceed what this replica can serve; its backlog and queue wait grow without bound.`,
          keep,
        ),
        k.alert(
          'InferSignalTimeToSaturationLow',
          `min ${k.by(...keys)} (${k.metric(metrics.queueTimeToSaturation)}) < ${c.saturationWarnSeconds} and ${on} (${level} >= 1)`,
          hold,
          `Queue saturates within ${k.humanSeconds(c.saturationWarnSeconds)} at the current trend`,
          `${where}: at the least-squares trend of its utilization over thresholds.capacity.trendWindowSeconds, ρ reaches 1 in {{ $value | humanizeDuration }}, under ${k.humanSeconds(c.saturationWarnSeconds)} (thresholds.capacity.saturationWarnSeconds), and the in-process capacity detector holds WARN (the trend held over 2.5 trend windows, so a step in load does not raise it). Load is rising faster than the replica can absorb.`,
          keep,
        ),
      ],
    };
  },

  panels(k) {
    const c = k.thresholds.capacity as unknown as CapacityThresholds;
    const queue = k.label(ATTR.queue);
    const perQueue = (fn: 'max' | 'min', spec: InstrumentSpec) =>
      `${fn} by (${queue}) (${k.metric(spec)}{${k.select.queue}})`;
    const legend = `{{${queue}}}`;
    k.row('Capacity');
    k.add({
      title: 'Utilization ρ = λ·S / c',
      description:
        'Worst replica per queue. In-process, ρ is judged only for queues with an explicit concurrency (otherwise c is the peak in flight). Lines: thresholds.capacity.utilizationWarn and utilizationCritical.',
      w: 6,
      unit: 'percentunit',
      lines: [c.utilizationWarn, c.utilizationCritical],
      targets: [{ expr: perQueue('max', metrics.queueUtilization), legend }],
      fieldConfig: { defaults: { min: 0 } },
    });
    k.add({
      title: 'Headroom and arrival rate',
      description:
        'Headroom = sustainable rate c / S minus the arrival rate λ (worst replica; negative: overloaded). λ is the EWMA arrival rate, the busiest replica.',
      w: 6,
      unit: 'reqps',
      targets: [
        { expr: perQueue('min', metrics.queueHeadroom), legend: `headroom ${legend}` },
        { expr: perQueue('max', metrics.queueArrivalRate), legend: `λ ${legend}` },
        { expr: perQueue('max', metrics.queueCompletionRate), legend: `completed ${legend}` },
      ],
    });
    const waitSeries = (suffix: string) =>
      `sum by (${queue}) (${k.rate(`${k.metric(queueSignal.metrics.queueWait)}_${suffix}`, k.select.queue)})`;
    k.add({
      title: 'Queue wait: predicted (M/M/c) vs measured mean',
      description:
        'Erlang C expected wait at the measured λ, S and c (not observed at ρ ≥ 1) against the measured mean wait; S is the mean service time. A measured wait far above the prediction means bursty arrivals or uneven service times.',
      w: 6,
      unit: 's',
      targets: [
        { expr: perQueue('max', metrics.queueWaitPredicted), legend: `predicted ${legend}` },
        { expr: `${waitSeries('sum')} / ${waitSeries('count')}`, legend: `measured ${legend}` },
        { expr: perQueue('max', metrics.queueServiceTime), legend: `S ${legend}` },
      ],
    });
    k.add({
      title: 'Time to saturation',
      description:
        'Seconds until ρ reaches 1 at its least-squares trend (only while ρ rises; 0 when saturated). Line: thresholds.capacity.saturationWarnSeconds.',
      w: 6,
      unit: 's',
      lines: [c.saturationWarnSeconds],
      lowIsBad: true,
      targets: [{ expr: perQueue('min', metrics.queueTimeToSaturation), legend }],
      fieldConfig: { defaults: { min: 0 } },
    });
  },
});
