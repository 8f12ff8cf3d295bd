/**
 * `promtool test rules` on the generated rules: input series → expected
 * alerts, including the `for:` hold (pending before, firing after), and a
 * case per rule that must NOT fire. Expected annotations are rendered from
 * the generated templates with the values Prometheus computes, so a
 * template that names a label the alert lacks fails here.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { BUCKETS } from '../../core/src/names';
import { buildRules, renderRules } from '@infersignal/rules';
import { LABEL } from '../src/names';
import { alertingRules, type AlertingRule } from '../src/rules';
import { findBinary, runTool, skipReason } from './helpers/binaries';
import { render } from './helpers/templates';
import { metricName } from './helpers/names';

const promtool = findBinary('promtool');
const dir = mkdtempSync(join(tmpdir(), 'infersignal-promtool-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rules = buildRules();
const byName = new Map(alertingRules(rules).map((rule) => [rule.alert, rule]));
const JOB = 'svc';
const STEPS = 200; // 50 minutes of 15 s samples

type Labels = Record<string, string>;
interface Series {
  series: string;
  values: string;
}

function selector(name: string, labels: Labels): string {
  return `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(', ')}}`;
}

/** Histogram buckets of core's queue-wait boundaries; every observation falls at `value`, `perStep` per 15 s. */
function waitHistogram(labels: Labels, value: number, perStep: number): Series[] {
  const name = `${metricName('queueWait')}_bucket`;
  return [...BUCKETS.queueWait, Infinity].map((le) => ({
    series: selector(name, { ...labels, le: le === Infinity ? '+Inf' : String(le) }),
    values: le >= value ? `0+${perStep}x${STEPS}` : `0x${STEPS}`,
  }));
}

/** An expected alert, with annotations rendered from the generated rule. */
function expected(alert: string, labels: Labels, value?: number, queried?: string[]): Record<string, unknown> {
  const rule = byName.get(alert) as AlertingRule;
  const all = { ...labels, ...rule.labels };
  return {
    exp_labels: all,
    exp_annotations: Object.fromEntries(
      Object.entries(rule.annotations).map(([key, text]) => [key, render(text, all, value, queried)]),
    ),
  };
}

function check(evalTime: string, alertname: string, alerts: Record<string, unknown>[] = []) {
  return { eval_time: evalTime, alertname, exp_alerts: alerts };
}

const queue = (name: string, model: string): Labels => ({ job: JOB, [LABEL.queue]: name, [LABEL.model]: model });
const INSTANCE = '10.0.0.1:9464';
const scope = { otel_scope_name: '@infersignal/core', instance: INSTANCE };
/** The subject of a per-replica queue alert: job, replica and queue. */
const onReplica = (instance: string, name: string): Labels => ({ job: JOB, instance, [LABEL.queue]: name });

const POD_B = { namespace: 'prod', pod: 'infer-5c9d-b' };

/** The level core's detector announced for `signal` on a queue of a replica (0 ok, 1 warn, 2 critical). */
function level(signal: string, instance: string, name: string, values: string, extra: Labels = {}): Series {
  return {
    series: selector(metricName('signalLevel'), {
      job: JOB,
      instance,
      [LABEL.signal]: signal,
      [LABEL.queue]: name,
      otel_scope_name: '@infersignal/core',
      ...extra,
    }),
    values,
  };
}

function gauge(
  key: Parameters<typeof metricName>[0],
  instance: string,
  name: string,
  values: string,
  extra: Labels = {},
): Series {
  return { series: selector(metricName(key), { job: JOB, instance, [LABEL.queue]: name, ...extra }), values };
}

