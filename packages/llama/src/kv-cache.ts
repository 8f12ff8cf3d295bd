import type { LlamaContext, LlamaModel } from 'node-llama-cpp';

/**
 * KV-cache bytes per token, from node-llama-cpp's own memory estimate for this model and context settings:
 * the difference between the estimates for 2048 and 1024 tokens, over 1024. The estimate's other terms
 * (weights, output and compute buffers) do not grow with the context size, so only the KV cache is left.
 * For models with sliding-window attention only the full-attention layers grow per token past the window:
 * the figure then undercounts those layers' fixed share. Null when the estimate is not available.
 */
export function kvBytesPerToken(model: LlamaModel, context: LlamaContext): number | null {
  try {
    const estimate = (contextSize: number) => {
      const r = model.fileInsights.estimateContextResourceRequirements({
        contextSize,
        modelGpuLayers: model.gpuLayers,
        sequences: 1,
        batchSize: 512,
        includeGraphOverhead: false,
        flashAttention: context.flashAttention === true,
        kvCacheKeyType: context.kvCacheKeyType,
        kvCacheValueType: context.kvCacheValueType,
      });
      return r.cpuRam + r.gpuVram;
    };
    const perToken = (estimate(2048) - estimate(1024)) / 1024;
    return Number.isFinite(perToken) && perToken > 0 ? perToken : null;
  } catch {
    return null;
  }
}
