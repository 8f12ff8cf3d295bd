export { createSession } from './session';
export { ModelLoadError, SessionReleasedError, classifyLoadError } from './errors';
export type { LoadFailureReason } from './errors';
export { ONNX_ATTR } from './attributes';
export type {
  CreateSessionOptions,
  LoadInfo,
  ModelSource,
  MonitoredSession,
  OrtRuntime,
  SessionMemoryOptions,
  FeedsType,
  FetchesType,
  ReturnType,
  RunOptions,
  SessionOptions,
  InferenceSession,
} from './types';
