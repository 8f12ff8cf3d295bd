export { createLlamaModel } from './model';
export { LlamaLoadError, LlamaModelReleasedError } from './errors';
export type { LlamaLoadFailureReason } from './errors';
export { LLAMA_ATTR, LLAMA_METRICS, llamaSignal } from './definition';
export type {
  CompleteOptions,
  CompletionInput,
  CompletionResult,
  GgufSource,
  KvCacheSnapshot,
  KvCacheWatchOptions,
  LlamaLoadInfo,
  LlamaMonitorOptions,
  MonitoredLlamaModel,
  SequenceKvCache,
  VramWatchOptions,
} from './types';
