/**
 * The queue signals: the wait before inference (`queue_wait`), occupancy
 * (`queue_occupancy`), the oldest waiting request's age (`queue_age`), the
 * waits still accruing per slot (`queue_pending_wait`), an LLM queue's
 * token backlog (`queue_token_backlog`) and admission's backpressure
 * (`queue_backpressure`). Their metrics, thresholds and alerts are read
 * from here, and its Prometheus rules and dashboard rows are rendered from
 * its templates.
 */
import { ATTR, GEN_AI_ATTRIBUTES } from '../attributes';
import { defineSignal, type ThresholdGroup } from '../definition';
import { InferSignalConfigError } from '../config-error';
import type { QueueThresholds } from '../thresholds';

const metrics = {
  queueWait: {
    name: 'infersignal.queue.wait.duration',
    type: 'histogram',
    unit: 's',
    description: 'Time a request waited between arrival and the start of inference.',
    attributes: [ATTR.queue, ATTR.model],
    feeds: 'queue.waitWarnSeconds / queue.waitCriticalSeconds',
  },
  inferenceDuration: {
    name: 'infersignal.inference.duration',
    type: 'histogram',
    unit: 's',
    description: 'Time from the start of inference to the end of the request.',
    attributes: [ATTR.queue, ATTR.model, ATTR.outcome],
    feeds: 'glitch.deltaSeconds',
  },
  requestDuration: {
    name: 'gen_ai.server.request.duration',
    type: 'histogram',
    unit: 's',
    description:
      'Time from arrival to the end of the request (queue wait included), every outcome. `error.type` on every outcome but completed: the outcome (cancelled, rejected, timeout, unavailable, deadline_exceeded), `_OTHER` for error.',
    attributes: [...GEN_AI_ATTRIBUTES, ATTR.errorType, ATTR.queue, ATTR.outcome],
  },
  requests: {
    name: 'infersignal.requests',
    type: 'counter',
    unit: '{request}',
    description: 'Requests that ended, by outcome (completed, cancelled, error, rejected, timeout, …).',
    attributes: [ATTR.queue, ATTR.model, ATTR.outcome],
  },
  queueWaiting: {
    name: 'infersignal.queue.waiting',
    type: 'gauge',
    unit: '{request}',
    description: 'Requests that arrived and have not started inference.',
    attributes: [ATTR.queue],
  },
  queueInFlight: {
    name: 'infersignal.queue.in_flight',
    type: 'gauge',
    unit: '{request}',
    description: 'Requests that started inference and have not ended.',
    attributes: [ATTR.queue],
  },
  queueCapacity: {
    name: 'infersignal.queue.capacity',
    type: 'gauge',
    unit: '{request}',
    description: 'Configured capacity of the queue (waiting + in flight).',
    attributes: [ATTR.queue],
  },
  queueOccupancy: {
    name: 'infersignal.queue.occupancy',
    type: 'gauge',
    unit: '1',
    description: '(waiting + in flight) / capacity.',
    attributes: [ATTR.queue],
    feeds: 'queue.occupancyWarn / queue.occupancyCritical',
  },
  queueWaitOldest: {
    name: 'infersignal.queue.wait.oldest',
    type: 'gauge',
    unit: 's',
    description:
      'Age of the oldest request still waiting (arrival → now), read at collection; 0 when none waits. Unlike the wait histogram, which records a request when it leaves the queue, it rises while a queue is stuck.',
    attributes: [ATTR.queue],
    feeds: 'queue.ageWarnSeconds / queue.ageCriticalSeconds',
  },
  queueWaitPending: {
    name: 'infersignal.queue.wait.pending',
    type: 'gauge',
    unit: 's',
    description:
      'Time the requests still waiting have already waited, summed (Σ now − arrival), read at collection; 0 when none waits.',
    attributes: [ATTR.queue],
    feeds: 'queue.pendingWaitWarnSeconds / queue.pendingWaitCriticalSeconds (per slot)',
  },
  queueTokensPending: {
    name: 'infersignal.queue.tokens.pending',
    type: 'gauge',
    unit: '{token}',
    description:
      "Token backlog of an LLM queue, read at collection: `gen_ai.token.type` `input`, the prompt tokens of the requests still waiting; `output`, the output tokens still owed to the running requests (their max_tokens less the tokens produced so far; a request without max_tokens owes none). Present at 0 from the queue's creation on a queue made with `tokens: true`.",
    attributes: [ATTR.queue, ATTR.tokenType],
  },
  queueTokensDrainTime: {
    name: 'infersignal.queue.tokens.drain.time',
    type: 'gauge',
    unit: 's',
    description:
      "Time an LLM queue's known output work takes at the output rate it has been serving at: the max_tokens of the running and waiting requests, scaled by the share of max_tokens its recent completed requests produced (1 until 8 completed), less the tokens the running ones produced, over output tokens per second while requests ran (over capacity.rateWindowSeconds). 0 when none waits; not observed while no token was produced in the window.",
    attributes: [ATTR.queue],
    feeds: 'queue.tokenDrainWarnSeconds / queue.tokenDrainCriticalSeconds',
  },
  backpressureLevel: {
    name: 'infersignal.queue.backpressure.level',
    type: 'gauge',
    unit: '{level}',
    description:
      'Backpressure level of the queue: 0 ok, 1 warn, 2 critical (a shedding episode: admission turns away the excess, until none for queue.shedHoldSeconds and its levels cleared by their hysteresis).',
    attributes: [ATTR.queue],
  },
} as const;

