import { constants as http2 } from 'node:http2';
import type { Monitor } from '@infersignal/core';
import type {
  Metadata,
  ServerDuplexStream,
  ServerReadableStream,
  ServerUnaryCall,
  ServerWritableStream,
  ServiceDefinition,
  sendUnaryData,
} from '@grpc/grpc-js';
import type { CallRecorder } from './call-recorder';
import { rememberTicket } from './call-ticket';
import { Instrumentation } from './instrumentation';
import type { MethodEntry } from './methods';
import type { GrpcInstrumentationOptions } from './options';
import { GRPC_STATUS, statusOfError } from './status';
import { WriteStallWatch } from './write-stall';

// biome-ignore lint/suspicious/noExplicitAny: grpc-js handlers differ in parameter types; this is the one type they all fit.
type AnyHandler = (...args: any[]) => unknown;
type Unary = ServerUnaryCall<unknown, unknown>;
type ClientStream = ServerReadableStream<unknown, unknown>;
type ResponseStream = ServerWritableStream<unknown, unknown> | ServerDuplexStream<unknown, unknown>;

/**
 * Wraps a grpc-js service implementation so every call is measured: a core
 * queue ticket, `rpc.server.call.duration` by final status, and for calls
 * that stream responses a core stream handle (first message, messages,
 * outcome). At CRITICAL with `shed: true`, calls are answered
 * RESOURCE_EXHAUSTED (or UNAVAILABLE) with a retry hint and the handler is
 * not called.
 *
 * Keys are kept as the implementation spells them (proto name or
 * camelCase `originalName`; grpc-js accepts both). Methods without an
 * implementation are left out, as grpc-js answers them UNIMPLEMENTED.
 */
export function instrumentService<I extends object>(
  monitor: Monitor,
  service: ServiceDefinition,
  implementation: I,
  options?: GrpcInstrumentationOptions,
): I {
  const instrumentation = new Instrumentation(monitor, options);
  const source = implementation as Record<string, unknown>;
  const wrapped: Record<string, AnyHandler> = {};
  for (const name of Object.keys(service)) {
    const definition = service[name];
    let key = name;
    let handler = source[name];
    if (handler === undefined && typeof definition.originalName === 'string') {
      key = definition.originalName;
      handler = source[key];
    }
    if (typeof handler !== 'function') continue;
    const entry = instrumentation.methods.get(definition.path, definition.requestStream, definition.responseStream);
    wrapped[key] = wrapHandler(instrumentation, entry, handler as AnyHandler);
  }
  return wrapped as I;
}

function wrapHandler(instrumentation: Instrumentation, entry: MethodEntry, handler: AnyHandler): AnyHandler {
  if (entry.responseStream) {
    return function instrumentedStreamingCall(this: unknown, call: ResponseStream) {
      const recorder = arrive(instrumentation, entry, call);
      if (recorder.shed !== undefined) {
        // grpc-js ends a response stream with the status of an emitted error.
        call.emit('error', recorder.shed);
        return;
      }
      watchResponseStream(call, recorder, instrumentation);
      return runHandler(handler, this, recorder, call, undefined);
    };
  }
  return function instrumentedUnaryResponseCall(
    this: unknown,
    call: Unary | ClientStream,
    callback: sendUnaryData<unknown>,
  ) {
    const recorder = arrive(instrumentation, entry, call);
    if (recorder.shed !== undefined) {
      callback(recorder.shed, null);
      return;
    }
    call.on('cancelled', () => recorder.cancelled(call.getDeadline()));
    const respond: sendUnaryData<unknown> = (error, value, trailer, flags) => {
      recorder.finish(error ? statusOfError(error) : GRPC_STATUS.OK);
      callback(error, value, trailer, flags);
    };
    return runHandler(handler, this, recorder, call, respond);
  };
}

function arrive(
  instrumentation: Instrumentation,
  entry: MethodEntry,
  call: { readonly metadata: Metadata },
): CallRecorder {
  const recorder = instrumentation.begin(entry, call.metadata);
  if (!instrumentation.options.autoStart) rememberTicket(call.metadata, recorder.ticket);
  return recorder;
}

/**
 * Response streams: each `write` is a message (the first is the first
 * token); `finish` is the end the handler chose (OK, or the code of an
 * error it emitted); `cancelled` before that is the client or the deadline.
 */
