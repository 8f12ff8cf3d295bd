/**
 * The process runtime's signals: `event_loop` (the longest loop block per
 * sample period, its delay percentiles and utilization, GC pauses),
 * `heap_headroom` (the live JS heap after a major GC against the
 * old-generation limit) and `heap_exhaustion` (its growth trend projected
 * to the point where V8 may abort). One rule group and one dashboard row.
 */
import { ATTR } from '../attributes';
import { defineSignal, type ThresholdGroup } from '../definition';
import { InferSignalConfigError } from '../config-error';
import type { EventLoopThresholds } from '../thresholds';
import type { HeapThresholds } from '../thresholds';

const metrics = {
  eventLoopDelayP50: {
    name: 'nodejs.eventloop.delay.p50',
    type: 'gauge',
    unit: 's',
    description:
      'Event-loop delay median over the last sample period (the lateness of a probe timer due every 20 ms, every 200 ms while the loop rests).',
    attributes: [],
  },
  eventLoopDelayP99: {
    name: 'nodejs.eventloop.delay.p99',
    type: 'gauge',
    unit: 's',
    description: 'Event-loop delay P99 over the last sample period.',
    attributes: [],
    feeds: 'eventLoop.delayWarnSeconds / eventLoop.delayCriticalSeconds',
  },
  eventLoopDelayMax: {
    name: 'nodejs.eventloop.delay.max',
    type: 'gauge',
    unit: 's',
    description: 'Event-loop delay maximum over the last sample period.',
    attributes: [],
  },
  eventLoopUtilization: {
    name: 'nodejs.eventloop.utilization',
    type: 'gauge',
    unit: '1',
    description: 'Share of the last sample period the event loop was busy (performance.eventLoopUtilization).',
    attributes: [],
  },
  gcDuration: {
    name: 'v8js.gc.duration',
    type: 'histogram',
    unit: 's',
    description: 'Garbage-collection pause durations (PerformanceObserver gc entries).',
    attributes: ['v8js.gc.type'],
  },
  heapUsed: {
    name: 'v8js.memory.heap.used',
    type: 'gauge',
    unit: 'By',
    description:
      'Bytes in use per V8 heap space (space_used_size of v8.getHeapSpaceStatistics()), read at collection. The V8JS conventions make it an UpDownCounter; observed here as a gauge (the same Prometheus gauge).',
    attributes: [ATTR.heapSpace],
  },
  heapLive: {
    name: 'infersignal.heap.live',
    type: 'gauge',
    unit: 'By',
    description:
      'Old-generation bytes in use right after the last major GC (mark-compact): the live set the collector could not free. ' +
      "From half the WARN share of the limit up, V8's own figures at the collection's end (a v8.GCProfiler); below it, read in the GC observer's callback, which counts what the process allocated since (a profiler writes every scavenge's statistics inside its pause, so it runs only where a few points matter). " +
      'Every space but the young generation and read-only space.',
    attributes: [],
  },
  heapLiveLimit: {
    name: 'infersignal.heap.live.limit',
    type: 'gauge',
    unit: 'By',
    description:
      "The old-generation limit the live set is judged against: --max-old-space-size where the process was given it, else V8's heap_size_limit less its young-generation reserve.",
    attributes: [],
  },
  heapLiveRatio: {
    name: 'infersignal.heap.live.ratio',
    type: 'gauge',
    unit: '1',
    description:
      'infersignal.heap.live / infersignal.heap.live.limit: how full the heap stays after the collector did its best. The process dies of heap exhaustion at 1, a busy one sooner (V8 gives up when mark-compacts free too little).',
    attributes: [],
    feeds: 'heap.liveWarn / heap.liveCritical',
  },
  heapExhaustionTime: {
    name: 'infersignal.heap.exhaustion.time',
    type: 'gauge',
    unit: 's',
    description:
      'Seconds until the live set reaches 80 % of infersignal.heap.live.limit (where V8 may abort with "ineffective mark-compacts near heap limit") at the least-squares trend of the live set over heap.trendWindowSeconds, carried forward between major GCs. Absent unless the live set rises: a line (R² ≥ 0.8) through at least two major GCs 3 s or more apart that rises by 10 % of the limit, the live set past half of heap.liveWarn.',
    attributes: [],
    feeds: 'heap.exhaustionWarnSeconds / heap.exhaustionCriticalSeconds',
  },
} as const;

