import type { Monitor } from '@infersignal/core';
import type { Metadata } from '@grpc/grpc-js';
import type { TextMapGetter } from '@opentelemetry/api';
import { CallRecorder } from './call-recorder';
import { type CallContext, type GrpcCallSignal, type ShedStatus, callSignal } from './call-signal';
import { MethodTable } from './methods';
import type { MethodEntry } from './methods';
import { resolveOptions } from './options';
import type { GrpcInstrumentationOptions, ResolvedOptions } from './options';
import { GRPC_STATUS } from './status';

/** What instrumentService and the interceptor share: options, the request gate, the duration, the method table. */
export class Instrumentation implements CallContext {
  readonly options: ResolvedOptions;
  readonly calls: GrpcCallSignal;
  readonly methods = new MethodTable();

  constructor(
    readonly monitor: Monitor,
    options: GrpcInstrumentationOptions | undefined,
  ) {
    this.options = resolveOptions(monitor, options);
    this.calls = callSignal(monitor);
  }

  /**
   * A call arrived: label it, run the admission check, enqueue a ticket.
   * Never throws; a failure inside costs the call its metrics, not its answer.
   */
  begin(entry: MethodEntry, metadata: Metadata | undefined): CallRecorder {
    const { options, monitor } = this;
    const arrival = this.calls.ctx.clock();
    const model = options.gate.model(options.modelFromMethod ? entry.method : undefined, entry, metadata);
    const recorder = new CallRecorder(this, entry, model, arrival);
    const retryAfterSeconds = options.gate.shed(model, metadata, METADATA);
    if (retryAfterSeconds !== undefined) {
      recorder.shed = shedStatus(options.shedCode, retryAfterSeconds, metadata, monitor);
      recorder.finish(options.shedCode);
      return recorder;
    }
    try {
      recorder.enqueue();
      // Read only if the call's span is made: the trace its caller sent (`traceparent`), where nothing else took it.
      if (metadata !== undefined) recorder.ticket?.setTraceCarrier(metadata, METADATA);
    } catch (error) {
      monitor.internalError('grpc', error);
    }
    return recorder;
  }
}

/** A call's incoming metadata as a trace-context carrier (its text values; binary keys carry none). */
const METADATA: TextMapGetter<Metadata> = {
  keys: (metadata) => Object.keys(metadata.getMap()),
  get: (metadata, key) => {
    const values = metadata.get(key).filter((value): value is string => typeof value === 'string');
    return values.length === 0 ? undefined : values;
  },
};

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
  let metadata: Metadata | undefined;
  if (request !== undefined) {
    try {
      const MetadataCtor = request.constructor as new () => Metadata;
      metadata = new MetadataCtor();
      metadata.set('retry-after', String(Math.ceil(retryAfterSeconds)));
      metadata.set('grpc-retry-pushback-ms', String(Math.round(retryAfterSeconds * 1000)));
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
