/**
 * The `stream_interruptions` signal: the share of streams that ended
 * interrupted (cancelled, error, unavailable, deadline exceeded) per model,
 * judged in process over the last `windowSize` streams and by Prometheus
 * over the stream window; and the time-to-first-token and per-output-token
 * histograms of the GenAI conventions.
 */
import { InferSignalConfigError } from '../config-error';
import { defineSignal, type RuleKit } from '../definition';
import { ATTR, GEN_AI_ATTRIBUTES } from '../attributes';
import type { StreamThresholds } from '../thresholds';

/** Stream outcomes that count as completed; every other outcome is an interruption. */
const COMPLETED = 'completed';

const metrics = {
  timeToFirstToken: {
    name: 'gen_ai.server.time_to_first_token',
    type: 'histogram',
    unit: 's',
    description:
      'Time from arrival of a streaming request to its first output token; successful responses only (recorded when the stream ends completed).',
    attributes: GEN_AI_ATTRIBUTES,
  },
  timePerOutputToken: {
    name: 'gen_ai.server.time_per_output_token',
    type: 'histogram',
    unit: 's',
    description:
      'Mean time between output tokens after the first, one sample per completed stream of at least two tokens.',
    attributes: GEN_AI_ATTRIBUTES,
  },
  streams: {
    name: 'infersignal.streams',
    type: 'counter',
    unit: '{stream}',
    description:
      'Streams that ended, by outcome (completed, cancelled, error, unavailable, deadline_exceeded). `error.type` only when the writer ended the stream itself: `write_stall` (the peer accepted nothing for the write-stall timeout; outcome cancelled).',
    attributes: [ATTR.model, ATTR.outcome, ATTR.errorType],
    feeds: 'stream.interruptedRatio',
  },
  streamTokens: {
    name: 'infersignal.stream.tokens',
    type: 'counter',
    unit: '{token}',
    description: 'Output tokens (or events) sent on streams.',
    attributes: [ATTR.model],
  },
  streamInterruptedRatio: {
    name: 'infersignal.stream.interrupted.ratio',
    type: 'gauge',
    unit: '1',
    description: 'Share of interrupted streams over the sliding window (0 until minSamples streams ended).',
    attributes: [ATTR.model],
    feeds: 'stream.interruptedRatio',
  },
} as const;

/** The recorded interrupted share and stream count (the dashboard reads them too). */
function streamRecords(k: Pick<RuleKit, 'recordName' | 'recordBase' | 'label'>): {
  ratio: string;
  count: string;
} {
  const level = ['job', k.label(ATTR.model)];
  return {
    ratio: k.recordName(level, k.recordBase(metrics.streams), 'interrupted_ratio'),
    count: k.recordName(level, k.recordBase(metrics.streams), 'increase'),
  };
}

