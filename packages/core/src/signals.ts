/**
 * `@infersignal/core/signals`: what adapters and runtime wrappers are
 * written with, kept out of the main entry, which is what applications
 * call.
 *
 * - the Signal contract (`monitor.register((ctx) => signal)`);
 * - the options dialect every adapter shares, and the request gate
 *   (queue, model label, shedding) the HTTP and gRPC adapters build on;
 * - ModelHost, the load / reload / hot-swap / release base the runtime
 *   wrappers are built on, with its errors (HotSwap is its slot counting);
 * - the pure detectors and aggregates core's signals are made of.
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
  ADAPTER_OPTION_KEYS,
  booleanOption,
  checkModelOption,
  checkOptionKeys,
  checkQueueOption,
  integerOption,
  nameOption,
  resolveQueue,
} from './options';
export type { AdapterOptions, ModelOption, QueueOption, QueueSpec } from './options';
export {
  acceptedText,
  checkAtLeast,
  checkField,
  describeValue,
  fieldAccepts,
  fieldOrDefault,
  rejectValue,
} from './validate';
export type { FieldSpec } from './validate';
export { createRequestGate } from './request-gate';
export type { RequestGate, RequestGateSettings } from './request-gate';
export { HotSwap, type HotSwapOptions } from './model-swap';
export { ModelHost, ModelLoadError, ModelReleasedError, messageOf } from './model-host';
export type { ModelLoad, ModelRuntime } from './model-host';
// Brands a package's own error classes so `instanceof` holds across its ESM and CommonJS builds.
export { brand, isBranded } from './brand';
export { SlidingWindow } from './detectors/sliding-window';
export { AnomalyDetector, ZScoreDetector, type AnomalyRule } from './detectors/zscore';
export { P99GlitchDetector } from './detectors/p99-glitch';
export { ThresholdDetector, worstLevel, type ThresholdLevels } from './detectors/threshold';
export { DriftDetector, linearFit, type LinearFit } from './detectors/drift';
export { FixedHistogram } from './aggregates/histogram';
export { EVENT_LOOP_RULE } from './signals/event-loop';
export type { Admission, AlertReport, LoadOptions, QueueSnapshot, SignalName } from './types';
export type { InstrumentType } from './names';
export type {
  AnomalyThresholds,
  CapacityThresholds,
  ConnectionThresholds,
  DeviceMemoryThresholds,
  EventLoopThresholds,
  HeapThresholds,
  GlitchThresholds,
  ModelLoadThresholds,
  QueueThresholds,
  StreamThresholds,
} from './config';
// Signal definitions: one object per signal, read by the monitor, the validator, the generators and the docs.
export { SIGNALS } from './definitions/index';
export { streamRecords } from './definitions/stream';
export { memoryGapRecord } from './definitions/device-memory';
export { defineSignal } from './definition';
export type {
  AlertDefinition,
  AlertingRuleDef,
  PanelDef,
  PanelKit,
  RecordingRuleDef,
  RuleGroupDef,
  RuleKit,
  SignalDefinition,
  ThresholdField,
  ThresholdGroup,
} from './definition';