const positive = { type: 'number', above: 0 } as const;
const nonNegative = { type: 'number', min: 0 } as const;
const ratio = { type: 'number', min: 0, max: 1 } as const;

/** Each WARN bound below its CRITICAL one. */
const ORDERED: readonly (readonly [string, string, boolean])[] = [
  ['occupancyWarn', 'occupancyCritical', true],
  ['waitWarnSeconds', 'waitCriticalSeconds', true],
  ['ageWarnSeconds', 'ageCriticalSeconds', false],
  ['pendingWaitWarnSeconds', 'pendingWaitCriticalSeconds', true],
  ['tokenDrainWarnSeconds', 'tokenDrainCriticalSeconds', true],
];

/** `thresholds.queue`: the queue's levels, shedding and the hold, keep and hysteresis of its alerts. */
export const queueThresholds: ThresholdGroup = {
  group: 'queue',
  fields: {
    occupancyWarn: { default: 0.7, accepts: ratio },
    occupancyCritical: { default: 0.85, accepts: ratio },
    waitQuantile: { default: 0.95, accepts: { type: 'number', above: 0, below: 1 } },
    waitWarnSeconds: { default: 0.2, accepts: positive },
    waitCriticalSeconds: { default: 0.5, accepts: positive },
    waitWindowSeconds: { default: 30, accepts: positive },
    forSeconds: { default: 0, accepts: nonNegative },
    keepFiringSeconds: { default: 10, accepts: nonNegative },
    retryAfterSeconds: { default: 1, accepts: positive },
    shedHoldSeconds: { default: 3, accepts: nonNegative },
    ageWarnSeconds: { default: 1, accepts: positive },
    ageCriticalSeconds: { default: 5, accepts: positive },
    pendingWaitWarnSeconds: { default: 10, accepts: positive },
    pendingWaitCriticalSeconds: { default: 60, accepts: positive },
    tokenDrainWarnSeconds: { default: 30, accepts: positive },
    tokenDrainCriticalSeconds: { default: 120, accepts: positive },
  },
  check(values, prefix) {
    for (const [warn, critical, shown] of ORDERED) {
      if ((values[warn] as number) < (values[critical] as number)) continue;
      throw new InferSignalConfigError(
        `${prefix}.queue.${warn}`,
        `must be below queue.${critical} (${values[critical]})${shown ? `, got ${values[warn]}` : ''}`,
      );
    }
  },
};

/** `thresholds.glitch`: the P99 glitch detector of the inference duration (ΔL = max − P99 in a window). */
export const glitchThresholds: ThresholdGroup = {
  group: 'glitch',
  fields: {
    windowSeconds: { default: 10, accepts: positive },
    deltaSeconds: { default: 0.25, accepts: positive },
    // Window sizes allocate typed arrays up front: a cap keeps memory bounded and the error clear.
    minSamples: { default: 20, accepts: { type: 'integer', min: 1, max: 4096 } },
  },
};

/** `thresholds.anomaly`: the z-score detector of the queue wait quantile against its recent mean. */
export const anomalyThresholds: ThresholdGroup = {
  group: 'anomaly',
  fields: {
    window: { default: 60, accepts: { type: 'integer', min: 1, max: 10_000 } },
    zScore: { default: 3, accepts: positive },
    floorRatio: { default: 0.5, accepts: nonNegative },
    forSeconds: { default: 5, accepts: nonNegative },
    hysteresis: { default: 0.2, accepts: ratio },
    keepFiringSeconds: { default: 10, accepts: nonNegative },
    bothDirections: { default: false, accepts: { type: 'boolean' } },
  },
};

