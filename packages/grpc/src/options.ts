import { InferSignalConfigError, type Monitor } from '@infersignal/core';
import {
  fieldOrDefault,
  createRequestGate,
  type AdapterOptions,
  type RequestGate,
  describeValue,
} from '@infersignal/core/signals';
import type { Metadata } from '@grpc/grpc-js';
import { GRPC_STATUS } from './status';

/** What a call is, as the model function and the attributes see it. */
export interface GrpcMethodInfo {
  /** Full path, e.g. `/infersignal.inference.v1.Inference/Generate`. */
  readonly path: string;
  /** The fully qualified service name, `infersignal.inference.v1.Inference`. */
  readonly service: string;
  /** The method name as written in the proto, `Generate`. */
  readonly method: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
}

/**
 * The adapters' shared options, gRPC's shed status, and the conventions:
 * - `queue`: the core queue calls go through, a name (default `grpc`), a
 *   tracker, or `{ name, capacity, concurrency, maxWaiting }` (concurrency
 *   is core's capacity model's c; without it c is the most calls ever seen
 *   in flight);
 * - `model`: a name for every call, or `(method, metadata) => string | undefined`,
 *   called once per call; unnamed calls are core's `_unknown`, or the
 *   method name (`Generate`) with `modelFromMethod`;
 * - `shed`: answer calls while the queue is CRITICAL without calling the handler;
 * - `autoStart`: start the ticket (end of queue wait) when the handler is
 *   invoked (default true). Set false when the handler queues the work
 *   itself, e.g. `tracker.run(fn, { ticket: callTicket(call) })`.
 */
export interface GrpcInstrumentationOptions extends AdapterOptions<[GrpcMethodInfo, Metadata]> {
  /** Status a shed call gets (default RESOURCE_EXHAUSTED). */
  shedStatus?: 'RESOURCE_EXHAUSTED' | 'UNAVAILABLE' | 8 | 14;
  /** Label calls the `model` option does not name with their method name. Default false (`_unknown`). */
  modelFromMethod?: boolean;
  /**
   * Which RPC conventions to emit, as `OTEL_SEMCONV_STABILITY_OPT_IN`
   * (default: that variable): the current ones (`rpc.server.call.duration`
   * with `rpc.system.name`, `rpc.method` = `pkg.Service/Method`,
   * `rpc.response.status_code`) always; with `rpc/dup` in the
   * comma-separated list, the older `rpc.server.duration` (ms, `rpc.system`,
   * `rpc.service`, `rpc.method`, `rpc.grpc.status_code`) beside them.
   */
  semconvStabilityOptIn?: string;
  /**
   * A client that keeps a response stream open but takes nothing for this
   * long is cut off: once a response message has waited this many ms with
   * none taken by HTTP/2 (flow control holds them while the client reads
   * nothing), the call is counted CANCELLED and its stream `cancelled` with
   * `error.type` `write_stall`; its queue ticket ends, so in-flight falls,
   * and the handler sees the call's `cancelled` event, as when the client
   * cancels. `instrumentService` resets the HTTP/2 stream (RST_STREAM
   * CANCEL); the interceptor sends CANCELLED, which the client gets after
   * the messages it has not read. Both wirings measure the same wait, so
   * the bound is the same. Default 30 000; 0 turns the check off.
   */
  writeStallTimeoutMs?: number;
}

export interface ResolvedOptions {
  gate: RequestGate;
  shedCode: number;
  autoStart: boolean;
  modelFromMethod: boolean;
  /** Also record the older conventions' `rpc.server.duration`. */
  oldConventions: boolean;
  /** 0: off. */
  writeStallTimeoutMs: number;
}

const DEFAULT_WRITE_STALL_TIMEOUT_MS = 30_000;

const KEYS = ['shedStatus', 'modelFromMethod', 'semconvStabilityOptIn', 'writeStallTimeoutMs'];

/** Whether an `OTEL_SEMCONV_STABILITY_OPT_IN` value asks for the older RPC conventions too. */
function wantsOldRpcConventions(optIn: string | undefined): boolean {
  return optIn?.split(',').some((entry) => entry.trim() === 'rpc/dup') ?? false;
}

/** Validates the options (errors name `options.<field>`) and resolves the queue once. */
export function resolveOptions(monitor: Monitor, options: GrpcInstrumentationOptions = {}): ResolvedOptions {
  // Checked before the gate, which makes the queue.
  const shedStatus = (options as GrpcInstrumentationOptions | null)?.shedStatus ?? 'RESOURCE_EXHAUSTED';
  let shedCode: number;
  if (shedStatus === 'RESOURCE_EXHAUSTED' || shedStatus === GRPC_STATUS.RESOURCE_EXHAUSTED)
    shedCode = GRPC_STATUS.RESOURCE_EXHAUSTED;
  else if (shedStatus === 'UNAVAILABLE' || shedStatus === GRPC_STATUS.UNAVAILABLE) shedCode = GRPC_STATUS.UNAVAILABLE;
  else throw new InferSignalConfigError('options.shedStatus', 'must be RESOURCE_EXHAUSTED or UNAVAILABLE');
  const optIn = (options as GrpcInstrumentationOptions | null)?.semconvStabilityOptIn;
  if (optIn !== undefined && typeof optIn !== 'string')
    throw new InferSignalConfigError(
      'options.semconvStabilityOptIn',
      'must be a string like OTEL_SEMCONV_STABILITY_OPT_IN (e.g. "rpc/dup")',
    );
  const stall = (options as GrpcInstrumentationOptions | null)?.writeStallTimeoutMs ?? DEFAULT_WRITE_STALL_TIMEOUT_MS;
  // setTimeout's range: a larger delay would fire at once.
  if (typeof stall !== 'number' || !Number.isFinite(stall) || stall < 0 || stall > 2 ** 31 - 1)
    throw new InferSignalConfigError(
      'options.writeStallTimeoutMs',
      `must be a number of milliseconds ≥ 0 (0: off), got ${describeValue(stall)}`,
    );
  const gate = createRequestGate(monitor, options, { source: 'grpc', queue: 'grpc', keys: KEYS });
  return {
    gate,
    shedCode,
    autoStart: gate.autoStart,
    modelFromMethod: fieldOrDefault('options.modelFromMethod', options.modelFromMethod, { type: 'boolean' }, false),
    oldConventions: wantsOldRpcConventions(optIn ?? process.env.OTEL_SEMCONV_STABILITY_OPT_IN),
    writeStallTimeoutMs: stall,
  };
}