export const eventLoopThresholds: ThresholdGroup = {
  group: 'eventLoop',
  fields: {
    delayWarnSeconds: { default: 0.1, accepts: { type: 'number', above: 0 } },
    delayCriticalSeconds: { default: 0.5, accepts: { type: 'number', above: 0 } },
    sampleIntervalMs: { default: 1000, accepts: { type: 'number', above: 0 } },
    backpressure: { default: true, accepts: { type: 'boolean' } },
  },
  check(values, prefix) {
    const t = values as unknown as EventLoopThresholds;
    if (t.delayWarnSeconds >= t.delayCriticalSeconds)
      throw new InferSignalConfigError(
        `${prefix}.eventLoop.delayWarnSeconds`,
        `must be below eventLoop.delayCriticalSeconds (${t.delayCriticalSeconds}), got ${t.delayWarnSeconds}`,
      );
  },
};

export const heapThresholds: ThresholdGroup = {
  group: 'heap',
  fields: {
    liveWarn: { default: 0.7, accepts: { type: 'number', min: 0, max: 1 } },
    liveCritical: { default: 0.75, accepts: { type: 'number', min: 0, max: 1 } },
    majorGcs: { default: 2, accepts: { type: 'integer', min: 1, max: 64 } },
    exhaustionWarnSeconds: { default: 900, accepts: { type: 'number', above: 0 } },
    exhaustionCriticalSeconds: { default: 120, accepts: { type: 'number', above: 0 } },
    trendWindowSeconds: { default: 600, accepts: { type: 'number', above: 0 } },
  },
  check(values, prefix) {
    const t = values as unknown as HeapThresholds;
    if (t.liveWarn >= t.liveCritical)
      throw new InferSignalConfigError(
        `${prefix}.heap.liveWarn`,
        `must be below heap.liveCritical (${t.liveCritical}), got ${t.liveWarn}`,
      );
    if (t.exhaustionCriticalSeconds >= t.exhaustionWarnSeconds)
      throw new InferSignalConfigError(
        `${prefix}.heap.exhaustionCriticalSeconds`,
        `must be below heap.exhaustionWarnSeconds (${t.exhaustionWarnSeconds})`,
      );
  },
};

/** How long a projected heap exhaustion holds before Prometheus fires (core already asks for a sustained trend). */
const LEAK_HOLD_SECONDS = 30;

