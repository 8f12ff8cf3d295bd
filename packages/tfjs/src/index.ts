export { loadLayersModel, loadGraphModel, loadModel } from './model';
export { createTensorLeakDetector, TENSOR_LEAK_SIGNAL } from './leak';
export type { LeakDetectorOptions, TensorLeakDetector } from './leak';
export { watchTfMemory, tfMemorySources } from './memory';
export type { TfMemoryOptions } from './memory';
export { fileSystemHandler } from './io';
export { ModelLoadError, ModelReleasedError } from './errors';
export type {
  ModelInput,
  ModelOutput,
  MonitoredTfModel,
  TfModelLike,
  TfModelOptions,
  TfModelSource,
  TfRuntime,
} from './types';
