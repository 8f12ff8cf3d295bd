export { createGpuSampler } from './sampler';
export type { GpuSampler, GpuSamplerOptions } from './types';
