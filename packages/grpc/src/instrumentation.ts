import { BUCKETS, METRICS } from '@infersignal/core';
import type { Monitor } from '@infersignal/core';
import type { Histogram } from '@opentelemetry/api';
import type { Metadata } from '@grpc/grpc-js';
import { CallRecorder } from './call-recorder';
import { MethodTable } from './methods';
import type { MethodEntry } from './methods';
import { resolveOptions } from './options';
import type { GrpcInstrumentationOptions, ResolvedOptions } from './options';
import { GRPC_STATUS } from './status';

/** The status a shed call is answered with (the shape grpc-js accepts from a handler or interceptor). */
export interface ShedStatus {
  code: number;
  details: string;
  /** `retry-after` and `grpc-retry-pushback-ms`. */
  metadata?: Metadata;
}

// One histogram per monitor: instrumentService and the interceptor may be
// used for several services on the same monitor.
const histograms = new WeakMap<Monitor, Histogram>();

function durationHistogram(monitor: Monitor): Histogram {
  let histogram = histograms.get(monitor);
  if (histogram === undefined) {
    const spec = METRICS.rpcCallDuration;
    histogram = monitor.meter.createHistogram(spec.name, {
      unit: spec.unit,
      description: spec.description,
      advice: { explicitBucketBoundaries: [...BUCKETS.duration] },
    });
    histograms.set(monitor, histogram);
  }
  return histogram;
}

/** What instrumentService and the interceptor share: options, instruments, the method table. */
export class Instrumentation {
  readonly options: ResolvedOptions;
  readonly histogram: Histogram;
  readonly methods = new MethodTable();

  constructor(
    readonly monitor: Monitor,
    options: GrpcInstrumentationOptions | undefined,
  ) {
    this.options = resolveOptions(monitor, options);
    this.histogram = durationHistogram(monitor);
  }

  /**
   * A call arrived: label it, run the admission check, enqueue a ticket.
   * Never throws; a failure inside costs the call its metrics, not its answer.
   */
  begin(entry: MethodEntry, metadata: Metadata | undefined): CallRecorder {
    const { options, monitor } = this;
    const arrival = options.clock();
    const model = this.modelOf(entry, metadata);
    const recorder = new CallRecorder(this, entry, model, arrival);
    if (options.shed) {
      try {
        const admission = options.tracker.admit();
        if (!admission.admit) {
          options.tracker.reject(model);
          recorder.shed = shedStatus(options.shedCode, admission.retryAfterSeconds, metadata, monitor);
          recorder.finish(options.shedCode);
          return recorder;
        }
      } catch (error) {
        // A broken admission check admits: shedding is an optimisation, answering is the job.
        monitor.internalError('grpc.shed', error);
      }
    }
    try {
      recorder.enqueue();
    } catch (error) {
      monitor.internalError('grpc', error);
    }
    return recorder;
  }

  private modelOf(entry: MethodEntry, metadata: Metadata | undefined): string {
    const fn = this.options.model;
    if (fn === undefined || metadata === undefined) return entry.method;
    try {
      return this.monitor.label('model', fn(entry, metadata));
    } catch (error) {
      this.monitor.internalError('grpc.model', error);
      return entry.method;
    }
  }
}

/**
 * The shed answer, with `retry-after` (seconds, as HTTP) and
 * `grpc-retry-pushback-ms` (what gRPC retry policies read) in the trailers.
 * The Metadata is built with the constructor of the request's own metadata,
 * so the app's copy of grpc-js is used and this package needs no runtime
 * import of it.
 */
function shedStatus(
  code: number,
  retryAfterSeconds: number,
  request: Metadata | undefined,
  monitor: Monitor,
): ShedStatus {
  const seconds = Number.isFinite(retryAfterSeconds) && retryAfterSeconds > 0 ? retryAfterSeconds : 1;
  let metadata: Metadata | undefined;
  if (request !== undefined) {
    try {
      const MetadataCtor = request.constructor as new () => Metadata;
      metadata = new MetadataCtor();
      metadata.set('retry-after', String(Math.ceil(seconds)));
      metadata.set('grpc-retry-pushback-ms', String(Math.round(seconds * 1000)));
    } catch (error) {
      monitor.internalError('grpc.shed', error);
      metadata = undefined;
    }
  }
  const details =
    code === GRPC_STATUS.UNAVAILABLE
      ? 'server overloaded, retry later'
      : 'server overloaded: queue is critical, retry later';
  return { code, details, metadata };
}
