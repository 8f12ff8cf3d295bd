export { inferSignal, inferSignalErrors } from './middleware';
export type { InferSignalOptions, InferSignalRequest } from './middleware';
export { readinessRouter } from './readiness';
