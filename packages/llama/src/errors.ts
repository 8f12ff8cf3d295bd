import { ModelLoadError, ModelReleasedError } from '@infersignal/core';
import { brand } from '@infersignal/core/signals';

/** The runtime as errors name it. */
export const RUNTIME = 'llama.cpp';
/**
 * Why a GGUF model did not load. node-llama-cpp rejects with a bare `Failed to load model`; the reason is
 * read from llama.cpp's log line (`error loading model: …`), or from the error itself for the cases
 * node-llama-cpp checks before llama.cpp sees the file.
 */
export type LlamaLoadFailureReason =
  | 'missing_file'
  | 'not_gguf'
  | 'missing_tensor'
  | 'missing_key'
  | 'bad_shape'
  | 'unsupported_architecture'
  | 'context'
  | 'unknown';

const EXPLANATION: Record<LlamaLoadFailureReason, string> = {
  missing_file: 'the model file does not exist',
  not_gguf: 'the file is not a GGUF model',
  missing_tensor: 'a tensor the architecture needs is missing (incomplete or mislabelled file)',
  missing_key: 'a metadata key the architecture needs is missing',
  bad_shape: 'a tensor has the wrong shape for the metadata (corrupt or mismatched file)',
  unsupported_architecture: 'this llama.cpp build does not know the model architecture',
  context: 'the model loaded but its context could not be created (memory?)',
  unknown: 'llama.cpp refused the model',
};

/** A load or reload failed: core's ModelLoadError with llama.cpp's reason. The runtime's error is `cause`. */
export class LlamaLoadError extends ModelLoadError<LlamaLoadFailureReason> {
  override readonly name = 'LlamaLoadError';
  constructor(
    model: string,
    kind: 'load' | 'reload',
    reason: LlamaLoadFailureReason,
    /** llama.cpp's own line, when the log gave one (`missing tensor 'blk.1.ffn_down.weight'`). */
    detail: string | null,
    options: { cause: unknown },
  ) {
    super({ runtime: RUNTIME, model, kind, reason, explanation: EXPLANATION[reason], detail, cause: options.cause });
  }
}
// `instanceof` holds for instances made by the other build (ESM / CommonJS) of this package too.
brand(LlamaLoadError, 'llama.LlamaLoadError');

/** `complete()`, `withSequence()` or `reload()` after `release()`. */
export class LlamaModelReleasedError extends ModelReleasedError {
  override readonly name = 'LlamaModelReleasedError';
  constructor(model: string) {
    super({ runtime: RUNTIME, model });
  }
}
brand(LlamaModelReleasedError, 'llama.LlamaModelReleasedError');

/** The text after `error loading model:` in a llama.cpp log line, or null for other lines. */
export function loadErrorDetail(line: string): string | null {
  const match = /error loading model: (?:error loading model [a-z ]+: )?(?:check_tensor_dims: )?(.+)/.exec(line);
  return match ? match[1].replace(/\s+/g, ' ').trim() : null;
}

/** Classifies a failed load from the rejection and the llama.cpp detail line, if any. */
export function classifyLoadFailure(err: unknown, detail: string | null): LlamaLoadFailureReason {
  const e = err as { code?: unknown; name?: unknown } | null;
  if (e?.code === 'ENOENT') return 'missing_file';
  if (e?.name === 'InvalidGgufMagicError' || /Invalid GGUF magic/i.test(String((err as Error)?.message)))
    return 'not_gguf';
  if (!detail) return 'unknown';
  if (/missing tensor|tensor '[^']+' not found/.test(detail)) return 'missing_tensor';
  if (/key not found/.test(detail)) return 'missing_key';
  if (/wrong shape/.test(detail)) return 'bad_shape';
  if (/unknown (model )?architecture/.test(detail)) return 'unsupported_architecture';
  return 'unknown';
}
