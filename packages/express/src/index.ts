export { inferSignal, inferSignalErrors } from './middleware';
export type { InferSignalOptions } from './middleware';
export type { InferSignalRequest } from './request-signal';
export type { SseEvent, SseOptions, SseStream } from './sse';
export { readinessHandler, readinessRouter } from './readiness';
export type { ReadinessOptions } from './readiness';
