import { brand } from './brand';

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
