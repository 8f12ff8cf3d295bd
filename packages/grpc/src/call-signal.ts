import { METRICS, type Monitor } from '@infersignal/core';
import type { HistogramRecorder, Signal, SignalContext } from '@infersignal/core/signals';
import type { Metadata } from '@grpc/grpc-js';
import type { ResolvedOptions } from './options';

/** The status a shed call is answered with (the shape grpc-js accepts from a handler or interceptor). */
export interface ShedStatus {
  code: number;
  details: string;
  /** `retry-after` and `grpc-retry-pushback-ms`. */
  metadata?: Metadata;
}

/**
 * `rpc.server.call.duration`, registered once per monitor like every
 * signal: an OTel histogram, or core's aggregate exported by the monitor's
 * MetricProducer in producer mode. Calls are judged by core's queue and
 * stream signals, so this one only records.
 */
export class GrpcCallSignal implements Signal {
  readonly name = 'grpc';
  readonly duration: HistogramRecorder;
  private durationOld_: HistogramRecorder | undefined;

  constructor(readonly ctx: SignalContext) {
    this.duration = ctx.histogram(METRICS.rpcCallDuration);
  }

  /** The older conventions' `rpc.server.duration` (ms), made when an instrumentation first asks for it. */
  get durationOld(): HistogramRecorder {
    this.durationOld_ ??= this.ctx.histogram(METRICS.rpcCallDurationOld);
    return this.durationOld_;
  }
}

// instrumentService and the interceptor may be used for several services on one monitor.
const signals = new WeakMap<Monitor, GrpcCallSignal>();

export function callSignal(monitor: Monitor): GrpcCallSignal {
  let signal = signals.get(monitor);
  if (signal === undefined) {
    signal = monitor.register((ctx) => new GrpcCallSignal(ctx));
    signals.set(monitor, signal);
  }
  return signal;
}

/** What a call's recorder reads from the instrumentation that made it. */
export interface CallContext {
  readonly monitor: Monitor;
  readonly options: ResolvedOptions;
  readonly calls: GrpcCallSignal;
}
