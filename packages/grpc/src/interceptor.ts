import { InferSignalConfigError, type Monitor } from '@infersignal/core';
import type {
  Metadata,
  ServerInterceptingCall,
  ServerInterceptingCallInterface,
  ServerInterceptor,
  ServerMethodDefinition,
} from '@grpc/grpc-js';
import type { CallRecorder } from './call-recorder';
import { rememberTicket } from './call-ticket';
import { Instrumentation } from './instrumentation';
import type { GrpcInstrumentationOptions } from './options';
import { normalizeStatus } from './status';

/** The part of the `@grpc/grpc-js` module the interceptor needs (pass the module itself). */
export interface GrpcModule {
  ServerInterceptingCall: typeof ServerInterceptingCall;
}

/**
 * A grpc-js server interceptor (`new Server({ interceptors: [it] })`) that
 * measures every call of every service, like `instrumentService`, without
 * touching the implementations. Use one or the other, not both, or calls
 * are counted twice.
 *
 * It takes the app's grpc-js module so the ServerInterceptingCall class is
 * the app's own copy (this package has no runtime import of grpc-js).
 *
 * What it sees: the status the handler sends (`sendStatus`), each response
 * message (`sendMessage`), and the cancel notification. A deadline that
 * expires is answered by grpc-js below the interceptors, so it arrives as a
 * cancel after the deadline and is counted DEADLINE_EXCEEDED.
 */
export function createServerInterceptor(
  monitor: Monitor,
  grpc: GrpcModule,
  options?: GrpcInstrumentationOptions,
): ServerInterceptor {
  if (grpc === null || typeof grpc !== 'object' || typeof grpc.ServerInterceptingCall !== 'function') {
    throw new InferSignalConfigError(
      'grpc',
      'createServerInterceptor needs the @grpc/grpc-js module (import * as grpc from "@grpc/grpc-js")',
    );
  }
  const instrumentation = new Instrumentation(monitor, options);
  const { autoStart } = instrumentation.options;
  const { ServerInterceptingCall: InterceptingCall } = grpc;

  return function infersignalInterceptor(
    descriptor: ServerMethodDefinition<unknown, unknown>,
    call: ServerInterceptingCallInterface,
  ) {
    const entry = instrumentation.methods.get(descriptor.path, descriptor.requestStream, descriptor.responseStream);
    let recorder: CallRecorder | undefined;

    const intercepting: ServerInterceptingCall = new InterceptingCall(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata: Metadata, nextMetadata: (metadata: Metadata) => void) {
            recorder = instrumentation.begin(entry, metadata);
            if (recorder.shed !== undefined) {
              // Not passing the metadata on keeps the handler from running.
              intercepting.sendStatus(recorder.shed);
              return;
            }
            if (!autoStart) rememberTicket(metadata, recorder.ticket);
            // grpc-js invokes streaming-request handlers as soon as the
            // metadata arrives, the others once the request message is in.
            if (entry.requestStream) recorder.start();
            nextMetadata(metadata);
          },
          onReceiveHalfClose(nextHalfClose: () => void) {
            if (!entry.requestStream) recorder?.start();
            nextHalfClose();
          },
          onCancel() {
            recorder?.cancelled(call.getDeadline());
          },
        });
      },
      sendMessage(message: unknown, nextMessage: (message: unknown) => void) {
        recorder?.message();
        nextMessage(message);
      },
      sendStatus(status, nextStatus) {
        recorder?.finish(normalizeStatus(status.code));
        nextStatus(status);
      },
    });
    return intercepting;
  };
}
