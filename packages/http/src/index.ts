// The HTTP request lifecycle the Express and Fastify adapters share: each adapter keeps only its framework's glue.
export { createHttpTracking } from './tracking';
export { HTTP_SHED_BODY } from './shed';
export type { ShedAnswer, ShedAnswerOptions, ShedHandler, ShedInfo, ShedResponseOption } from './shed';
export type { HttpTracking, HttpTrackingOptions, HttpTrackingSettings } from './tracking';
export { trackedRequestOf } from './request';
export type { HttpReplyOwner, HttpRequestSignal, TrackedHttpRequest } from './request';
export { createSseStream } from './sse';
export type { SseEndReason, SseEvent, SseOptions, SseStream } from './sse';
export { readinessAnswer } from './readiness';
export type { ReadinessAnswer } from './readiness';
export { instrumentServer } from './connections';
export type {
  InstrumentServerOptions,
  InstrumentableServer,
  ServerInstrumentation,
  ServerSnapshot,
} from './connections';