const tests = [
  {
    name: 'queue wait: the in-process WARN pages at once, naming the replica, with Prometheus P95 295ms; P99 299ms stays under the 300ms tail threshold',
    interval: '15s',
    input_series: [
      ...waitHistogram({ ...queue('default', 'llama'), ...scope }, 0.3, 15),
      level('queue_wait', INSTANCE, 'default', `0x3 1x${STEPS}`),
    ],
    alert_rule_test: [
      // No second hold: the detector held its level already.
      check('45s', 'InferSignalQueueWaitHigh'),
      check('1m', 'InferSignalQueueWaitHigh', [
        expected('InferSignalQueueWaitHigh', onReplica(INSTANCE, 'default'), 0.295),
      ]),
      check('6m', 'InferSignalQueueWaitCritical'),
      check('6m', 'InferSignalQueueWaitTailHigh'),
    ],
  },
  {
    name: 'queue wait: the in-process CRITICAL pages with P95 737.5ms; P99 747.5ms breaks the tail threshold after its hold',
    interval: '15s',
    input_series: [
      ...waitHistogram({ ...queue('default', 'mistral'), ...scope }, 0.75, 15),
      level('queue_wait', INSTANCE, 'default', `2x${STEPS}`),
    ],
    alert_rule_test: [
      check('1m', 'InferSignalQueueWaitCritical', [
        expected('InferSignalQueueWaitCritical', onReplica(INSTANCE, 'default'), 0.7375),
      ]),
      check('4m', 'InferSignalQueueWaitTailHigh'),
      check('6m', 'InferSignalQueueWaitTailHigh', [
        expected('InferSignalQueueWaitTailHigh', { ...queue('default', 'mistral'), instance: INSTANCE }, 0.7475),
      ]),
    ],
  },
  {
    // Prometheus's P95 over its rate window is 295ms (above 200ms), but core's detector stayed at ok: its
    // window, recent-requests gate and hysteresis judged no WARN (e.g. a burst it absorbed and drained). No page.
    name: 'queue wait: a Prometheus quantile above the bound does not page while the in-process detector stays ok; P95 99ms never alerts',
    interval: '15s',
    input_series: [
      ...waitHistogram({ ...queue('default', 'fast'), ...scope }, 0.1, 15),
      ...waitHistogram({ ...queue('drained', 'llama'), ...scope }, 0.3, 15),
      level('queue_wait', INSTANCE, 'drained', `0x${STEPS}`),
    ],
    alert_rule_test: ['InferSignalQueueWaitHigh', 'InferSignalQueueWaitCritical', 'InferSignalQueueWaitTailHigh'].map(
      (name) => check('20m', name),
    ),
  },
  {
    name: 'occupancy and backpressure: each replica pages on its own in-process level; backpressure level WARN does not alert',
    interval: '15s',
    input_series: [
      {
        series: selector(metricName('queueOccupancy'), { job: JOB, instance: 'a', [LABEL.queue]: 'q1' }),
        values: `0.3x${STEPS}`,
      },
      {
        series: selector(metricName('queueOccupancy'), { job: JOB, instance: 'b', [LABEL.queue]: 'q1' }),
        values: `0.8x${STEPS}`,
      },
      {
        series: selector(metricName('queueOccupancy'), { job: JOB, instance: 'a', [LABEL.queue]: 'q2' }),
        values: `0.9x${STEPS}`,
      },
      {
        series: selector(metricName('queueOccupancy'), { job: JOB, instance: 'a', [LABEL.queue]: 'q3' }),
        values: `0.5x${STEPS}`,
      },
      level('queue_occupancy', 'a', 'q1', `0x${STEPS}`),
      level('queue_occupancy', 'b', 'q1', `1x${STEPS}`),
      level('queue_occupancy', 'a', 'q2', `2x${STEPS}`),
      {
        series: selector(metricName('backpressureLevel'), { job: JOB, instance: 'a', [LABEL.queue]: 'q1' }),
        values: `1x${STEPS}`,
      },
      {
        series: selector(metricName('backpressureLevel'), { job: JOB, instance: 'a', [LABEL.queue]: 'q2' }),
        values: `2x${STEPS}`,
      },
    ],
    alert_rule_test: [
      check('4m', 'InferSignalBackpressureCritical'),
      // Replica b of q1 is at WARN, replica a is not: the page names b alone. q3 (no level) is quiet.
      check('1m', 'InferSignalQueueOccupancyHigh', [
        expected('InferSignalQueueOccupancyHigh', onReplica('b', 'q1'), 0.8),
        expected('InferSignalQueueOccupancyHigh', onReplica('a', 'q2'), 0.9),
      ]),
      check('1m', 'InferSignalQueueOccupancyCritical', [
        expected('InferSignalQueueOccupancyCritical', onReplica('a', 'q2'), 0.9),
      ]),
      check('6m', 'InferSignalBackpressureCritical', [
        expected('InferSignalBackpressureCritical', onReplica('a', 'q2')),
      ]),
    ],
  },
  {
    name: 'queue age: pages per replica on the in-process queue_age level; an old request the detector ignored does not',
    interval: '15s',
    input_series: [
      gauge('queueWaitOldest', 'a', 'q1', `0.2x${STEPS}`),
      level('queue_age', 'a', 'q1', `0x${STEPS}`),
      gauge('queueWaitOldest', 'b', 'q1', `1.5x${STEPS}`),
      level('queue_age', 'b', 'q1', `1x${STEPS}`),
      gauge('queueWaitOldest', 'a', 'q2', `6x${STEPS}`),
      level('queue_age', 'a', 'q2', `2x${STEPS}`),
      gauge('queueWaitOldest', 'a', 'q3', `1.5x${STEPS}`),
      level('queue_age', 'a', 'q3', `0x${STEPS}`),
    ],
    alert_rule_test: [
      check('1m', 'InferSignalQueueAgeHigh', [
        expected('InferSignalQueueAgeHigh', onReplica('b', 'q1'), 1.5),
        expected('InferSignalQueueAgeHigh', onReplica('a', 'q2'), 6),
      ]),
      check('1m', 'InferSignalQueueAgeCritical', [expected('InferSignalQueueAgeCritical', onReplica('a', 'q2'), 6)]),
    ],
  },
  {
    name: 'waits still accruing: pages per replica on the in-process queue_pending_wait level, with the sum per slot shown; a large sum the detector did not raise does not',
    interval: '15s',
    input_series: [
      // b: 24 s waited over 4 slots in flight (6 s per slot), WARN; a/q2: 160 s over 4 (40 s), CRITICAL.
      gauge('queueWaitPending', 'a', 'q1', `1x${STEPS}`),
      gauge('queueInFlight', 'a', 'q1', `4x${STEPS}`),
      level('queue_pending_wait', 'a', 'q1', `0x${STEPS}`),
      gauge('queueWaitPending', 'b', 'q1', `24x${STEPS}`),
      gauge('queueInFlight', 'b', 'q1', `4x${STEPS}`),
      level('queue_pending_wait', 'b', 'q1', `1x${STEPS}`),
      gauge('queueWaitPending', 'a', 'q2', `160x${STEPS}`),
      gauge('queueInFlight', 'a', 'q2', `4x${STEPS}`),
      level('queue_pending_wait', 'a', 'q2', `2x${STEPS}`),
      // A stuck queue with nothing in flight: the sum counts for one slot.
      gauge('queueWaitPending', 'c', 'q3', `7x${STEPS}`),
      gauge('queueInFlight', 'c', 'q3', `0x${STEPS}`),
      level('queue_pending_wait', 'c', 'q3', `1x${STEPS}`),
    ],
    alert_rule_test: [
      check('1m', 'InferSignalQueuePendingWaitHigh', [
        expected('InferSignalQueuePendingWaitHigh', onReplica('b', 'q1'), 6),
        expected('InferSignalQueuePendingWaitHigh', onReplica('a', 'q2'), 40),
        expected('InferSignalQueuePendingWaitHigh', onReplica('c', 'q3'), 7),
      ]),
      check('1m', 'InferSignalQueuePendingWaitCritical', [
        expected('InferSignalQueuePendingWaitCritical', onReplica('a', 'q2'), 40),
      ]),
    ],
  },
  {
    name: 'waits still accruing: 40s per slot while the in-process queue_pending_wait level is ok does not page',
    interval: '15s',
    input_series: [
      gauge('queueWaitPending', 'c', 'q4', `160x${STEPS}`),
      gauge('queueInFlight', 'c', 'q4', `4x${STEPS}`),
      level('queue_pending_wait', 'c', 'q4', `0x${STEPS}`),
    ],
    alert_rule_test: [
      check('1m', 'InferSignalQueuePendingWaitHigh'),
      check('1m', 'InferSignalQueuePendingWaitCritical'),
    ],
  },
  {
    name: 'token backlog: pages per replica on the in-process queue_token_backlog level, with the drain time shown; a long drain the detector did not raise does not',
    interval: '15s',
    input_series: [
      gauge('queueTokensDrainTime', 'a', 'llama:tiny', `12x${STEPS}`),
      level('queue_token_backlog', 'a', 'llama:tiny', `0x${STEPS}`),
      gauge('queueTokensDrainTime', 'b', 'llama:tiny', `45x${STEPS}`),
      level('queue_token_backlog', 'b', 'llama:tiny', `1x${STEPS}`),
      gauge('queueTokensDrainTime', 'a', 'llm2', `150x${STEPS}`),
      level('queue_token_backlog', 'a', 'llm2', `2x${STEPS}`),
    ],
    alert_rule_test: [
      check('1m', 'InferSignalQueueTokenBacklogHigh', [
        expected('InferSignalQueueTokenBacklogHigh', onReplica('b', 'llama:tiny'), 45),
        expected('InferSignalQueueTokenBacklogHigh', onReplica('a', 'llm2'), 150),
      ]),
      check('1m', 'InferSignalQueueTokenBacklogCritical', [
        expected('InferSignalQueueTokenBacklogCritical', onReplica('a', 'llm2'), 150),
      ]),
    ],
  },
  {
    name: 'token backlog: a 90s drain while the in-process level is ok (no request waited through a tick) does not page',
    interval: '15s',
    input_series: [
      gauge('queueTokensDrainTime', 'c', 'llm3', `90x${STEPS}`),
      level('queue_token_backlog', 'c', 'llm3', `0x${STEPS}`),
    ],
    alert_rule_test: [
      check('1m', 'InferSignalQueueTokenBacklogHigh'),
      check('1m', 'InferSignalQueueTokenBacklogCritical'),
    ],
  },
  {
    name: 'queue age: 8s old while the in-process queue_age level is ok (a request the detector judged) does not page',
    interval: '15s',
    input_series: [gauge('queueWaitOldest', 'c', 'q4', `8x${STEPS}`), level('queue_age', 'c', 'q4', `0x${STEPS}`)],
    alert_rule_test: [check('1m', 'InferSignalQueueAgeHigh'), check('1m', 'InferSignalQueueAgeCritical')],
  },
  {
    // Shedding hysteresis and the in-process hold live in core: a gauge that reads 90 % on one scrape while
    // the detector stayed (or already went back) at ok does not page.
    name: 'occupancy: 90% while the in-process occupancy level is ok does not page',
    interval: '15s',
    input_series: [
      gauge('queueOccupancy', 'c', 'q5', `0.9x${STEPS}`),
      level('queue_occupancy', 'c', 'q5', `0x${STEPS}`),
    ],
    alert_rule_test: [check('10m', 'InferSignalQueueOccupancyHigh'), check('10m', 'InferSignalQueueOccupancyCritical')],
  },
  {
    name: 'model load spikes: a new spike fires at once (new series too), an old flat count does not, the alert ends after the event window',
    interval: '15s',
    input_series: [
      {
        series: selector(metricName('modelLoadSpikes'), {
          job: JOB,
          instance: 'a',
          [LABEL.model]: 'old',
          [LABEL.loadKind]: 'reload',
        }),
        values: `3x${STEPS}`,
      },
      {
        series: selector(metricName('modelLoadSpikes'), {
          job: JOB,
          instance: 'a',
          [LABEL.model]: 'grew',
          [LABEL.loadKind]: 'reload',
        }),
        values: `2x80 3x${STEPS - 81}`,
      },
      {
        series: selector(metricName('modelLoadSpikes'), {
          job: JOB,
          instance: 'a',
          [LABEL.model]: 'new',
          [LABEL.loadKind]: 'load',
        }),
        values: `_x80 1x${STEPS - 81}`,
      },
    ],
    alert_rule_test: [
      // Prometheus has seen the old series for more than the 15m event window from here on.
      check('18m', 'InferSignalModelLoadSpike'),
      check('22m', 'InferSignalModelLoadSpike', [
        expected('InferSignalModelLoadSpike', {
          job: JOB,
          instance: 'a',
          [LABEL.model]: 'grew',
          [LABEL.loadKind]: 'reload',
        }),
        expected('InferSignalModelLoadSpike', {
          job: JOB,
          instance: 'a',
          [LABEL.model]: 'new',
          [LABEL.loadKind]: 'load',
        }),
      ]),
      check('40m', 'InferSignalModelLoadSpike'),
    ],
  },
  {
    name: 'stream interruptions: 0.99% warns, 10% is critical, 25% of 40 streams is under the minimum count, 0.25% is fine',
    interval: '15s',
    input_series: [
      ...(
        [
          ['s1', 25, 0.25],
          ['s2', 22.5, 2.5],
          ['s3', 0.75, 0.25],
          ['s4', 100, 0.25],
        ] as const
      ).flatMap(([model, completed, cancelled]) => [
        {
          series: selector(metricName('streams'), {
            job: JOB,
            instance: 'a',
            [LABEL.model]: model,
            [LABEL.outcome]: 'completed',
          }),
          values: `0+${completed}x${STEPS}`,
        },
        {
          series: selector(metricName('streams'), {
            job: JOB,
            instance: 'a',
            [LABEL.model]: model,
            [LABEL.outcome]: model === 's2' ? 'error' : 'cancelled',
          }),
          values: `0+${cancelled}x${STEPS}`,
        },
      ]),
    ],
    alert_rule_test: [
      check('4m', 'InferSignalStreamInterruptions'),
      check('4m', 'InferSignalStreamInterruptionsCritical'),
      check('16m', 'InferSignalStreamInterruptions', [
        expected('InferSignalStreamInterruptions', { job: JOB, instance: 'a', [LABEL.model]: 's1' }, 1 / 101),
        expected('InferSignalStreamInterruptions', { job: JOB, instance: 'a', [LABEL.model]: 's2' }, 0.1),
      ]),
      check('16m', 'InferSignalStreamInterruptionsCritical', [
        expected('InferSignalStreamInterruptionsCritical', { job: JOB, instance: 'a', [LABEL.model]: 's2' }, 0.1),
      ]),
    ],
  },
  {
    name: 'device memory: 70% fragmentation warns, 50% does not; a steadily growing gap drifts, a flat one does not',
    interval: '15s',
    input_series: [
      {
        series: selector(metricName('memoryFragmentation'), {
          job: JOB,
          instance: 'a',
          [LABEL.memorySource]: 'nvml:0',
        }),
        values: `0.7x${STEPS}`,
      },
      {
        series: selector(metricName('memoryFragmentation'), {
          job: JOB,
          instance: 'b',
          [LABEL.memorySource]: 'nvml:0',
        }),
        values: `0.5x${STEPS}`,
      },
      {
        series: selector(metricName('memoryReserved'), { job: JOB, instance: 'a', [LABEL.memorySource]: 'nvml:0' }),
        values: `1000000000x${STEPS}`,
      },
      // gap grows 1 MB per 15 s: 120 MB over 30 min, 12 % of reserved
      {
        series: selector(metricName('memoryAllocated'), { job: JOB, instance: 'a', [LABEL.memorySource]: 'nvml:0' }),
        values: `800000000-1000000x${STEPS}`,
      },
      {
        series: selector(metricName('memoryReserved'), { job: JOB, instance: 'b', [LABEL.memorySource]: 'nvml:0' }),
        values: `1000000000x${STEPS}`,
      },
      {
        series: selector(metricName('memoryAllocated'), { job: JOB, instance: 'b', [LABEL.memorySource]: 'nvml:0' }),
        values: `600000000x${STEPS}`,
      },
    ],
    alert_rule_test: [
      check('4m', 'InferSignalGpuFragmentation'),
      check('6m', 'InferSignalGpuFragmentation', [
        expected('InferSignalGpuFragmentation', { job: JOB, instance: 'a', [LABEL.memorySource]: 'nvml:0' }, 0.7),
      ]),
      check('4m', 'InferSignalMemoryDrift'),
      check('20m', 'InferSignalMemoryDrift', [
        expected('InferSignalMemoryDrift', { job: JOB, instance: 'a', [LABEL.memorySource]: 'nvml:0' }, 0.12),
      ]),
    ],
  },
  {
    name: 'capacity: the in-process level gates every capacity page; ρ 85% at WARN warns, at CRITICAL is critical; 30s to saturation at WARN warns; ρ 85% or 30s to saturation at ok do not',
    interval: '15s',
    input_series: [
      gauge('queueUtilization', 'a', 'q1', `0.5x${STEPS}`),
      // Replica b was found by Kubernetes service discovery: its namespace and pod stay on the page.
      gauge('queueUtilization', 'b', 'q1', `0.85x${STEPS}`, POD_B),
      gauge('queueUtilization', 'a', 'q2', `0.95x${STEPS}`),
      gauge('queueUtilization', 'a', 'q3', `0.6x${STEPS}`),
      // A replica whose ρ gauge reads 0.85 but whose detector is not judging it (no explicit concurrency, warm-up).
      gauge('queueUtilization', 'a', 'q4', `0.85x${STEPS}`),
      gauge('queueTimeToSaturation', 'b', 'q1', `30x${STEPS}`, POD_B),
      // A step from idle: the trend line projects saturation within 60 s while the step is in its window,
      // but the detector's sustained-trend gate (2.5 windows) keeps the level at ok.
      gauge('queueTimeToSaturation', 'a', 'q3', `30x${STEPS}`),
      level('capacity', 'a', 'q1', `0x${STEPS}`),
      level('capacity', 'b', 'q1', `1x${STEPS}`, POD_B),
      level('capacity', 'a', 'q2', `2x${STEPS}`),
      level('capacity', 'a', 'q3', `0x${STEPS}`),
    ],
    alert_rule_test: [
      // The detector held its level (capacity.forSeconds): the page fires at the first evaluation.
      check('0s', 'InferSignalCapacityUtilizationHigh', [
        expected('InferSignalCapacityUtilizationHigh', { ...onReplica('b', 'q1'), ...POD_B }, 0.85),
        expected('InferSignalCapacityUtilizationHigh', onReplica('a', 'q2'), 0.95),
      ]),
      check('1m', 'InferSignalCapacityUtilizationCritical', [
        expected('InferSignalCapacityUtilizationCritical', onReplica('a', 'q2'), 0.95),
      ]),
      check('1m', 'InferSignalTimeToSaturationLow', [
        expected('InferSignalTimeToSaturationLow', { ...onReplica('b', 'q1'), ...POD_B }, 30),
      ]),
    ],
  },
  {
    name: 'capacity: a step from idle to 0.6× does not page, a held trend does once the detector raises WARN',
    interval: '15s',
    input_series: [
      // ρ 0 → 0.6 at 1m; the least-squares trend projects saturation in 30-40 s for one trend window.
      gauge('queueUtilization', 'a', 'step', `0x4 0.6x${STEPS}`),
      gauge('queueTimeToSaturation', 'a', 'step', `_x4 40 35 30 _x${STEPS}`),
      level('capacity', 'a', 'step', `0x${STEPS}`),
      // A ramp: ρ rises 0.02 per scrape and the projection stays under 60 s; core raises WARN at 2m30s.
      gauge('queueUtilization', 'b', 'ramp', `0.3+0.02x${STEPS}`),
      gauge('queueTimeToSaturation', 'b', 'ramp', `50-1x40`),
      level('capacity', 'b', 'ramp', `0x9 1x${STEPS}`),
    ],
    alert_rule_test: [
      ...['1m15s', '1m30s', '2m15s'].map((at) => check(at, 'InferSignalTimeToSaturationLow')),
      check('2m15s', 'InferSignalCapacityUtilizationHigh'),
      check('2m30s', 'InferSignalTimeToSaturationLow', [
        expected('InferSignalTimeToSaturationLow', onReplica('b', 'ramp'), 40),
      ]),
    ],
  },
  {
    // keep_firing_for (thresholds.capacity.keepFiringSeconds, 10 s) holds one
    // evaluation at 15 s: without it the dip resolves the warning, and the
    // return raises a new one.
    name: 'capacity: a one-scrape dip of ρ to 78% or of the level to ok keeps the page firing; it resolves one evaluation after both fall for good',
    interval: '15s',
    input_series: [
      // 0.85 to 5m, 0.78 at 5m15s, 0.85 to 10m30s, then 0.5.
      gauge('queueUtilization', 'a', 'q1', `0.85x20 0.78 0.85x20 0.5x${STEPS - 42}`),
      // The level dips for one scrape at 7m (a missed tick, a restart of the series), then falls with ρ.
      level('capacity', 'a', 'q1', `1x27 0 1x13 0x${STEPS - 42}`),
    ],
    alert_rule_test: ['5m', '5m15s', '5m30s', '7m', '7m15s', '10m30s', '10m45s']
      .map((at) =>
        check(at, 'InferSignalCapacityUtilizationHigh', [
          expected('InferSignalCapacityUtilizationHigh', onReplica('a', 'q1'), 0.85),
        ]),
      )
      .concat([check('11m', 'InferSignalCapacityUtilizationHigh')]),
  },
  {
    name: 'capacity: CRITICAL that drops to WARN for one tick and back stays one critical page (keep_firing_for)',
    interval: '15s',
    input_series: [
      gauge('queueUtilization', 'a', 'q1', `0.97x10 0.93 0.97x10 0.5x${STEPS - 22}`),
      level('capacity', 'a', 'q1', `2x10 1 2x10 0x${STEPS - 22}`),
    ],
    alert_rule_test: [
      // WARN at 2m45s; kept, the page shows the last value it fired with.
      ...['2m', '2m30s', '2m45s', '3m', '5m30s', '5m45s'].map((at) =>
        check(at, 'InferSignalCapacityUtilizationCritical', [
          expected('InferSignalCapacityUtilizationCritical', onReplica('a', 'q1'), 0.97),
        ]),
      ),
      check('6m', 'InferSignalCapacityUtilizationCritical'),
    ],
  },
  {
    name: 'fleet: two of three replicas at WARN give one fleet-wide page; one of three, or one of one, does not',
    interval: '15s',
    input_series: [
      ...['a', 'b', 'c'].flatMap((instance) => [
        gauge('backpressureLevel', instance, 'q1', `0x${STEPS}`),
        gauge('backpressureLevel', instance, 'q2', `0x${STEPS}`),
      ]),
      gauge('backpressureLevel', 'solo', 'q3', `0x${STEPS}`),
      // q1: a is at capacity WARN from 1m15s, b at queue-wait WARN from 2m15s; c stays ok.
      level('capacity', 'a', 'q1', `0x4 1x${STEPS}`),
      level('queue_wait', 'b', 'q1', `0x8 1x${STEPS}`),
      level('capacity', 'c', 'q1', `0x${STEPS}`),
      // q2: one sick replica of three.
      level('capacity', 'a', 'q2', `2x${STEPS}`),
      // q3: a fleet of one.
      level('capacity', 'solo', 'q3', `1x${STEPS}`),
    ],
    alert_rule_test: [
      check('2m', 'InferSignalFleetOverloaded'),
      check('2m15s', 'InferSignalFleetOverloaded', [
        // The description lists the replicas at WARN or above: a and b, not c.
        expected('InferSignalFleetOverloaded', { job: JOB, [LABEL.queue]: 'q1' }, 2 / 3, ['a', 'b']),
      ]),
    ],
  },
  {
    name: 'fleet: a replica page that fired before the fleet page resolves once the fleet page fires; one on another queue stays',
    interval: '15s',
    input_series: [
      ...['a', 'b'].flatMap((instance) => [
        gauge('backpressureLevel', instance, 'q1', `0x${STEPS}`),
        gauge('backpressureLevel', instance, 'q2', `0x${STEPS}`),
      ]),
      // q1: a at capacity WARN (ρ 85 %) from the start, b joins at queue-wait WARN from 2m15s: fleet-wide.
      gauge('queueUtilization', 'a', 'q1', `0.85x${STEPS}`),
      level('capacity', 'a', 'q1', `1x${STEPS}`),
      level('queue_wait', 'b', 'q1', `0x8 1x${STEPS}`),
      // q2: a alone at capacity WARN, b ok: one sick replica, its page stays.
      gauge('queueUtilization', 'a', 'q2', `0.85x${STEPS}`),
      level('capacity', 'a', 'q2', `1x${STEPS}`),
      level('capacity', 'b', 'q2', `0x${STEPS}`),
    ],
    alert_rule_test: [
      check('2m', 'InferSignalCapacityUtilizationHigh', [
        expected('InferSignalCapacityUtilizationHigh', onReplica('a', 'q1'), 0.85),
        expected('InferSignalCapacityUtilizationHigh', onReplica('a', 'q2'), 0.85),
      ]),
      check('3m', 'InferSignalFleetOverloaded', [
        expected('InferSignalFleetOverloaded', { job: JOB, [LABEL.queue]: 'q1' }, 1, ['a', 'b']),
      ]),
      // Prometheus resolves a's q1 page itself (after keep_firing_for), so Alertmanager sends its RESOLVED.
      check('3m', 'InferSignalCapacityUtilizationHigh', [
        expected('InferSignalCapacityUtilizationHigh', onReplica('a', 'q2'), 0.85),
      ]),
    ],
  },
  {
    name: 'event loop: P99 delay 200ms warns, 600ms is critical after the 5m hold, 50ms does not',
    interval: '15s',
    input_series: (
      [
        ['a', 0.2],
        ['b', 0.6],
        ['c', 0.05],
      ] as const
    ).map(([instance, delay]) => ({
      series: selector(metricName('eventLoopDelayP99'), { job: JOB, instance, otel_scope_name: '@infersignal/core' }),
      values: `${delay}x${STEPS}`,
    })),
    alert_rule_test: [
      check('4m', 'InferSignalEventLoopDelayHigh'),
      check('4m', 'InferSignalEventLoopDelayCritical'),
      check('6m', 'InferSignalEventLoopDelayHigh', [
        expected('InferSignalEventLoopDelayHigh', { job: JOB, instance: 'a' }, 0.2),
        expected('InferSignalEventLoopDelayHigh', { job: JOB, instance: 'b' }, 0.6),
      ]),
      check('6m', 'InferSignalEventLoopDelayCritical', [
        expected('InferSignalEventLoopDelayCritical', { job: JOB, instance: 'b' }, 0.6),
      ]),
    ],
  },
  {
    name: 'heap: 72 % live warns, 95 % is critical after the 5m hold, 50 % does not',
    interval: '15s',
    input_series: (
      [
        ['a', 0.72],
        ['b', 0.95],
        ['c', 0.5],
      ] as const
    ).map(([instance, ratio]) => ({
      series: selector(metricName('heapLiveRatio'), { job: JOB, instance, otel_scope_name: '@infersignal/core' }),
      values: `${ratio}x${STEPS}`,
    })),
    alert_rule_test: [
      check('4m', 'InferSignalHeapLiveHigh'),
      check('4m', 'InferSignalHeapLiveCritical'),
      check('6m', 'InferSignalHeapLiveHigh', [
        expected('InferSignalHeapLiveHigh', { job: JOB, instance: 'a' }, 0.72),
        expected('InferSignalHeapLiveHigh', { job: JOB, instance: 'b' }, 0.95),
      ]),
      check('6m', 'InferSignalHeapLiveCritical', [
        expected('InferSignalHeapLiveCritical', { job: JOB, instance: 'b' }, 0.95),
      ]),
    ],
  },
  {
    name: 'heap exhaustion: 600 s to go warns, 60 s is critical after the 30s hold, 2000 s and +Inf do not',
    interval: '15s',
    input_series: (
      [
        ['a', '600'],
        ['b', '60'],
        ['c', '2000'],
        ['d', '+Inf'],
      ] as const
    ).map(([instance, seconds]) => ({
      series: selector(metricName('heapExhaustionTime'), { job: JOB, instance, otel_scope_name: '@infersignal/core' }),
      // The series notation has no expansion for +Inf (`+Infx200` does not parse): written out.
      values: seconds === '+Inf' ? Array.from({ length: STEPS + 1 }, () => '+Inf').join(' ') : `${seconds}x${STEPS}`,
    })),
    alert_rule_test: [
      check('15s', 'InferSignalHeapExhaustionSoon'),
      check('15s', 'InferSignalHeapExhaustionCritical'),
      check('1m', 'InferSignalHeapExhaustionSoon', [
        expected('InferSignalHeapExhaustionSoon', { job: JOB, instance: 'a' }, 600),
        expected('InferSignalHeapExhaustionSoon', { job: JOB, instance: 'b' }, 60),
      ]),
      check('1m', 'InferSignalHeapExhaustionCritical', [
        expected('InferSignalHeapExhaustionCritical', { job: JOB, instance: 'b' }, 60),
      ]),
    ],
  },
  {
    name: 'connections: 9 of 10 warns, 10 of 10 is critical; no capacity and capacity 0 are not judged',
    interval: '15s',
    input_series: (
      [
        ['a', 'http', 9, 10],
        ['b', 'https', 10, 10],
        ['c', 'http', 50, undefined],
        ['d', 'http', 5, 0],
      ] as const
    ).flatMap(([instance, server, open, capacity]) => [
      {
        series: selector(metricName('connectionsOpen'), { job: JOB, instance, [LABEL.server]: server }),
        values: `${open}x${STEPS}`,
      },
      ...(capacity === undefined
        ? []
        : [
            {
              series: selector(metricName('connectionsCapacity'), { job: JOB, instance, [LABEL.server]: server }),
              values: `${capacity}x${STEPS}`,
            },
          ]),
    ]),
    alert_rule_test: [
      check('4m', 'InferSignalConnectionsSaturated'),
      check('4m', 'InferSignalConnectionsSaturatedCritical'),
      check('6m', 'InferSignalConnectionsSaturated', [
        expected('InferSignalConnectionsSaturated', { job: JOB, instance: 'a', [LABEL.server]: 'http' }, 0.9),
        expected('InferSignalConnectionsSaturated', { job: JOB, instance: 'b', [LABEL.server]: 'https' }, 1),
      ]),
      check('6m', 'InferSignalConnectionsSaturatedCritical', [
        expected('InferSignalConnectionsSaturatedCritical', { job: JOB, instance: 'b', [LABEL.server]: 'https' }, 1),
      ]),
    ],
  },
  {
    name: 'rejected connections: a first rejection and a new one fire at once, an old flat count does not, the alert ends one rate window later',
    interval: '15s',
    input_series: [
      {
        series: selector(metricName('connectionsRejected'), { job: JOB, instance: 'a', [LABEL.server]: 'http' }),
        values: `_x80 1x${STEPS - 81}`,
      },
      {
        series: selector(metricName('connectionsRejected'), { job: JOB, instance: 'b', [LABEL.server]: 'http' }),
        values: `2x80 3x${STEPS - 81}`,
      },
      {
        series: selector(metricName('connectionsRejected'), { job: JOB, instance: 'c', [LABEL.server]: 'http' }),
        values: `5x${STEPS}`,
      },
    ],
    alert_rule_test: [
      check('18m', 'InferSignalConnectionsRejected'),
      check('20m30s', 'InferSignalConnectionsRejected', [
        expected('InferSignalConnectionsRejected', { job: JOB, instance: 'a', [LABEL.server]: 'http' }),
        expected('InferSignalConnectionsRejected', { job: JOB, instance: 'b', [LABEL.server]: 'http' }),
      ]),
      check('22m', 'InferSignalConnectionsRejected'),
    ],
  },
  {
    name: 'TLS handshake failures: 0.2/s of one error type fires after the hold, 0.067/s stays under the 0.1/s guard',
    interval: '15s',
    input_series: [
      {
        series: selector(metricName('tlsHandshakeFailures'), {
          job: JOB,
          instance: 'a',
          [LABEL.server]: 'https',
          [LABEL.errorType]: 'ERR_SSL_HTTP_REQUEST',
        }),
        values: `0+3x${STEPS}`,
      },
      {
        series: selector(metricName('tlsHandshakeFailures'), {
          job: JOB,
          instance: 'a',
          [LABEL.server]: 'https',
          [LABEL.errorType]: 'ECONNRESET',
        }),
        values: `0+1x${STEPS}`,
      },
    ],
    alert_rule_test: [
      check('4m', 'InferSignalTlsHandshakeFailures'),
      check('6m', 'InferSignalTlsHandshakeFailures', [
        expected(
          'InferSignalTlsHandshakeFailures',
          { job: JOB, instance: 'a', [LABEL.server]: 'https', [LABEL.errorType]: 'ERR_SSL_HTTP_REQUEST' },
          0.2,
        ),
      ]),
    ],
  },
  {
    name: 'circuit breaker: open with short half-open probes holds the alert; open for one minute, or half-open, does not fire',
    interval: '15s',
    input_series: [
      // Every 5th sample half-open (1): the probe failed and the breaker re-opened.
      {
        series: selector(metricName('breakerState'), { job: JOB, instance: 'a', [LABEL.breakerName]: 'backend' }),
        values: Array.from({ length: STEPS }, (_, i) => (i % 5 === 4 ? 1 : 2)).join(' '),
      },
      {
        series: selector(metricName('breakerState'), { job: JOB, instance: 'a', [LABEL.breakerName]: 'blip' }),
        values: `0x3 2x4 0x${STEPS - 9}`,
      },
      {
        series: selector(metricName('breakerState'), { job: JOB, instance: 'a', [LABEL.breakerName]: 'probing' }),
        values: `1x${STEPS}`,
      },
    ],
    alert_rule_test: [
      check('3m', 'InferSignalCircuitBreakerOpen'),
      check('6m', 'InferSignalCircuitBreakerOpen', [
        expected('InferSignalCircuitBreakerOpen', { job: JOB, instance: 'a', [LABEL.breakerName]: 'backend' }, 2),
      ]),
      check('20m', 'InferSignalCircuitBreakerOpen', [
        expected('InferSignalCircuitBreakerOpen', { job: JOB, instance: 'a', [LABEL.breakerName]: 'backend' }, 2),
      ]),
    ],
  },
  {
    name: 'internal errors: a first error fires, an old flat count does not, the alert ends after the event window',
    interval: '15s',
    input_series: [
      {
        series: selector(metricName('internalErrors'), { job: JOB, instance: 'a', [LABEL.errorSource]: 'webhook' }),
        values: `_x80 1x${STEPS - 81}`,
      },
      {
        series: selector(metricName('internalErrors'), { job: JOB, instance: 'a', [LABEL.errorSource]: 'callback' }),
        values: `5x${STEPS}`,
      },
    ],
    alert_rule_test: [
      check('18m', 'InferSignalInternalErrors'),
      check('22m', 'InferSignalInternalErrors', [
        expected('InferSignalInternalErrors', { job: JOB, instance: 'a', [LABEL.errorSource]: 'webhook' }),
      ]),
      check('40m', 'InferSignalInternalErrors'),
    ],
  },
];

describe('promtool test rules on the generated rules', () => {
  it('covers every alerting rule with a firing and a not-firing case', () => {
    const firing = new Set<string>();
    const silent = new Set<string>();
    for (const test of tests) {
      for (const c of test.alert_rule_test) (c.exp_alerts.length > 0 ? firing : silent).add(c.alertname);
    }
    expect([...firing].sort()).toEqual([...byName.keys()].sort());
    expect([...silent].sort()).toEqual([...byName.keys()].sort());
  });

  it.skipIf(!promtool)(promtool ? 'passes every case' : skipReason('promtool', 'promtool test rules'), () => {
    writeFileSync(join(dir, 'rules.yml'), renderRules());
    writeFileSync(
      join(dir, 'tests.yml'),
      stringify({ rule_files: ['rules.yml'], evaluation_interval: '15s', tests }, { lineWidth: 0 }),
    );
    const run = runTool(promtool as string, ['test', 'rules', 'tests.yml'], dir);
    expect(run.stdout + run.stderr).toContain('SUCCESS');
    expect(run.code, run.stdout + run.stderr).toBe(0);
  });
});
