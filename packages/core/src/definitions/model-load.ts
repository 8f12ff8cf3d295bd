/**
 * The `model_load` signal: a model load or reload slower than its healthy
 * baseline (learnt from its first loads, or configured) by `spikeFactor`,
 * and at least `minSpikeSeconds`, is a spike; each spike is counted and
 * alerted, in process and by Prometheus.
 */
import { ATTR } from '../attributes';
import { defineSignal } from '../definition';
import type { ModelLoadThresholds } from '../thresholds';

const metrics = {
  modelLoadDuration: {
    name: 'infersignal.model.load.duration',
    type: 'histogram',
    unit: 's',
    description: 'Duration of a model load or reload, by outcome (success, error).',
    attributes: [ATTR.model, ATTR.loadKind, ATTR.outcome],
    feeds: 'modelLoad.spikeFactor',
  },
  modelLoadBaseline: {
    name: 'infersignal.model.load.baseline',
    type: 'gauge',
    unit: 's',
    description:
      'Current baseline load duration of the model: the healthy median learnt from its first loads (lower if recent loads are faster), or the configured one.',
    attributes: [ATTR.model],
  },
  modelLoadSpikes: {
    name: 'infersignal.model.load.spikes',
    type: 'counter',
    unit: '{load}',
    description: 'Loads that took more than spikeFactor × the baseline and at least minSpikeSeconds.',
    attributes: [ATTR.model, ATTR.loadKind],
    feeds: 'modelLoad.spikeFactor / modelLoad.minSpikeSeconds',
  },
} as const;

export const modelLoadSignal = defineSignal({
  name: 'model_load',
  metrics,
  buckets: {
    // Up to 10 minutes, a decade a bucket: a few loads a process lifetime, judged against their baseline (not a
    // quantile) and read by their sum and count, so finer buckets would only lengthen every scrape.
    [metrics.modelLoadDuration.name]: [0.1, 1, 10, 60, 600],
  },
  thresholds: {
    group: 'modelLoad',
    fields: {
      spikeFactor: { default: 3, accepts: { type: 'number', above: 1 } },
      baselineSamples: { default: 5, accepts: { type: 'integer', min: 1, max: 1000 } },
      baselineSeconds: { default: {}, accepts: 'map' },
      minSpikeSeconds: { default: 1, accepts: { type: 'number', min: 0 } },
    },
  },
  alerts: [
    {
      name: 'InferSignalModelLoadSpike',
      signal: 'model_load',
      severity: 'warning',
      runbook: 'model-load-spike',
      doc: '`increase(infersignal_model_load_spikes_total[15m]) > 0`, or a spike series new within 15m',
    },
  ],

  rules(k) {
    const t = k.thresholds.modelLoad as unknown as ModelLoadThresholds;
    const model = k.label(ATTR.model);
    const kind = k.label(ATTR.loadKind);
    const window = k.options.eventWindow;
    return {
      name: 'infersignal.model_load',
      rules: [
        k.alert(
          'InferSignalModelLoadSpike',
          k.eventExpr(k.metric(metrics.modelLoadSpikes), [...k.replicaKeys, model, kind], window),
          undefined,
          'Model load slower than its baseline',
          `A {{ $labels.${kind} }} of {{ $labels.${model} }} on replica ${k.replica} ({{ $labels.job }}) in the last ${window} took more than ${t.spikeFactor}x the model's healthy baseline (thresholds.modelLoad.spikeFactor) and at least ${t.minSpikeSeconds}s (thresholds.modelLoad.minSpikeSeconds): storage, cache or device contention.`,
        ),
      ],
    };
  },

  panels(k) {
    const t = k.thresholds.modelLoad as unknown as ModelLoadThresholds;
    const model = k.label(ATTR.model);
    const kind = k.label(ATTR.loadKind);
    const outcome = k.label(ATTR.outcome);
    const sel = k.select.model;
    const duration = k.metric(metrics.modelLoadDuration);
    const baseline = k.metric(metrics.modelLoadBaseline);
    const load = (suffix: string) => k.rate(`${duration}_${suffix}`, sel);
    k.row('Model load and reload');
    k.add({
      title: 'Load / reload duration and baseline',
      description: `Mean duration of the loads in each interval; a spike is a load slower than ${t.spikeFactor}x the baseline (thresholds.modelLoad.spikeFactor) and at least ${t.minSpikeSeconds}s (thresholds.modelLoad.minSpikeSeconds).`,
      w: 12,
      unit: 's',
      targets: [
        {
          expr: `sum by (${model}, ${kind}) (${load('sum')}) / sum by (${model}, ${kind}) (${load('count')})`,
          legend: `{{${kind}}} {{${model}}}`,
        },
        { expr: `max by (${model}) (${baseline}{${sel}})`, legend: `baseline {{${model}}}` },
        {
          expr: `clamp_min(${t.spikeFactor} * max by (${model}) (${baseline}{${sel}}), ${t.minSpikeSeconds})`,
          legend: `spike line {{${model}}}`,
        },
      ],
      fieldConfig: { defaults: { custom: { drawStyle: 'points', pointSize: 6 } } },
    });
    k.add({
      title: 'Load spikes and failures',
      w: 12,
      targets: [
        {
          expr: `sum by (${model}, ${kind}) (increase(${k.metric(metrics.modelLoadSpikes)}{${sel}}[$__rate_interval]))`,
          legend: `spikes {{${kind}}} {{${model}}}`,
        },
        {
          expr: `sum by (${model}, ${outcome}) (increase(${duration}_count{${sel}, ${outcome}!="success"}[$__rate_interval]))`,
          legend: `failed {{${model}}}`,
        },
      ],
      fieldConfig: { defaults: { custom: { drawStyle: 'bars' } } },
    });
  },
});