export const queueSignal = defineSignal({
  name: 'queue',
  metrics,
  buckets: {
    // Read as P50/P95/P99 (recording rules, panels, the HPA's per-pod P95 against queue.waitWarnSeconds) and
    // compared with the default thresholds 0.2, 0.3 (the P99 tail) and 0.5 s, each a boundary so the comparison
    // is exact; dense from 0.1 to 1 s where the HPA scales in proportion, a few steps below for a healthy
    // queue's millisecond waits and above up to a minute of timeout. Each boundary is one series per queue and
    // model at every scrape.
    [metrics.queueWait.name]: [
      0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 10, 30, 60,
    ],
    // Opt-in (core/opt-in.ts): the GenAI conventions' boundaries, and the same with 5 ms in front for inference.
    [metrics.inferenceDuration.name]: [
      0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ],
    [metrics.requestDuration.name]: [
      0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ],
  },
  thresholds: [queueThresholds, glitchThresholds, anomalyThresholds],
  ruleOptions: {
    /** The queue-wait quantile of InferSignalQueueWaitTailHigh, beside `thresholds.queue.waitQuantile`. */
    tailQuantile: { default: 0.99, accepts: { type: 'number', above: 0, below: 1 } },
    /** Its bound (s): the tail waits even if the median does not. */
    tailSeconds: { default: 0.3, accepts: positive },
  },
  alerts: [
    {
      name: 'InferSignalQueueWaitHigh',
      signal: 'queue_wait',
      severity: 'warning',
      runbook: 'queue-wait',
      doc: '`max by (R, queue) (job_queue_model:infersignal_queue_wait_duration_seconds:p95) and level(queue_wait) >= 1`',
    },
    {
      name: 'InferSignalQueueWaitCritical',
      signal: 'queue_wait',
      severity: 'critical',
      runbook: 'queue-wait',
      doc: 'same, `level(queue_wait) >= 2`',
    },
    {
      name: 'InferSignalQueueWaitTailHigh',
      signal: 'queue_wait',
      severity: 'warning',
      runbook: 'queue-wait-tail',
      doc: '`job_queue_model:infersignal_queue_wait_duration_seconds:p99 > 0.3`',
    },
    {
      name: 'InferSignalQueueOccupancyHigh',
      signal: 'queue_occupancy',
      severity: 'warning',
      runbook: 'queue-occupancy',
      doc: '`max by (R, queue) (infersignal_queue_occupancy_ratio) and level(queue_occupancy) >= 1`',
    },
    {
      name: 'InferSignalQueueOccupancyCritical',
      signal: 'queue_occupancy',
      severity: 'critical',
      runbook: 'queue-occupancy',
      doc: 'same, `level(queue_occupancy) >= 2`',
    },
    {
      name: 'InferSignalQueueAgeHigh',
      signal: 'queue_age',
      severity: 'warning',
      runbook: 'queue-age',
      doc: '`max by (R, queue) (infersignal_queue_wait_oldest_seconds) and level(queue_age) >= 1`',
    },
    {
      name: 'InferSignalQueueAgeCritical',
      signal: 'queue_age',
      severity: 'critical',
      runbook: 'queue-age',
      doc: 'same, `level(queue_age) >= 2`',
    },
    {
      name: 'InferSignalQueuePendingWaitHigh',
      signal: 'queue_pending_wait',
      severity: 'warning',
      runbook: 'queue-pending-wait',
      doc: '`max by (R, queue) (infersignal_queue_wait_pending_seconds / clamp_min(infersignal_queue_in_flight, 1)) and level(queue_pending_wait) >= 1`',
    },
    {
      name: 'InferSignalQueuePendingWaitCritical',
      signal: 'queue_pending_wait',
      severity: 'critical',
      runbook: 'queue-pending-wait',
      doc: 'same, `level(queue_pending_wait) >= 2`',
    },
    {
      name: 'InferSignalQueueTokenBacklogHigh',
      signal: 'queue_token_backlog',
      severity: 'warning',
      runbook: 'queue-token-backlog',
      doc: '`max by (R, queue) (infersignal_queue_tokens_drain_time_seconds) and level(queue_token_backlog) >= 1`',
    },
    {
      name: 'InferSignalQueueTokenBacklogCritical',
      signal: 'queue_token_backlog',
      severity: 'critical',
      runbook: 'queue-token-backlog',
      doc: 'same, `level(queue_token_backlog) >= 2`',
    },
    {
      name: 'InferSignalBackpressureCritical',
      signal: 'queue_backpressure',
      severity: 'critical',
      runbook: 'backpressure',
      doc: '`max by (R, infersignal_queue_name) (infersignal_queue_backpressure_level) >= 2`',
    },
  ],

  rules(k) {
    const q = k.thresholds.queue as unknown as QueueThresholds;
    const queue = k.label(ATTR.queue);
    const model = k.label(ATTR.model);
    const keys = [...k.replicaKeys, queue];
    const hold = k.hold(q.forSeconds);
    const level = k.levelHold;
    const keep = k.formatDuration(q.keepFiringSeconds);
    // The recorded quantiles are per (job, queue, model); the dashboard and the KEDA trigger read the same series.
    const record = (quantile: number) =>
      k.recordName(['job', queue, model], k.recordBase(metrics.queueWait), k.quantileSuffix(quantile));
    const quantiles = [...new Set([0.5, 0.95, 0.99, q.waitQuantile, k.option('tailQuantile')])].sort((a, b) => a - b);
    const recordings = quantiles.map((quantile) => ({
      record: record(quantile),
      expr: `histogram_quantile(${quantile}, sum ${k.by('le', ...keys, model)} (rate(${k.bucket(metrics.queueWait)}[${k.options.rateWindow}])))`,
    }));
    const wait = `max ${k.by(...keys)} (${record(q.waitQuantile)})`;
    const tail = record(k.option('tailQuantile'));
    const on = k.onReplica(queue);
    const waitLevel = k.signalLevel('queue_wait', [queue]);
    const occupancyLevel = k.signalLevel('queue_occupancy', [queue]);
    const queueWhere = `Queue {{ $labels.${queue} }} on replica ${k.replica} ({{ $labels.job }})`;
    const where = `{{ $labels.${model} }} on queue {{ $labels.${queue} }}, replica ${k.replica} ({{ $labels.job }})`;
    const pq = k.percentileName(q.waitQuantile);
    const occupancy = `max ${k.by(...keys)} (${k.metric(metrics.queueOccupancy)})`;
    const oldest = `max ${k.by(...keys)} (${k.metric(metrics.queueWaitOldest)})`;
    const ageLevel = k.signalLevel('queue_age', [queue]);
    // Per slot: while requests wait, every slot is busy, so the requests in flight are the slots.
    const pendingPerSlot = `max ${k.by(...keys)} (${k.metric(metrics.queueWaitPending)} / clamp_min(${k.metric(metrics.queueInFlight)}, 1))`;
    const pendingLevel = k.signalLevel('queue_pending_wait', [queue]);
    const drain = `max ${k.by(...keys)} (${k.metric(metrics.queueTokensDrainTime)})`;
    const tokenLevel = k.signalLevel('queue_token_backlog', [queue]);
    const held = (what: string) =>
      `the in-process ${what} detector (same thresholds, window, hysteresis and keep) raised its level`;
    return {
      name: 'infersignal.queue',
      rules: [
        ...recordings,
        k.alert(
          'InferSignalQueueWaitHigh',
          `${wait} and ${on} (${waitLevel} >= 1)`,
          level,
          `${pq} queue wait above ${k.humanSeconds(q.waitWarnSeconds)}`,
          `${queueWhere}: ${held('queue_wait')} to WARN, ${pq} wait above ${k.humanSeconds(q.waitWarnSeconds)} (thresholds.queue.waitWarnSeconds); Prometheus reads ${pq} {{ $value | humanizeDuration }} over ${k.options.rateWindow}. Requests wait before inference starts: the replica is close to saturation.`,
          // The page keeps firing as core keeps its WARN (thresholds.queue.keepFiringSeconds), so a missed scrape does not end it.
          keep,
        ),
        k.alert(
          'InferSignalQueueWaitCritical',
          `${wait} and ${on} (${waitLevel} >= 2)`,
          level,
          `${pq} queue wait above ${k.humanSeconds(q.waitCriticalSeconds)}`,
          `${queueWhere}: ${held('queue_wait')} to CRITICAL, ${pq} wait above ${k.humanSeconds(q.waitCriticalSeconds)} (thresholds.queue.waitCriticalSeconds); Prometheus reads ${pq} {{ $value | humanizeDuration }} over ${k.options.rateWindow}. The queue is saturated and sheds; drain this replica or scale out.`,
          // In process CRITICAL lowers at once (it sheds); the page keeps for the same time as the WARN, so one episode is one page.
          keep,
        ),
        k.alert(
          'InferSignalQueueWaitTailHigh',
          `${tail} > ${k.option('tailSeconds')}`,
          hold,
          `${k.percentileName(k.option('tailQuantile'))} queue wait above ${k.humanSeconds(k.option('tailSeconds'))}`,
          `${k.percentileName(k.option('tailQuantile'))} queue wait of ${where} is {{ $value | humanizeDuration }}, above ${k.humanSeconds(k.option('tailSeconds'))} for ${hold}. The tail waits even if the median does not.`,
        ),
        k.alert(
          'InferSignalQueueOccupancyHigh',
          `${occupancy} and ${on} (${occupancyLevel} >= 1)`,
          level,
          `Queue occupancy at or above ${k.humanPercent(q.occupancyWarn)}`,
          `${queueWhere} is {{ $value | humanizePercentage }} full (waiting + in flight over capacity): ${held('queue_occupancy')} to WARN, at or above ${k.humanPercent(q.occupancyWarn)} (thresholds.queue.occupancyWarn).`,
          keep,
        ),
        k.alert(
          'InferSignalQueueOccupancyCritical',
          `${occupancy} and ${on} (${occupancyLevel} >= 2)`,
          level,
          `Queue occupancy above ${k.humanPercent(q.occupancyCritical)}`,
          `${queueWhere} is {{ $value | humanizePercentage }} full: ${held('queue_occupancy')} to CRITICAL, above ${k.humanPercent(q.occupancyCritical)} (thresholds.queue.occupancyCritical). New requests are shed.`,
          keep,
        ),
        k.alert(
          'InferSignalQueueAgeHigh',
          `${oldest} and ${on} (${ageLevel} >= 1)`,
          level,
          `Oldest waiting request older than ${k.humanSeconds(q.ageWarnSeconds)}`,
          `${queueWhere}: the oldest request still waiting has waited {{ $value | humanizeDuration }}, more than ${k.humanSeconds(q.ageWarnSeconds)} (thresholds.queue.ageWarnSeconds): ${held('queue_age')} to WARN. It has not started yet, so the wait histogram does not show it: the queue is stuck or falling behind.`,
          keep,
        ),
        k.alert(
          'InferSignalQueueAgeCritical',
          `${oldest} and ${on} (${ageLevel} >= 2)`,
          level,
          `Oldest waiting request older than ${k.humanSeconds(q.ageCriticalSeconds)}`,
          `${queueWhere}: the oldest request still waiting has waited {{ $value | humanizeDuration }}, more than ${k.humanSeconds(q.ageCriticalSeconds)} (thresholds.queue.ageCriticalSeconds): ${held('queue_age')} to CRITICAL. Requests are not being started: check the runtime behind the queue.`,
          keep,
        ),
        k.alert(
          'InferSignalQueuePendingWaitHigh',
          `${pendingPerSlot} and ${on} (${pendingLevel} >= 1)`,
          level,
          `Waits still accruing above ${k.humanSeconds(q.pendingWaitWarnSeconds)} per slot`,
          `${queueWhere}: the requests still waiting have already waited {{ $value | humanizeDuration }} per slot together, more than ${k.humanSeconds(q.pendingWaitWarnSeconds)} (thresholds.queue.pendingWaitWarnSeconds): ${held('queue_pending_wait')} to WARN. Many requests have each waited a while, which the wait histogram shows only once they start: the queue is falling behind.`,
          keep,
        ),
        k.alert(
          'InferSignalQueuePendingWaitCritical',
          `${pendingPerSlot} and ${on} (${pendingLevel} >= 2)`,
          level,
          `Waits still accruing above ${k.humanSeconds(q.pendingWaitCriticalSeconds)} per slot`,
          `${queueWhere}: the requests still waiting have already waited {{ $value | humanizeDuration }} per slot together, more than ${k.humanSeconds(q.pendingWaitCriticalSeconds)} (thresholds.queue.pendingWaitCriticalSeconds): ${held('queue_pending_wait')} to CRITICAL. Requests are piling up faster than they start: scale out, shed, or check the runtime behind the queue.`,
          keep,
        ),
        k.alert(
          'InferSignalQueueTokenBacklogHigh',
          `${drain} and ${on} (${tokenLevel} >= 1)`,
          level,
          `LLM token backlog takes longer than ${k.humanSeconds(q.tokenDrainWarnSeconds)} to drain`,
          `${queueWhere}: the output tokens owed to the running requests and asked for by the waiting ones (max_tokens scaled by the share recent requests used) take {{ $value | humanizeDuration }} at the output rate the queue has been serving at, more than ${k.humanSeconds(q.tokenDrainWarnSeconds)} (thresholds.queue.tokenDrainWarnSeconds): ${held('queue_token_backlog')} to WARN. A request arriving now waits behind that work: the queue holds more tokens than it can serve soon.`,
          keep,
        ),
        k.alert(
          'InferSignalQueueTokenBacklogCritical',
          `${drain} and ${on} (${tokenLevel} >= 2)`,
          level,
          `LLM token backlog takes longer than ${k.humanSeconds(q.tokenDrainCriticalSeconds)} to drain`,
          `${queueWhere}: the token backlog takes {{ $value | humanizeDuration }} to drain at the measured output rate, more than ${k.humanSeconds(q.tokenDrainCriticalSeconds)} (thresholds.queue.tokenDrainCriticalSeconds): ${held('queue_token_backlog')} to CRITICAL. Scale out, lower max_tokens or shed before the waiting requests time out.`,
          keep,
        ),
        k.alert(
          'InferSignalBackpressureCritical',
          `max ${k.by(...keys)} (${k.metric(metrics.backpressureLevel)}) >= 2`,
          hold,
          'Backpressure level CRITICAL',
          `${queueWhere} reports backpressure level CRITICAL (occupancy or ${pq} wait past the critical thresholds) for ${hold}; admit() turns away the requests past the queue's occupancy and wait targets with Retry-After ${q.retryAfterSeconds}s, until it has turned none away for ${k.humanSeconds(q.shedHoldSeconds)} (thresholds.queue.shedHoldSeconds) and those levels cleared by their hysteresis.`,
        ),
      ],
    };
  },

  panels(k) {
    const q = k.thresholds.queue as unknown as QueueThresholds;
    const queue = k.label(ATTR.queue);
    const model = k.label(ATTR.model);
    const outcome = k.label(ATTR.outcome);
    const tokenType = k.label(ATTR.tokenType);
    const waitQuantile = (p: number, keys: string, selector: string) =>
      `histogram_quantile(${p}, sum by (le, ${keys}) (${k.rate(k.bucket(metrics.queueWait), selector)}))`;
    const quantiles = [...new Set([0.5, q.waitQuantile, 0.99])].sort((a, b) => a - b);
    k.row('Queue wait');
    k.add({
      type: 'heatmap',
      title: 'Queue wait distribution',
      description: 'Time between arrival and the start of inference, per histogram bucket.',
      w: 12,
      unit: 's',
      targets: [
        {
          expr: `sum by (le) (${k.rate(k.bucket(metrics.queueWait), k.select.queueModel)})`,
          legend: '{{le}}',
          format: 'heatmap',
        },
      ],
      options: { calculate: false, yAxis: { unit: 's' }, cellGap: 1, color: { scheme: 'Oranges', mode: 'scheme' } },
    });
    k.add({
      title: `Queue wait ${quantiles.map(k.percentileName).join(' / ')}`,
      description: `Lines: ${k.percentileName(q.waitQuantile)} warning (thresholds.queue.waitWarnSeconds) and critical (waitCriticalSeconds).`,
      w: 12,
      unit: 's',
      lines: [q.waitWarnSeconds, q.waitCriticalSeconds],
      targets: quantiles.map((p) => ({
        expr: waitQuantile(p, `${queue}, ${model}`, k.select.queueModel),
        legend: `${k.percentileName(p)} {{${queue}}} {{${model}}}`,
      })),
    });

    k.add({
      title: 'Oldest waiting request',
      description:
        'Age of the oldest request still waiting, worst replica per queue: it rises while a queue is stuck, which the wait histogram shows only once requests leave it. Lines: thresholds.queue.ageWarnSeconds and ageCriticalSeconds.',
      w: 12,
      unit: 's',
      lines: [q.ageWarnSeconds, q.ageCriticalSeconds],
      targets: [
        {
          expr: `max by (${queue}) (${k.metric(metrics.queueWaitOldest)}{${k.select.queue}})`,
          legend: `oldest {{${queue}}}`,
        },
      ],
    });
    k.add({
      title: 'Waits still accruing, per slot',
      description:
        'Worst replica per queue: the time the requests still waiting have already waited, summed, over the requests in flight (while requests wait, every slot is busy: the slots). Lines: thresholds.queue.pendingWaitWarnSeconds and pendingWaitCriticalSeconds.',
      w: 12,
      unit: 's',
      lines: [q.pendingWaitWarnSeconds, q.pendingWaitCriticalSeconds],
      targets: [
        {
          expr: `max by (${queue}) (${k.metric(metrics.queueWaitPending)}{${k.select.queue}} / clamp_min(${k.metric(metrics.queueInFlight)}{${k.select.queue}}, 1))`,
          legend: `waited so far per slot {{${queue}}}`,
        },
      ],
    });
    k.add({
      title: 'LLM token backlog',
      description:
        'Per LLM queue, summed over replicas: prompt tokens of the requests still waiting (input) and output tokens still owed to the running ones, their max_tokens less what they produced (output).',
      w: 12,
      unit: 'short',
      targets: [
        {
          expr: `sum by (${queue}, ${tokenType}) (${k.metric(metrics.queueTokensPending)}{${k.select.queue}})`,
          legend: `{{${tokenType}}} {{${queue}}}`,
        },
      ],
    });
    k.add({
      title: 'LLM token backlog drain time',
      description:
        'Worst replica per queue: (output tokens owed + max_tokens of the waiting requests) / the output rate the queue has been serving at; 0 when none waits. Lines: thresholds.queue.tokenDrainWarnSeconds and tokenDrainCriticalSeconds.',
      w: 12,
      unit: 's',
      lines: [q.tokenDrainWarnSeconds, q.tokenDrainCriticalSeconds],
      targets: [
        {
          expr: `max by (${queue}) (${k.metric(metrics.queueTokensDrainTime)}{${k.select.queue}})`,
          legend: `{{${queue}}}`,
        },
      ],
    });

    k.row('Queue occupancy and backpressure');
    k.add({
      title: 'Occupancy (waiting + in flight) / capacity',
      description: 'Worst replica per queue. Lines: thresholds.queue.occupancyWarn and occupancyCritical.',
      w: 8,
      unit: 'percentunit',
      lines: [q.occupancyWarn, q.occupancyCritical],
      targets: [
        { expr: `max by (${queue}) (${k.metric(metrics.queueOccupancy)}{${k.select.queue}})`, legend: `{{${queue}}}` },
      ],
      fieldConfig: { defaults: { min: 0, max: 1 } },
    });
    k.add({
      title: 'Backpressure level',
      description:
        "0 OK, 1 WARN, 2 CRITICAL (a shedding episode: admit() turns away the requests past the queue's targets, until it has turned none away for thresholds.queue.shedHoldSeconds and its levels cleared by their hysteresis).",
      w: 8,
      lines: [1, 2],
      targets: [
        {
          expr: `max by (${queue}) (${k.metric(metrics.backpressureLevel)}{${k.select.queue}})`,
          legend: `{{${queue}}}`,
        },
      ],
      fieldConfig: {
        defaults: {
          min: 0,
          max: 2,
          mappings: [
            {
              type: 'value',
              options: {
                '0': { text: 'OK', color: 'green' },
                '1': { text: 'WARN', color: 'orange' },
                '2': { text: 'CRITICAL', color: 'red' },
              },
            },
          ],
          custom: { drawStyle: 'line', lineInterpolation: 'stepAfter' },
        },
      },
    });
    k.add({
      title: 'Requests by outcome',
      w: 8,
      unit: 'reqps',
      targets: [
        {
          expr: `sum by (${outcome}) (${k.rate(k.metric(metrics.requests), k.select.queueModel)})`,
          legend: `{{${outcome}}}`,
        },
        {
          expr: `sum by (${queue}) (${k.metric(metrics.queueWaiting)}{${k.select.queue}})`,
          legend: `waiting {{${queue}}}`,
        },
        {
          expr: `sum by (${queue}) (${k.metric(metrics.queueInFlight)}{${k.select.queue}})`,
          legend: `in flight {{${queue}}}`,
        },
      ],
    });
  },
});
