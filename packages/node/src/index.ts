export { start } from './start';
export { InferSignalInstrumentation } from './instrumentation';
export type { InferSignalInstrumentationConfig } from './instrumentation';
export type { StartOptions, InferSignal } from './types';
