export { createLlamaModel } from './model';
export type { GgufSource, LlamaMonitorOptions, MonitoredLlamaModel } from './types';
export { llamaSignal } from './definition';