export const runtimeSignal = defineSignal({
  name: 'runtime',
  metrics,
  buckets: {
    /** The semantic conventions' advice for v8js.gc.duration, so every exporter of it agrees. */
    [metrics.gcDuration.name]: [0.01, 0.1, 1, 10],
  },
  thresholds: [eventLoopThresholds, heapThresholds],
  alerts: [
    {
      name: 'InferSignalEventLoopDelayHigh',
      signal: 'event_loop',
      severity: 'warning',
      runbook: 'event-loop-delay',
      doc: '`max by (job, instance) (nodejs_eventloop_delay_p99_seconds) > 0.1`',
    },
    {
      name: 'InferSignalEventLoopDelayCritical',
      signal: 'event_loop',
      severity: 'critical',
      runbook: 'event-loop-delay',
      doc: 'same, `> 0.5`',
    },
    {
      name: 'InferSignalHeapLiveHigh',
      signal: 'heap_headroom',
      severity: 'warning',
      runbook: 'heap-headroom',
      doc: '`max by (job, instance) (infersignal_heap_live_ratio) > 0.7`',
    },
    {
      name: 'InferSignalHeapLiveCritical',
      signal: 'heap_headroom',
      severity: 'critical',
      runbook: 'heap-headroom',
      doc: 'same, `> 0.75`',
    },
    {
      name: 'InferSignalHeapExhaustionSoon',
      signal: 'heap_exhaustion',
      severity: 'warning',
      runbook: 'heap-exhaustion',
      doc: '`min by (job, instance) (infersignal_heap_exhaustion_time_seconds) < 900`',
    },
    {
      name: 'InferSignalHeapExhaustionCritical',
      signal: 'heap_exhaustion',
      severity: 'critical',
      runbook: 'heap-exhaustion',
      doc: 'same, `< 120`',
    },
  ],

  rules(k) {
    const e = k.thresholds.eventLoop as unknown as EventLoopThresholds;
    const h = k.thresholds.heap as unknown as HeapThresholds;
    const keys = k.replicaKeys;
    const hold = k.hold(0);
    const delay = `max ${k.by(...keys)} (${k.metric(metrics.eventLoopDelayP99)})`;
    const live = `max ${k.by(...keys)} (${k.metric(metrics.heapLiveRatio)})`;
    const exhaustion = `min ${k.by(...keys)} (${k.metric(metrics.heapExhaustionTime)})`;
    // Core raises heap_exhaustion only on a trend that held over several major GCs; a fast leak lives for seconds.
    const leakHold = k.hold(LEAK_HOLD_SECONDS);
    const where = `replica ${k.replica} ({{ $labels.job }})`;
    const s = k.humanSeconds;
    const p = k.humanPercent;
    return {
      name: 'infersignal.runtime',
      rules: [
        k.alert(
          'InferSignalEventLoopDelayHigh',
          `${delay} > ${e.delayWarnSeconds}`,
          hold,
          `Event-loop delay P99 above ${s(e.delayWarnSeconds)}`,
          `Event-loop delay P99 of ${where} is {{ $value | humanizeDuration }}, above ${s(e.delayWarnSeconds)} (thresholds.eventLoop.delayWarnSeconds) for ${hold}. Something runs synchronously on the main thread (inference, JSON of large bodies, GC): every request, timer and socket waits behind it.`,
        ),
        k.alert(
          'InferSignalEventLoopDelayCritical',
          `${delay} > ${e.delayCriticalSeconds}`,
          hold,
          `Event-loop delay P99 above ${s(e.delayCriticalSeconds)}`,
          `Event-loop delay P99 of ${where} is {{ $value | humanizeDuration }}, above ${s(e.delayCriticalSeconds)} (thresholds.eventLoop.delayCriticalSeconds) for ${hold}. The process is saturated even if its queue is not: health checks, streams and timeouts stall.`,
        ),
        k.alert(
          'InferSignalHeapLiveHigh',
          `${live} > ${h.liveWarn}`,
          hold,
          `Live JS heap above ${p(h.liveWarn)} of its limit`,
          `${where} holds {{ $value | humanizePercentage }} of its old-generation limit in live objects after a major GC (infersignal.heap.live.ratio), above ${p(h.liveWarn)} (thresholds.heap.liveWarn) for ${hold}. What the collector cannot free keeps growing: a leak or an unbounded cache ends in "JavaScript heap out of memory".`,
        ),
        k.alert(
          'InferSignalHeapLiveCritical',
          `${live} > ${h.liveCritical}`,
          hold,
          `Live JS heap above ${p(h.liveCritical)} of its limit`,
          `${where} holds {{ $value | humanizePercentage }} of its old-generation limit in live objects after a major GC, above ${p(h.liveCritical)} (thresholds.heap.liveCritical) for ${hold}. V8 is about to abort the process (heap out of memory); major GCs come back to back and free almost nothing.`,
        ),
        k.alert(
          'InferSignalHeapExhaustionSoon',
          `${exhaustion} < ${h.exhaustionWarnSeconds}`,
          leakHold,
          `JS heap of the process runs out within ${s(h.exhaustionWarnSeconds)} at its growth`,
          `The process ${where} leaks: at the least-squares trend of its live heap over thresholds.heap.trendWindowSeconds it reaches 80 % of its old-generation limit, where V8 may abort it ("heap out of memory"), in {{ $value | humanizeDuration }}, under ${s(h.exhaustionWarnSeconds)} (thresholds.heap.exhaustionWarnSeconds), for ${leakHold}.`,
        ),
        k.alert(
          'InferSignalHeapExhaustionCritical',
          `${exhaustion} < ${h.exhaustionCriticalSeconds}`,
          leakHold,
          `JS heap of the process runs out within ${s(h.exhaustionCriticalSeconds)} at its growth`,
          `The process ${where} reaches 80 % of its old-generation limit in {{ $value | humanizeDuration }} at the growth of its live heap, under ${s(h.exhaustionCriticalSeconds)} (thresholds.heap.exhaustionCriticalSeconds), for ${leakHold}: V8 is about to abort it (heap out of memory); take a heap snapshot or restart it now.`,
        ),
      ],
    };
  },

  panels(k) {
    const e = k.thresholds.eventLoop as unknown as EventLoopThresholds;
    const h = k.thresholds.heap as unknown as HeapThresholds;
    const job = k.select.job;
    const gcType = k.label(metrics.gcDuration.attributes[0]);
    const perInstance = (spec: (typeof metrics)[keyof typeof metrics]) =>
      `max by (instance) (${k.metric(spec)}{${job}})`;
    k.row('Runtime: event loop and GC');
    k.add({
      title: 'Event-loop delay P99 / max',
      description:
        'Per sample period (thresholds.eventLoop.sampleIntervalMs). Lines: thresholds.eventLoop.delayWarnSeconds and delayCriticalSeconds.',
      w: 6,
      unit: 's',
      lines: [e.delayWarnSeconds, e.delayCriticalSeconds],
      targets: [
        { expr: perInstance(metrics.eventLoopDelayP99), legend: 'P99 {{instance}}' },
        { expr: perInstance(metrics.eventLoopDelayMax), legend: 'max {{instance}}' },
      ],
    });
    k.add({
      title: 'Event-loop utilization',
      description:
        'Share of the sample period the loop was busy. Near 100 % with a low delay: busy but keeping up; with a high delay: saturated.',
      w: 6,
      unit: 'percentunit',
      targets: [{ expr: perInstance(metrics.eventLoopUtilization), legend: '{{instance}}' }],
      fieldConfig: { defaults: { min: 0, max: 1 } },
    });
    k.add({
      title: 'GC time share by type',
      description: 'Seconds of GC pause per second, by V8 GC kind.',
      w: 6,
      unit: 'percentunit',
      targets: [
        {
          expr: `sum by (instance, ${gcType}) (${k.rate(`${k.metric(metrics.gcDuration)}_sum`, job)})`,
          legend: `{{${gcType}}} {{instance}}`,
        },
      ],
      fieldConfig: { defaults: { min: 0, custom: { stacking: { mode: 'normal' }, fillOpacity: 30 } } },
    });
    k.add({
      title: 'GC pause P99',
      w: 6,
      unit: 's',
      targets: [
        {
          expr: `histogram_quantile(0.99, sum by (le, instance) (${k.rate(k.bucket(metrics.gcDuration), job)}))`,
          legend: 'P99 {{instance}}',
        },
      ],
    });
    k.add({
      title: 'Live heap after major GC / limit',
      description:
        'Old-generation bytes in use right after the last major GC, as a share of the old-generation limit (--max-old-space-size, or heap_size_limit less the young generation). A leak climbs collection after collection; a healthy heap comes back to the same share. Lines: thresholds.heap.liveWarn and liveCritical.',
      w: 6,
      unit: 'percentunit',
      lines: [h.liveWarn, h.liveCritical],
      targets: [{ expr: perInstance(metrics.heapLiveRatio), legend: '{{instance}}' }],
      fieldConfig: { defaults: { min: 0, max: 1 } },
    });
    k.add({
      title: 'Time to heap exhaustion',
      description:
        'Seconds until the live heap reaches 80 % of the old-generation limit (where V8 may abort the process) at its least-squares growth over thresholds.heap.trendWindowSeconds; only while it rises over several major GCs. Line: thresholds.heap.exhaustionWarnSeconds.',
      w: 6,
      unit: 's',
      lines: [h.exhaustionWarnSeconds],
      lowIsBad: true,
      targets: [
        { expr: `min by (instance) (${k.metric(metrics.heapExhaustionTime)}{${job}})`, legend: '{{instance}}' },
      ],
      fieldConfig: { defaults: { min: 0 } },
    });
  },
});