function watchResponseStream(call: ResponseStream, recorder: CallRecorder, instrumentation: Instrumentation): void {
  const write = call.write;
  const stallTimeoutMs = instrumentation.options.writeStallTimeoutMs;
  const watch = stallTimeoutMs > 0 ? watchWriteStall(call, recorder, instrumentation, stallTimeoutMs) : undefined;
  // Replaced on the instance; explicit parameters rather than rest
  // arguments, so counting a token allocates nothing (nor does watching it,
  // unless the handler passes its own write callback).
  call.write = function countedWrite(
    this: ResponseStream,
    chunk: unknown,
    encoding?: unknown,
    callback?: unknown,
  ): boolean {
    recorder.message();
    if (watch === undefined) return (write as AnyHandler).call(this, chunk, encoding, callback) as boolean;
    let done = callback;
    if (typeof encoding === 'function') {
      done = encoding;
      encoding = undefined;
    }
    watch.sent();
    // The write callback runs once grpc-js has handed the message to HTTP/2, which it cannot while the client
    // reads nothing.
    const taken =
      typeof done === 'function'
        ? (error?: Error | null) => {
            watch.taken();
            (done as AnyHandler)(error);
          }
        : watch.taken;
    return (write as AnyHandler).call(this, chunk, encoding, taken) as boolean;
  } as typeof call.write;
  call.on('error', (error: unknown) => {
    // grpc-js's own listener turns this error into the final status.
    if (recorder.errorCode === undefined) recorder.errorCode = statusOfError(error);
  });
  call.on('finish', () => recorder.finish(recorder.errorCode ?? GRPC_STATUS.OK));
  call.on('cancelled', () => recorder.cancelled(call.getDeadline()));
}

/**
 * A client that keeps the call open and stops reading (see WriteStallWatch):
 * the handler's writes back up in the call's buffer, and a handler that waits
 * for `drain`, or has ended with messages still buffered, waits forever with
 * the call in flight. Once no message has been taken for the timeout, the
 * call is counted CANCELLED with reason `write_stall`, then reset.
 */
function watchWriteStall(
  call: ResponseStream,
  recorder: CallRecorder,
  instrumentation: Instrumentation,
  timeoutMs: number,
): WriteStallWatch {
  const watch = new WriteStallWatch(timeoutMs, () => {
    if (recorder.ended) return;
    recorder.finish(GRPC_STATUS.CANCELLED, 'write_stall');
    if (!resetCall(call)) {
      instrumentation.monitor.internalError(
        'grpc.writeStall',
        new Error('a stalled call could not be reset: no HTTP/2 stream found under the grpc-js call'),
      );
    }
  });
  const stop = () => watch.stop();
  call.once('finish', stop);
  call.once('cancelled', stop);
  return watch;
}

/**
 * grpc-js has no public way for a server to cancel a call, and a status
 * cannot reach a client that reads nothing (the trailers wait behind the
 * unsent messages). So the HTTP/2 stream under the call is reset with
 * CANCEL, which grpc-js then reports to the handler as the call's
 * `cancelled`. The stream is found through the call's interceptor chain
 * (`call.call`, then each layer's `nextCall`, grpc-js ≥ 1.10); false when
 * it is not there.
 */
function resetCall(call: object): boolean {
  // biome-ignore lint/suspicious/noExplicitAny: grpc-js internals, probed defensively.
  let layer: any = (call as any).call;
  for (let depth = 0; layer !== null && typeof layer === 'object' && depth < 32; depth++) {
    const stream = layer.stream;
    if (stream !== null && typeof stream === 'object' && typeof stream.close === 'function') {
      if (!stream.closed && !stream.destroyed) stream.close(http2.NGHTTP2_CANCEL);
      return true;
    }
    layer = layer.nextCall;
  }
  return false;
}

function runHandler(
  handler: AnyHandler,
  self: unknown,
  recorder: CallRecorder,
  call: unknown,
  callback: unknown,
): unknown {
  recorder.start();
  try {
    return callback === undefined ? handler.call(self, call) : handler.call(self, call, callback);
  } catch (error) {
    // grpc-js answers a throwing handler with UNKNOWN; the error goes on unchanged.
    recorder.finish(GRPC_STATUS.UNKNOWN);
    throw error;
  }
}
