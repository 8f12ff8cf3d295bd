/**
 * Prometheus recording and alerting rules generated from the monitor's
 * thresholds. One group per signal; recording rules first in each group so
 * the alerts of the same evaluation read fresh values (rules of a group run
 * in order, groups run independently).
 */
import { stringify } from 'yaml';
import { METRICS } from '@infersignal/core';
import { COMPLETED_OUTCOME, LABEL, recordBase } from './names';
import { formatDuration, humanPercent, humanSeconds, percentileName, quantileSuffix } from './duration';
import { holdFor, resolveOptions, type GeneratorOptions, type ResolvedOptions } from './options';
import {
  MODEL_KEYS,
  PROCESS_KEYS,
  QUEUE_KEYS,
  alert,
  by,
  eventExpr,
  recordName,
  type AlertingRule,
  type RecordingRule,
  type RuleFile,
  type RuleGroup,
} from './rule-parts';
import { breakerGroup, capacityGroup, connectionsGroup, runtimeGroup } from './rules-runtime';

export type { Severity, RecordingRule, AlertingRule, RuleGroup, RuleFile } from './rule-parts';
export { RUNBOOK_ANCHORS } from './rule-parts';

/** Name of the recorded queue-wait quantile (the dashboard reads the same series). */
export function queueWaitQuantileRecord(quantile: number): string {
  return recordName([...QUEUE_KEYS, LABEL.model], recordBase('queueWait'), quantileSuffix(quantile));
}

/** Name of the recorded reserved − allocated gap per process and memory source. */
export function memoryGapRecord(): string {
  return recordName(
    PROCESS_KEYS,
    recordBase('memoryReserved'),
    `minus_${METRICS.memoryAllocated.name.split('.').pop()}`,
  );
}

function queueGroup(o: ResolvedOptions): RuleGroup {
  const { metric, bucket } = o.names;
  const q = o.thresholds.queue;
  const hold = holdFor(o, q.forSeconds);
  const quantiles = [...new Set([0.5, 0.95, 0.99, q.waitQuantile, o.tailQuantile])].sort((a, b) => a - b);
  const recordings: RecordingRule[] = quantiles.map((quantile) => ({
    record: queueWaitQuantileRecord(quantile),
    expr: `histogram_quantile(${quantile}, sum ${by('le', ...QUEUE_KEYS, LABEL.model)} (rate(${bucket('queueWait')}[${o.rateWindow}])))`,
  }));
  const wait = queueWaitQuantileRecord(q.waitQuantile);
  const tail = queueWaitQuantileRecord(o.tailQuantile);
  const where = `{{ $labels.${LABEL.model} }} on queue {{ $labels.${LABEL.queue} }} ({{ $labels.job }})`;
  const pq = percentileName(q.waitQuantile);
  const occupancy = `max ${by(...QUEUE_KEYS)} (${metric('queueOccupancy')})`;
  const oldest = `max ${by(...QUEUE_KEYS)} (${metric('queueWaitOldest')})`;
  const queueWhere = `Queue {{ $labels.${LABEL.queue} }} ({{ $labels.job }}, worst replica)`;
  return {
    name: 'infersignal.queue',
    rules: [
      ...recordings,
      alert(
        o,
        'InferSignalQueueWaitHigh',
        'queue_wait',
        'warning',
        `${wait} > ${q.waitWarnSeconds}`,
        hold,
        `${pq} queue wait above ${humanSeconds(q.waitWarnSeconds)}`,
        `${pq} queue wait of ${where} is {{ $value | humanizeDuration }}, above ${humanSeconds(q.waitWarnSeconds)} (thresholds.queue.waitWarnSeconds) for ${hold}. Requests wait before inference starts: the server is close to saturation.`,
        // As in process: a queue that drains for a moment does not resolve the warning (thresholds.queue.keepFiringSeconds).
        formatDuration(q.keepFiringSeconds),
      ),
      alert(
        o,
        'InferSignalQueueWaitCritical',
        'queue_wait',
        'critical',
        `${wait} > ${q.waitCriticalSeconds}`,
        hold,
        `${pq} queue wait above ${humanSeconds(q.waitCriticalSeconds)}`,
        `${pq} queue wait of ${where} is {{ $value | humanizeDuration }}, above ${humanSeconds(q.waitCriticalSeconds)} (thresholds.queue.waitCriticalSeconds) for ${hold}. The queue is saturated; shed or scale out.`,
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
        `${occupancy} >= ${q.occupancyWarn}`,
        hold,
        `Queue occupancy at or above ${humanPercent(q.occupancyWarn)}`,
        `${queueWhere} is {{ $value | humanizePercentage }} full (waiting + in flight over capacity), at or above ${humanPercent(q.occupancyWarn)} (thresholds.queue.occupancyWarn) for ${hold}.`,
        // As in process, where occupancy is also judged per request: a queue hovering at the bound keeps one warning.
        formatDuration(q.keepFiringSeconds),
      ),
      alert(
        o,
        'InferSignalQueueOccupancyCritical',
        'queue_occupancy',
        'critical',
        `${occupancy} > ${q.occupancyCritical}`,
        hold,
        `Queue occupancy above ${humanPercent(q.occupancyCritical)}`,
        `${queueWhere} is {{ $value | humanizePercentage }} full, above ${humanPercent(q.occupancyCritical)} (thresholds.queue.occupancyCritical) for ${hold}. New requests are about to be shed.`,
      ),
      alert(
        o,
        'InferSignalQueueAgeHigh',
        'queue_age',
        'warning',
        `${oldest} > ${q.ageWarnSeconds}`,
        hold,
        `Oldest waiting request older than ${humanSeconds(q.ageWarnSeconds)}`,
        `${queueWhere}: the oldest request still waiting has waited {{ $value | humanizeDuration }}, more than ${humanSeconds(q.ageWarnSeconds)} (thresholds.queue.ageWarnSeconds) for ${hold}. It has not started yet, so the wait histogram does not show it: the queue is stuck or falling behind.`,
        formatDuration(q.keepFiringSeconds),
      ),
      alert(
        o,
        'InferSignalQueueAgeCritical',
        'queue_age',
        'critical',
        `${oldest} > ${q.ageCriticalSeconds}`,
        hold,
        `Oldest waiting request older than ${humanSeconds(q.ageCriticalSeconds)}`,
        `${queueWhere}: the oldest request still waiting has waited {{ $value | humanizeDuration }}, more than ${humanSeconds(q.ageCriticalSeconds)} (thresholds.queue.ageCriticalSeconds) for ${hold}. Requests are not being started: check the runtime behind the queue.`,
      ),
      alert(
        o,
        'InferSignalBackpressureCritical',
        'queue_backpressure',
        'critical',
        `max ${by(...QUEUE_KEYS)} (${metric('backpressureLevel')}) >= 2`,
        hold,
        'Backpressure level CRITICAL',
        `${queueWhere} reports backpressure level CRITICAL (occupancy or ${pq} wait past the critical thresholds) for ${hold}; admit() is shedding requests with Retry-After ${o.thresholds.queue.retryAfterSeconds}s, for at least ${humanSeconds(o.thresholds.queue.shedHoldSeconds)} (thresholds.queue.shedHoldSeconds) and until those levels cleared by their hysteresis.`,
      ),
    ],
  };
}

