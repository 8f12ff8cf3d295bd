export { createPipeline } from './pipeline';
export { PipelineLoadError, PipelineReleasedError, classifyPipelineError } from './errors';
export type { PipelineLoadFailureReason } from './errors';
export { TRANSFORMERS_ATTR } from './attributes';
export type {
  CallUsage,
  CreatePipelineOptions,
  MonitoredPipeline,
  PipelineInput,
  PipelineKwargs,
  PipelineLoadInfo,
  PipelineOutput,
  PipelineType,
  RunOptions,
  TransformersRuntime,
} from './types';
