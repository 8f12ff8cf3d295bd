import { InferSignalConfigError, type Monitor } from '@infersignal/core';
import {
  ADAPTER_OPTION_KEYS,
  createRequestGate,
  type AdapterOptions,
  type RequestGate,
} from '@infersignal/core/signals';
import type { Metadata } from '@grpc/grpc-js';
import { GRPC_STATUS } from './status';

/** What a call is, as the model function and the attributes see it. */
export interface GrpcMethodInfo {
  /** Full path, e.g. `/infersignal.inference.v1.Inference/Generate`. */
  readonly path: string;
  /** `rpc.service`: the fully qualified service name. */
  readonly service: string;
  /** `rpc.method`: the method name as written in the proto. */
  readonly method: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
}

/**
 * The adapters' shared options and gRPC's shed status:
 * - `queue`: the core queue calls go through, a name (default `grpc`), a
 *   tracker, or `{ name, capacity, concurrency, maxWaiting }` (concurrency
 *   is core's capacity model's c; without it c is the most calls ever seen
 *   in flight);
 * - `model`: a name for every call, or `(method, metadata) => string | undefined`,
 *   called once per call (default: the method name);
 * - `shed`: answer calls while the queue is CRITICAL without calling the handler;
 * - `autoStart`: start the ticket (end of queue wait) when the handler is
 *   invoked (default true). Set false when the handler queues the work
 *   itself, e.g. `tracker.run(fn, { ticket: callTicket(call) })`.
 */
export interface GrpcInstrumentationOptions extends AdapterOptions<[GrpcMethodInfo, Metadata]> {
  /** Status a shed call gets (default RESOURCE_EXHAUSTED). */
  shedStatus?: 'RESOURCE_EXHAUSTED' | 'UNAVAILABLE' | 8 | 14;
}

export interface ResolvedOptions {
  gate: RequestGate;
  shedCode: number;
  autoStart: boolean;
}

const KEYS = [...ADAPTER_OPTION_KEYS, 'shedStatus'];

/** Validates the options (errors name `options.<field>`) and resolves the queue once. */
export function resolveOptions(monitor: Monitor, options: GrpcInstrumentationOptions = {}): ResolvedOptions {
  // Checked before the gate, which makes the queue.
  const shedStatus = (options as GrpcInstrumentationOptions | null)?.shedStatus ?? 'RESOURCE_EXHAUSTED';
  let shedCode: number;
  if (shedStatus === 'RESOURCE_EXHAUSTED' || shedStatus === GRPC_STATUS.RESOURCE_EXHAUSTED)
    shedCode = GRPC_STATUS.RESOURCE_EXHAUSTED;
  else if (shedStatus === 'UNAVAILABLE' || shedStatus === GRPC_STATUS.UNAVAILABLE) shedCode = GRPC_STATUS.UNAVAILABLE;
  else throw new InferSignalConfigError('options.shedStatus', 'must be RESOURCE_EXHAUSTED or UNAVAILABLE');
  const gate = createRequestGate(monitor, options, { source: 'grpc', queue: 'grpc', keys: KEYS });
  return { gate, shedCode, autoStart: gate.autoStart };
}
