export { inferSignal } from './plugin';
export type { InferSignalFastifyOptions, InferSignalRequest } from './plugin';
// The SSE writer and the request lifecycle live in @infersignal/http, shared with the Express middleware.
export type { SseEvent, SseOptions, SseStream } from '@infersignal/http';
export { readinessHandler } from './readiness';
// For servers the plugin does not own; the plugin's `connections` option calls it on `fastify.server`.
export { instrumentServer } from '@infersignal/http';
export type { InstrumentServerOptions, ServerInstrumentation } from '@infersignal/http';
