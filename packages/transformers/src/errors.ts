import { brand } from '@infersignal/core/signals';

/** Why a pipeline did not load, as far as the library's error tells. */
export type PipelineLoadFailureReason = 'missing' | 'corrupt' | 'unsupported' | 'unknown';

const EXPLANATION: Record<PipelineLoadFailureReason, string> = {
  missing: 'a model file was not found (remote models disabled, or not in the local folder)',
  corrupt: 'a model file is not valid (ONNX graph or JSON corrupt or truncated)',
  unsupported: 'the task or model type is not supported by this transformers.js',
  unknown: 'the library refused the model',
};

/**
 * A pipeline load or reload failed. Thrown after the `error` outcome was
 * recorded; the library's own error is kept as `cause`.
 */
export class PipelineLoadError extends Error {
  override readonly name = 'PipelineLoadError';
  constructor(
    readonly model: string,
    readonly kind: 'load' | 'reload',
    readonly reason: PipelineLoadFailureReason,
    options: { cause: unknown },
  ) {
    super(
      `Failed to ${kind} transformers.js pipeline "${model}": ${EXPLANATION[reason]} (${messageOf(options.cause)})`,
      options,
    );
  }
}
// `instanceof` holds for instances made by the other build (ESM / CommonJS) of this package too.
brand(PipelineLoadError, 'transformers.PipelineLoadError');

/** `run()` or `reload()` after `release()`. */
export class PipelineReleasedError extends Error {
  override readonly name = 'PipelineReleasedError';
  constructor(readonly model: string) {
    super(`transformers.js pipeline "${model}" was released`);
  }
}
brand(PipelineReleasedError, 'transformers.PipelineReleasedError');

function messageOf(err: unknown): string {
  const line = ((err instanceof Error ? err.message : String(err)).trim().split('\n')[0] ?? '').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

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
