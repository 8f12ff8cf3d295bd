import { ModelLoadError, ModelReleasedError } from '@infersignal/core';
import { brand } from '@infersignal/core/signals';

/** Why a pipeline did not load, as far as the library's error tells. */
export type PipelineLoadFailureReason = 'missing' | 'corrupt' | 'unsupported' | 'unknown';

/** The runtime as errors name it: `Failed to load transformers.js model "m": …`. */
export const RUNTIME_NAME = 'transformers.js';

const EXPLANATION: Record<PipelineLoadFailureReason, string> = {
  missing: 'a model file was not found (remote models disabled, or not in the local folder)',
  corrupt: 'a model file is not valid (ONNX graph or JSON corrupt or truncated)',
  unsupported: 'the task or model type is not supported by this transformers.js',
  unknown: 'the library refused the model',
};

/** A pipeline load or reload failed: core's ModelLoadError with the library's reason; its error is `cause`. */
export class PipelineLoadError extends ModelLoadError<PipelineLoadFailureReason> {
  override readonly name = 'PipelineLoadError';
  constructor(model: string, kind: 'load' | 'reload', reason: PipelineLoadFailureReason, options: { cause: unknown }) {
    super({ runtime: RUNTIME_NAME, model, kind, reason, explanation: EXPLANATION[reason], cause: options.cause });
  }
}
// `instanceof` holds for instances made by the other build (ESM / CommonJS) of this package too.
brand(PipelineLoadError, 'transformers.PipelineLoadError');

/** `run()` or `reload()` after `release()`. */
export class PipelineReleasedError extends ModelReleasedError {
  override readonly name = 'PipelineReleasedError';
  constructor(model: string) {
    super({ runtime: RUNTIME_NAME, model });
  }
}
brand(PipelineReleasedError, 'transformers.PipelineReleasedError');

/** Classifies transformers.js 3.x/4.x load errors by their class and message. */
export function classifyPipelineError(err: unknown): PipelineLoadFailureReason {
  const name = (err as { name?: unknown } | null)?.name;
  const code = (err as { code?: unknown } | null)?.code;
  if (name === 'ModelFileNotFoundError' || code === 'ENOENT') return 'missing';
  const text = err instanceof Error ? err.message : String(err);
  if (/not found locally|could not locate file|no such file|File doesn't exist/i.test(text)) return 'missing';
  if (/protobuf parsing failed|invalid model|ModelProto|corrupt|JSON/i.test(text) || err instanceof SyntaxError)
    return 'corrupt';
  if (/unsupported|not supported/i.test(text)) return 'unsupported';
  return 'unknown';
}
