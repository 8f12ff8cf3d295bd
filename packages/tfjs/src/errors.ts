import { brand } from '@infersignal/core/signals';
/** A TF.js model load or reload failed; thrown after the `error` outcome was recorded, runtime error as `cause`. */
export class ModelLoadError extends Error {
  override readonly name = 'ModelLoadError';
  constructor(
    readonly model: string,
    readonly kind: 'load' | 'reload',
    options: { cause: unknown },
  ) {
    const cause = options.cause instanceof Error ? options.cause.message : String(options.cause);
    super(`Failed to ${kind} TF.js model "${model}": ${cause.split('\n')[0]}`, options);
  }
}
// `instanceof` holds for instances made by the other build (ESM / CommonJS) of this package too.
brand(ModelLoadError, 'tfjs.ModelLoadError');

/** A call after `release()`. */
export class ModelReleasedError extends Error {
  override readonly name = 'ModelReleasedError';
  constructor(readonly model: string) {
    super(`TF.js model "${model}" was released`);
  }
}
brand(ModelReleasedError, 'tfjs.ModelReleasedError');
