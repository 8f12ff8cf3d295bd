export { inferSignal } from './plugin';
export type { InferSignalFastifyOptions } from './plugin';
export type { InferSignalRequest } from './request-signal';
export type { SseEvent, SseOptions, SseStream } from './sse';
export { readinessHandler } from './readiness';
// For servers the plugin does not own; the plugin's `connections` option calls it on `fastify.server`.
export { instrumentServer } from '@infersignal/core';
export type { InstrumentServerOptions, ServerInstrumentation } from '@infersignal/core';
