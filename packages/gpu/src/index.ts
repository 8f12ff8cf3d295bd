export { createGpuSampler } from './sampler';
export type {
  DeviceSample,
  GpuSampler,
  GpuSamplerOptions,
  GpuSamplerStats,
  GpuSamplerStatus,
  MemoryAttribution,
} from './types';
