export { loadLayersModel, loadGraphModel, loadModel } from './model';
export { createTensorLeakDetector } from './leak';
export type { LeakDetectorOptions, TensorLeakDetector } from './leak';
export { watchTfMemory } from './memory';
export type { TfMemoryOptions } from './memory';
export { fileSystemHandler } from './io';
export type { MonitoredTfModel, TfModelOptions, TfModelSource, TfRuntime } from './types';
