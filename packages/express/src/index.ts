export { inferSignal, inferSignalErrors } from './middleware';
export type { InferSignalOptions, InferSignalRequest } from './middleware';
// The SSE writer and the request lifecycle live in @infersignal/http, shared with the Fastify plugin.
export type { SseEvent, SseOptions, SseStream } from '@infersignal/http';
export { readinessHandler, readinessRouter } from './readiness';
export type { ReadinessOptions } from './readiness';
// Connection and TLS signals of the server `app.listen()` returns; the logic lives in @infersignal/http, shared with the Fastify plugin.
export { instrumentServer } from '@infersignal/http';
export type { InstrumentServerOptions, ServerInstrumentation } from '@infersignal/http';
