/**
 * `@infersignal/core/signals`: what adapters and runtime wrappers are
 * written with, kept out of the main entry, which is what applications
 * call.
 *
 * - the Signal contract (`monitor.register((ctx) => signal)`);
 * - the options dialect every adapter shares, and the request gate
 *   (queue, model label, shedding) the HTTP and gRPC adapters build on;
 * - ModelHost, the load / reload / hot-swap / release base the runtime
 *   wrappers are built on (its errors, ModelLoadError and ModelReleasedError,
 *   are the main entry's: applications catch them);
 * - the detectors a signal of your own is most often made of (a sliding
 *   window, a level with hysteresis, a least-squares slope).
 *
 * The parts of these types (the thresholds of one signal, a detector's
 * levels) are reached through them: `Thresholds['queue']`.
 */
export type {
  CounterRecorder,
  Gauge,
  GaugeObserver,
  HistogramRecorder,
  Signal,
  SignalContext,
  SignalFactory,
} from './contract';
export {
  checkOptionKeys,
  checkQueueOption,
  resolveQueue,
} from './options';
export type { AdapterOptions, QueueOption } from './options';
export {
  checkField,
  describeValue,
  fieldOrDefault,
  rejectValue,
} from './validate';
export type { FieldSpec } from './validate';
export { createRequestGate } from './request-gate';
export type { RequestGate, RequestGateSettings } from './request-gate';
export { ModelHost, messageOf } from './model-host';
export type { ModelRuntime } from './model-host';
// Brands a package's own error classes so `instanceof` holds across its ESM and CommonJS builds.
export { brand } from './brand';
export { SlidingWindow } from './detectors/sliding-window';
export { ThresholdDetector, type ThresholdLevels } from './detectors/threshold';
export { linearFit, type LinearFit } from './detectors/drift';
// Signal definitions: one object per signal, read by the monitor, the validator, the generators and the docs.
export { SIGNALS } from './definitions/index';
export { defineSignal } from './definition';
// Its parts are reached through it: `SignalDefinition['alerts']`, the kits as the parameters of `rules` and `panels`.
export type { SignalDefinition } from './definition';
