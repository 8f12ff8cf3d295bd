import { brand } from './brand';

/**
 * `queue.run()` refused a request: the FIFO is at maxWaiting.
 * `instanceof` holds across the ESM and CommonJS builds (see brand.ts).
 */
export class QueueFullError extends Error {
  override readonly name = 'QueueFullError';
  readonly code = 'INFERSIGNAL_QUEUE_FULL';
  constructor(
    readonly queue: string,
    readonly retryAfterSeconds: number,
  ) {
    super(`infersignal: queue "${queue}" is full`);
  }
}

/** The request ended (client gone, aborted) before inference could start. */
export class RequestEndedError extends Error {
  override readonly name = 'RequestEndedError';
  readonly code = 'INFERSIGNAL_REQUEST_ENDED';
  constructor(readonly queue: string) {
    super(`infersignal: request on queue "${queue}" ended before inference started`);
  }
}

brand(QueueFullError, 'QueueFullError');
brand(RequestEndedError, 'RequestEndedError');

export { InferSignalConfigError } from './config-error';
