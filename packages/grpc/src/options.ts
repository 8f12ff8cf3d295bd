import { InferSignalConfigError } from '@infersignal/core';
import type { Monitor, QueueOptions, QueueTracker } from '@infersignal/core';
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

export interface GrpcInstrumentationOptions {
  /** Core queue the calls go through: a name (default `grpc`) or a tracker the app made. */
  queue?: string | QueueTracker;
  /** Capacity of the queue when `queue` is a name (occupancy = calls in the queue / capacity). */
  capacity?: number;
  /**
   * Calls the server processes at once, when `queue` is a name: core's
   * capacity model uses it as the number of servers c (without it, c is the
   * most calls ever seen in flight).
   */
  concurrency?: number;
  /**
   * Model label of a call (default: the method name). Called once per call
   * with the request metadata; errors are counted, the default is used.
   * The result is capped by the monitor's cardinality limit.
   */
  model?: (method: GrpcMethodInfo, metadata: Metadata) => string;
  /** Shed calls while the queue is CRITICAL (default false). */
  shed?: boolean;
  /** Status a shed call gets (default RESOURCE_EXHAUSTED). */
  shedStatus?: 'RESOURCE_EXHAUSTED' | 'UNAVAILABLE' | 8 | 14;
  /**
   * Start the ticket (end of queue wait) when the handler is invoked
   * (default true). Set false when the handler queues the work itself, e.g.
   * `tracker.run(fn, { ticket: callTicket(call) })`, so the queue wait is real.
   */
  autoStart?: boolean;
  /** Millisecond clock for `rpc.server.call.duration` (default `performance.now`). */
  clock?: () => number;
}

export interface ResolvedOptions {
  tracker: QueueTracker;
  model: GrpcInstrumentationOptions['model'];
  shed: boolean;
  shedCode: number;
  autoStart: boolean;
  clock: () => number;
}

const KNOWN = new Set(['queue', 'capacity', 'concurrency', 'model', 'shed', 'shedStatus', 'autoStart', 'clock']);

const defaultClock = (): number => performance.now();

/** Validates the options (errors name the field) and resolves the queue tracker once. */
export function resolveOptions(monitor: Monitor, options: GrpcInstrumentationOptions = {}): ResolvedOptions {
  if (options === null || typeof options !== 'object')
    throw new InferSignalConfigError('grpc', 'options must be an object');
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw new InferSignalConfigError(`grpc.${key}`, 'unknown option');
  }
  const {
    queue = 'grpc',
    capacity,
    concurrency,
    model,
    shed = false,
    shedStatus = 'RESOURCE_EXHAUSTED',
    autoStart = true,
    clock = defaultClock,
  } = options;

  if (capacity !== undefined && !(Number.isInteger(capacity) && capacity > 0)) {
    throw new InferSignalConfigError('grpc.capacity', 'must be a positive integer');
  }
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency > 0)) {
    throw new InferSignalConfigError('grpc.concurrency', 'must be a positive integer');
  }
  if (model !== undefined && typeof model !== 'function')
    throw new InferSignalConfigError('grpc.model', 'must be a function');
  if (typeof shed !== 'boolean') throw new InferSignalConfigError('grpc.shed', 'must be a boolean');
  if (typeof autoStart !== 'boolean') throw new InferSignalConfigError('grpc.autoStart', 'must be a boolean');
  if (typeof clock !== 'function') throw new InferSignalConfigError('grpc.clock', 'must be a function');

  let shedCode: number;
  if (shedStatus === 'RESOURCE_EXHAUSTED' || shedStatus === GRPC_STATUS.RESOURCE_EXHAUSTED)
    shedCode = GRPC_STATUS.RESOURCE_EXHAUSTED;
  else if (shedStatus === 'UNAVAILABLE' || shedStatus === GRPC_STATUS.UNAVAILABLE) shedCode = GRPC_STATUS.UNAVAILABLE;
  else throw new InferSignalConfigError('grpc.shedStatus', 'must be RESOURCE_EXHAUSTED or UNAVAILABLE');

  let tracker: QueueTracker;
  if (typeof queue === 'string') {
    if (queue.length === 0)
      throw new InferSignalConfigError('grpc.queue', 'must be a non-empty name or a QueueTracker');
    const queueOptions: QueueOptions = {};
    if (capacity !== undefined) queueOptions.capacity = capacity;
    if (concurrency !== undefined) queueOptions.concurrency = concurrency;
    tracker = monitor.queue(queue, queueOptions);
    // monitor.queue() returns an existing queue of that name as it is.
    if (capacity !== undefined && tracker.capacity !== capacity) {
      throw new InferSignalConfigError(
        'grpc.capacity',
        `queue "${queue}" already exists with capacity ${tracker.capacity}`,
      );
    }
    if (concurrency !== undefined && tracker.concurrency !== concurrency) {
      throw new InferSignalConfigError(
        'grpc.concurrency',
        `queue "${queue}" already exists with concurrency ${tracker.concurrency}`,
      );
    }
  } else if (queue !== null && typeof queue === 'object' && typeof queue.enqueue === 'function') {
    if (capacity !== undefined)
      throw new InferSignalConfigError('grpc.capacity', 'set the capacity on the QueueTracker passed as `queue`');
    if (concurrency !== undefined)
      throw new InferSignalConfigError('grpc.concurrency', 'set the concurrency on the QueueTracker passed as `queue`');
    tracker = queue;
  } else {
    throw new InferSignalConfigError('grpc.queue', 'must be a non-empty name or a QueueTracker');
  }

  return { tracker, model, shed, shedCode, autoStart, clock };
}
