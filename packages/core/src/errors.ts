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

/**
 * Thrown at creation for an invalid configuration; `field` is the dotted
 * path. `instanceof` holds across the ESM and CommonJS builds.
 */
export class InferSignalConfigError extends Error {
  override readonly name = 'InferSignalConfigError';
  constructor(
    readonly field: string,
    /** What is wrong with the field (the message without the field). */
    readonly detail: string,
    /** What the field accepts, in words (`an integer >= 1`), where the check knows it. */
    readonly accepted?: string,
  ) {
    super(`infersignal: invalid config "${field}": ${detail}`);
  }
}

brand(InferSignalConfigError, 'InferSignalConfigError');
