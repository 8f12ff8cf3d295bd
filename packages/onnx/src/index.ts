export { createSession } from './session';
export type { CreateSessionOptions, ModelSource, MonitoredSession } from './types';
