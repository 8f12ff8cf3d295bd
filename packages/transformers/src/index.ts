export { createPipeline } from './pipeline';
export type { CreatePipelineOptions, MonitoredPipeline } from './types';
