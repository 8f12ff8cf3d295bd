import { ModelLoadError as BaseLoadError, ModelReleasedError as BaseReleasedError } from '@infersignal/core';
import { brand } from '@infersignal/core/signals';

/** A TF.js model load or reload failed: core's ModelLoadError named for TF.js; the runtime's error is `cause`. */
export class ModelLoadError extends BaseLoadError {
  override readonly name = 'ModelLoadError';
  constructor(model: string, kind: 'load' | 'reload', options: { cause: unknown }) {
    super({ runtime: 'TF.js', model, kind, cause: options.cause });
  }
}
// `instanceof` holds for instances made by the other build (ESM / CommonJS) of this package too.
brand(ModelLoadError, 'tfjs.ModelLoadError');

/** A call after `release()`. */
export class ModelReleasedError extends BaseReleasedError {
  override readonly name = 'ModelReleasedError';
  constructor(model: string) {
    super({ runtime: 'TF.js', model });
  }
}
brand(ModelReleasedError, 'tfjs.ModelReleasedError');
