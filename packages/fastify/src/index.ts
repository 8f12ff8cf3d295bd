export { inferSignal } from './plugin';
export type { InferSignalFastifyOptions } from './plugin';
export type { InferSignalRequest } from './request-signal';
export type { SseEvent, SseOptions, SseStream } from './sse';
export { readinessHandler } from './readiness';
