// The HTTP request lifecycle the Express and Fastify adapters share: each adapter keeps only its framework's glue.
export { createHttpTracking } from './tracking';
export type { ShedAnswer } from './shed';
export type { HttpTracking, HttpTrackingOptions, HttpTrackingSettings } from './tracking';
export { trackedRequestOf } from './request';
export type { HttpReplyOwner, HttpRequestSignal, TrackedHttpRequest } from './request';
export type { SseEvent, SseOptions, SseStream } from './sse';
export { readinessAnswer } from './readiness';
export type { ReadinessAnswer } from './readiness';
export { instrumentServer } from './connections';
export type { InstrumentServerOptions, ServerInstrumentation } from './connections';
