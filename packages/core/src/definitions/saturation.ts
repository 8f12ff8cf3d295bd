/**
 * When a replica counts as saturated to a router or an autoscaler
 * (`saturation`): saturation = max(waiting requests / queueDepthThreshold,
 * KV-cache utilization / kvCacheUtilThreshold), 1 at saturation. No alert
 * and no in-process detector: the Kubernetes generator's endpoint picker
 * config and KEDA trigger read its thresholds, and its KV-cache gauge is the
 * model-server protocol's.
 */
import { ATTR } from '../attributes';
import { defineSignal } from '../definition';

const metrics = {
  kvCacheUtilization: {
    name: 'infersignal.kv_cache.utilization',
    type: 'gauge',
    unit: '1',
    description:
      'Share of the KV cache held by running requests: their tokens / the tokens the serving context can hold, 0 when none runs (present from start). Tokens an idle sequence keeps for prefix reuse are not counted: the next prompt takes them over, as vLLM counts cached but unreferenced blocks free. The KV-cache utilization gauge of the model-server protocol.',
    attributes: [ATTR.model],
    feeds: 'saturation.kvCacheUtilThreshold',
  },
} as const;

export const saturationSignal = defineSignal({
  name: 'saturation',
  metrics,
  thresholds: {
    group: 'saturation',
    fields: {
      // The Gateway API Inference Extension endpoint picker's defaults.
      queueDepthThreshold: { default: 5, accepts: { type: 'integer', min: 1, max: 1_000_000 } },
      kvCacheUtilThreshold: { default: 0.8, accepts: { type: 'number', above: 0, below: 1 } },
      timeToFirstTokenSeconds: { default: 1, accepts: { type: 'number', above: 0 } },
    },
  },
});
