import { InferSignalConfigError, type Monitor } from '@infersignal/core';
import type {
  Metadata,
  Responder,
  ServerInterceptingCall,
  ServerInterceptingCallInterface,
  ServerInterceptor,
  ServerMethodDefinition,
} from '@grpc/grpc-js';
import type { CallRecorder } from './call-recorder';
import { rememberTicket } from './call-ticket';
import { Instrumentation } from './instrumentation';
import type { GrpcInstrumentationOptions } from './options';
import { GRPC_STATUS, normalizeStatus } from './status';
import { WriteStallWatch } from './write-stall';

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
 * message (`sendMessage`) and when HTTP/2 takes it (its callback), and the
 * cancel notification. A deadline that expires is answered by grpc-js below
 * the interceptors, so it arrives as a cancel after the deadline and is
 * counted DEADLINE_EXCEEDED. A response stream whose client stops reading is
 * cut off after `writeStallTimeoutMs`, as with `instrumentService`.
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
  const { autoStart, writeStallTimeoutMs } = instrumentation.options;
  const { ServerInterceptingCall: InterceptingCall } = grpc;
  const WatchedCall = writeStallTimeoutMs > 0 ? watchedCallClass(InterceptingCall, writeStallTimeoutMs) : undefined;

  return function infersignalInterceptor(
    descriptor: ServerMethodDefinition<unknown, unknown>,
    call: ServerInterceptingCallInterface,
  ) {
    const entry = instrumentation.methods.get(descriptor.path, descriptor.requestStream, descriptor.responseStream);
    let recorder: CallRecorder | undefined;

    const responder: Responder = {
      start(next) {
        next({
          onReceiveMetadata(metadata: Metadata, nextMetadata: (metadata: Metadata) => void) {
            recorder = instrumentation.begin(entry, metadata);
            if (watched !== undefined) watched.recorder = recorder;
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
            watched?.watch.stop();
          },
        });
      },
      sendMessage(message: unknown, nextMessage: (message: unknown) => void) {
        recorder?.message();
        nextMessage(message);
      },
      sendStatus(status, nextStatus) {
        recorder?.finish(normalizeStatus(status.code));
        watched?.watch.stop();
        nextStatus(status);
      },
    };
    // Only response streams are watched for stalls, as with instrumentService.
    const watched = WatchedCall !== undefined && entry.responseStream ? new WatchedCall(call, responder) : undefined;
    const intercepting: ServerInterceptingCall = watched ?? new InterceptingCall(call, responder);
    return intercepting;
  };
}

type UpperListener = Parameters<ServerInterceptingCall['start']>[0];

interface WatchedCall extends ServerInterceptingCall {
  /** Set when the request metadata arrives. */
  recorder: CallRecorder | undefined;
  readonly watch: WriteStallWatch;
}

/**
 * The app's ServerInterceptingCall, extended through its public methods to
 * see what a responder cannot: when HTTP/2 takes each response message (the
 * `sendMessage` callback), and the listener toward the handler (`start`).
 *
 * On a stall (see WriteStallWatch) the call is counted CANCELLED with reason
 * `write_stall`, the handler's call gets `cancelled` (as when the client
 * cancels), and CANCELLED is sent toward the client. grpc-js gives an
 * interceptor no way to reset the HTTP/2 stream, so that status reaches a
 * client only once it reads the messages before it, and the stream stays
 * open until then, or until the client or the connection closes it.
 * Afterwards the handler's messages and status go no further: its writes
 * complete at once, so they do not pile up behind the stalled ones.
 */
function watchedCallClass(
  InterceptingCall: GrpcModule['ServerInterceptingCall'],
  timeoutMs: number,
): new (
  call: ServerInterceptingCallInterface,
  responder: Responder,
) => WatchedCall {
  return class WatchedInterceptingCall extends InterceptingCall implements WatchedCall {
    recorder: CallRecorder | undefined;
    readonly watch = new WriteStallWatch(timeoutMs, () => this.stalled());
    private upper: UpperListener | undefined;
    private upperCancelled = false;
    private cutOff = false;
    /** The caller's callback of the one message in flight: the handler's stream sends one at a time. */
    private waiting: (() => void) | undefined;
    private readonly taken = (): void => {
      const callback = this.waiting;
      this.waiting = undefined;
      this.watch.taken();
      callback?.();
    };

    override start(listener: UpperListener): void {
      this.upper = listener;
      // The handler hears of the cancel once, from the stall or from grpc-js when the stream closes.
      super.start({
        onReceiveMetadata: (metadata) => listener.onReceiveMetadata(metadata),
        onReceiveMessage: (message) => listener.onReceiveMessage(message),
        onReceiveHalfClose: () => listener.onReceiveHalfClose(),
        onCancel: () => this.cancelUpper(),
      });
    }

    override sendMessage(message: unknown, callback: () => void): void {
      if (this.cutOff) {
        callback();
        return;
      }
      this.watch.sent();
      if (this.waiting === undefined) {
        this.waiting = callback;
        super.sendMessage(message, this.taken);
      } else {
        super.sendMessage(message, () => {
          this.watch.taken();
          callback();
        });
      }
    }

    override sendStatus(status: Parameters<ServerInterceptingCall['sendStatus']>[0]): void {
      // The stall's CANCELLED went first; a status can be sent once.
      if (!this.cutOff) super.sendStatus(status);
    }

    private stalled(): void {
      const { recorder } = this;
      if (recorder === undefined || recorder.ended) return;
      recorder.finish(GRPC_STATUS.CANCELLED, 'write_stall');
      super.sendStatus({
        code: GRPC_STATUS.CANCELLED,
        details: `the client took no response message for ${timeoutMs} ms`,
        metadata: null,
      });
      this.cutOff = true;
      this.cancelUpper();
    }

    private cancelUpper(): void {
      if (this.upperCancelled) return;
      this.upperCancelled = true;
      this.upper?.onCancel();
    }
  };
}