function modelLoadGroup(o: ResolvedOptions): RuleGroup {
  const { metric } = o.names;
  const keys = [...MODEL_KEYS, LABEL.loadKind];
  return {
    name: 'infersignal.model_load',
    rules: [
      alert(
        o,
        'InferSignalModelLoadSpike',
        'model_load',
        'warning',
        eventExpr(metric('modelLoadSpikes'), keys, o.eventWindow),
        undefined,
        'Model load slower than its baseline',
        `A {{ $labels.${LABEL.loadKind} }} of {{ $labels.${LABEL.model} }} ({{ $labels.job }}) in the last ${o.eventWindow} took more than ${o.thresholds.modelLoad.spikeFactor}x the model's healthy baseline (thresholds.modelLoad.spikeFactor) and at least ${o.thresholds.modelLoad.minSpikeSeconds}s (thresholds.modelLoad.minSpikeSeconds): storage, cache or device contention.`,
      ),
    ],
  };
}

/** Name of the recorded interrupted-stream share and stream count. */
export function streamRecords(): { ratio: string; count: string } {
  return {
    ratio: recordName(MODEL_KEYS, recordBase('streams'), 'interrupted_ratio'),
    count: recordName(MODEL_KEYS, recordBase('streams'), 'increase'),
  };
}

function streamGroup(o: ResolvedOptions): RuleGroup {
  const { metric } = o.names;
  const s = o.thresholds.stream;
  const hold = holdFor(o, 0);
  const records = streamRecords();
  const streams = metric('streams');
  const guard = `and on (${MODEL_KEYS.join(', ')}) ${records.count} >= ${s.minSamples}`;
  const where = `{{ $labels.${LABEL.model} }} ({{ $labels.job }})`;
  return {
    name: 'infersignal.stream',
    rules: [
      { record: records.count, expr: `sum ${by(...MODEL_KEYS)} (increase(${streams}[${o.streamWindow}]))` },
      {
        record: records.ratio,
        expr: `sum ${by(...MODEL_KEYS)} (increase(${streams}{${LABEL.outcome}!="${COMPLETED_OUTCOME}"}[${o.streamWindow}])) / ${records.count}`,
      },
      alert(
        o,
        'InferSignalStreamInterruptions',
        'stream_interruptions',
        'warning',
        `${records.ratio} > ${s.interruptedRatio} ${guard}`,
        hold,
        `Interrupted streams above ${humanPercent(s.interruptedRatio)}`,
        `{{ $value | humanizePercentage }} of the streams of ${where} ended interrupted (cancelled, error, unavailable, deadline exceeded) over ${o.streamWindow}, above ${humanPercent(s.interruptedRatio)} (thresholds.stream.interruptedRatio), with at least ${s.minSamples} streams (thresholds.stream.minSamples).`,
      ),
      alert(
        o,
        'InferSignalStreamInterruptionsCritical',
        'stream_interruptions',
        'critical',
        `${records.ratio} > ${s.interruptedRatioCritical} ${guard}`,
        hold,
        `Interrupted streams above ${humanPercent(s.interruptedRatioCritical)}`,
        `{{ $value | humanizePercentage }} of the streams of ${where} ended interrupted over ${o.streamWindow}, above ${humanPercent(s.interruptedRatioCritical)} (thresholds.stream.interruptedRatioCritical), with at least ${s.minSamples} streams.`,
      ),
    ],
  };
}

