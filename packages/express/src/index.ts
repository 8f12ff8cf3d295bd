export { inferSignal, inferSignalErrors } from './middleware';
export type { InferSignalOptions, InferSignalRequest } from './middleware';
// The SSE writer and the request lifecycle live in core, shared with the Fastify plugin.
export type { SseEvent, SseOptions, SseStream } from '@infersignal/core';
export { readinessHandler, readinessRouter } from './readiness';
export type { ReadinessOptions } from './readiness';
// Connection and TLS signals of the server `app.listen()` returns; the logic lives in core, shared with the Fastify plugin.
export { instrumentServer } from '@infersignal/core';
export type { InstrumentServerOptions, ServerInstrumentation } from '@infersignal/core';
