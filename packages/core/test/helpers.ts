// Core's tests start from the shared test monitor (manual clock, manual ticks, pull reader).
export { collect, TestReader } from '../../../test/support/otel';
export { testMonitor as setup } from '../../../test/support/monitor';