function deviceMemoryGroup(o: ResolvedOptions): RuleGroup {
  const { metric } = o.names;
  const d = o.thresholds.deviceMemory;
  const gap = memoryGapRecord();
  const reserved = `sum ${by(...PROCESS_KEYS)} (${metric('memoryReserved')})`;
  const where = `{{ $labels.instance }} ({{ $labels.job }}, source {{ $labels.${LABEL.memorySource} }})`;
  return {
    name: 'infersignal.device_memory',
    rules: [
      { record: gap, expr: `${reserved} - sum ${by(...PROCESS_KEYS)} (${metric('memoryAllocated')})` },
      alert(
        o,
        'InferSignalGpuFragmentation',
        'gpu_fragmentation',
        'warning',
        `max ${by(...PROCESS_KEYS)} (${metric('memoryFragmentation')}) > ${d.fragmentation}`,
        holdFor(o, d.fragmentationForSeconds),
        `Device memory fragmentation above ${humanPercent(d.fragmentation)}`,
        `Fragmentation (1 - allocated / reserved) of ${where} is {{ $value | humanizePercentage }}, above ${humanPercent(d.fragmentation)} (thresholds.deviceMemory.fragmentation): the allocator holds memory no tensor uses; large allocations may fail although memory looks free.`,
      ),
      alert(
        o,
        'InferSignalMemoryDrift',
        'memory_drift',
        'warning',
        `deriv(${gap}[${o.driftWindow}]) * ${o.driftWindowSeconds} / ${reserved} > ${d.driftMinGrowth}`,
        holdFor(o, 0),
        'Reserved-minus-allocated device memory keeps growing',
        `The reserved - allocated gap of ${where} grew by {{ $value | humanizePercentage }} of reserved memory over ${o.driftWindow} (linear fit), above ${humanPercent(d.driftMinGrowth)} (thresholds.deviceMemory.driftMinGrowth): a leak precursor.`,
      ),
    ],
  };
}

function internalGroup(o: ResolvedOptions): RuleGroup {
  const { metric } = o.names;
  const keys = ['job', LABEL.errorSource];
  return {
    name: 'infersignal.internal',
    rules: [
      alert(
        o,
        'InferSignalInternalErrors',
        'internal_errors',
        'warning',
        eventExpr(metric('internalErrors'), keys, o.eventWindow),
        undefined,
        'InferSignal caught internal errors',
        `InferSignal in {{ $labels.job }} caught errors from {{ $labels.${LABEL.errorSource} }} in the last ${o.eventWindow}. Requests were not affected, but signals may be missing.`,
      ),
    ],
  };
}

/** The rule groups for the given thresholds and options. */
export function buildRules(options: GeneratorOptions = {}): RuleFile {
  const o = resolveOptions(options);
  return {
    groups: [
      queueGroup(o),
      capacityGroup(o),
      modelLoadGroup(o),
      streamGroup(o),
      deviceMemoryGroup(o),
      runtimeGroup(o),
      connectionsGroup(o),
      breakerGroup(o),
      internalGroup(o),
    ],
  };
}

/** Every alerting rule of a rule file, in order. */
export function alertingRules(file: RuleFile): AlertingRule[] {
  return file.groups.flatMap((group) => group.rules.filter((rule): rule is AlertingRule => 'alert' in rule));
}

export const GENERATED_HEADER =
  'Generated by @infersignal/rules from the InferSignal thresholds. Do not edit by hand: change the thresholds and regenerate.';

/** YAML text of the rules, as `promtool check rules` and Prometheus read it. */
export function renderRules(options: GeneratorOptions = {}): string {
  return toYaml(buildRules(options));
}

export function toYaml(value: unknown, header = GENERATED_HEADER): string {
  return `# ${header}\n${stringify(value, { lineWidth: 0 })}`;
}