export const streamSignal = defineSignal({
  name: 'stream',
  metrics,
  buckets: {
    /** the GenAI conventions' boundaries */
    [metrics.timeToFirstToken.name]: [
      0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
    ],
    [metrics.timePerOutputToken.name]: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5],
  },
  thresholds: {
    group: 'stream',
    fields: {
      interruptedRatio: { default: 0.005, accepts: { type: 'number', min: 0, max: 1 } },
      interruptedRatioCritical: { default: 0.05, accepts: { type: 'number', min: 0, max: 1 } },
      minSamples: { default: 100, accepts: { type: 'integer', min: 1, max: 100_000 } },
      windowSize: { default: 1000, accepts: { type: 'integer', min: 1, max: 100_000 } },
    },
    check(values, prefix) {
      const t = values as unknown as StreamThresholds;
      if (t.interruptedRatio >= t.interruptedRatioCritical)
        throw new InferSignalConfigError(
          `${prefix}.stream.interruptedRatio`,
          `must be below stream.interruptedRatioCritical (${t.interruptedRatioCritical}), got ${t.interruptedRatio}`,
        );
      if (t.minSamples > t.windowSize)
        throw new InferSignalConfigError(
          `${prefix}.stream.minSamples`,
          `must not exceed stream.windowSize (${t.windowSize}), got ${t.minSamples}`,
        );
    },
  },
  alerts: [
    {
      name: 'InferSignalStreamInterruptions',
      signal: 'stream_interruptions',
      severity: 'warning',
      runbook: 'stream-interruptions',
      doc: '`job_model:infersignal_streams:interrupted_ratio > 0.005 and on (job, gen_ai_request_model) job_model:infersignal_streams:increase >= 100`',
    },
    {
      name: 'InferSignalStreamInterruptionsCritical',
      signal: 'stream_interruptions',
      severity: 'critical',
      runbook: 'stream-interruptions',
      doc: 'same, `> 0.05`',
    },
  ],

  rules(k) {
    const s = k.thresholds.stream as unknown as StreamThresholds;
    const o = k.options;
    const model = k.label(ATTR.model);
    const keys = [...k.replicaKeys, model];
    const hold = k.hold(0);
    const records = streamRecords(k);
    const streams = k.metric(metrics.streams);
    const guard = `and on (job, instance, ${model}) ${records.count} >= ${s.minSamples}`;
    const where = `{{ $labels.${model} }} on replica ${k.replica} ({{ $labels.job }})`;
    return {
      name: 'infersignal.stream',
      rules: [
        { record: records.count, expr: `sum ${k.by(...keys)} (increase(${streams}[${o.streamWindow}]))` },
        {
          record: records.ratio,
          expr: `sum ${k.by(...keys)} (increase(${streams}{${k.label(ATTR.outcome)}!="${COMPLETED}"}[${o.streamWindow}])) / ${records.count}`,
        },
        k.alert(
          'InferSignalStreamInterruptions',
          `${records.ratio} > ${s.interruptedRatio} ${guard}`,
          hold,
          `Interrupted streams above ${k.humanPercent(s.interruptedRatio)}`,
          `{{ $value | humanizePercentage }} of the streams of ${where} ended interrupted (cancelled, error, unavailable, deadline exceeded) over ${o.streamWindow}, above ${k.humanPercent(s.interruptedRatio)} (thresholds.stream.interruptedRatio), with at least ${s.minSamples} streams (thresholds.stream.minSamples).`,
        ),
        k.alert(
          'InferSignalStreamInterruptionsCritical',
          `${records.ratio} > ${s.interruptedRatioCritical} ${guard}`,
          hold,
          `Interrupted streams above ${k.humanPercent(s.interruptedRatioCritical)}`,
          `{{ $value | humanizePercentage }} of the streams of ${where} ended interrupted over ${o.streamWindow}, above ${k.humanPercent(s.interruptedRatioCritical)} (thresholds.stream.interruptedRatioCritical), with at least ${s.minSamples} streams.`,
        ),
      ],
    };
  },

  panels(k) {
    const t = k.thresholds.stream as unknown as StreamThresholds;
    const model = k.label(ATTR.model);
    const outcome = k.label(ATTR.outcome);
    const sel = k.select.model;
    const streams = k.metric(metrics.streams);
    const records = streamRecords(k);
    const quantile = (q: number, spec: typeof metrics.timeToFirstToken | typeof metrics.timePerOutputToken) =>
      `histogram_quantile(${q}, sum by (le, ${model}) (${k.rate(k.bucket(spec), sel)}))`;
    k.row('Streams');
    k.add({
      title: 'Stream outcome shares',
      w: 8,
      unit: 'percentunit',
      targets: [
        {
          expr: `sum by (${outcome}) (${k.rate(streams, sel)}) / ignoring (${outcome}) group_left sum (${k.rate(streams, sel)})`,
          legend: `{{${outcome}}}`,
        },
      ],
      fieldConfig: { defaults: { custom: { stacking: { mode: 'normal' }, fillOpacity: 30 } } },
    });
    k.add({
      title: 'Interrupted share',
      description: `Prometheus share over ${k.options.streamWindow} (rules) and the in-process sliding window (last ${t.windowSize} streams). Lines: thresholds.stream.interruptedRatio and interruptedRatioCritical.`,
      w: 8,
      unit: 'percentunit',
      lines: [t.interruptedRatio, t.interruptedRatioCritical],
      targets: [
        { expr: `${records.ratio}{${sel}}`, legend: `${k.options.streamWindow} {{${model}}}` },
        {
          expr: `max by (${model}) (${k.metric(metrics.streamInterruptedRatio)}{${sel}})`,
          legend: `in-process {{${model}}}`,
        },
      ],
    });
    k.add({
      title: 'Time to first token and per output token',
      w: 8,
      unit: 's',
      targets: [
        ...[0.5, 0.95, 0.99].map((q) => ({
          expr: quantile(q, metrics.timeToFirstToken),
          legend: `TTFT ${k.percentileName(q)} {{${model}}}`,
        })),
        { expr: quantile(0.95, metrics.timePerOutputToken), legend: `TPOT P95 {{${model}}}` },
      ],
    });
  },
});
