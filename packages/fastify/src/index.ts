export { inferSignal } from './plugin';
export type { InferSignalFastifyOptions, InferSignalRequest } from './plugin';
export { readinessHandler } from './readiness';
