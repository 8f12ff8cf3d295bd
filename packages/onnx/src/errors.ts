import { ModelLoadError as BaseLoadError, ModelReleasedError } from '@infersignal/core';
import { brand, messageOf } from '@infersignal/core/signals';
/** Why a model did not load, as far as the runtime's message tells. */
export type LoadFailureReason = 'missing' | 'corrupt' | 'unsupported_opset' | 'provider_unavailable' | 'unknown';

const EXPLANATION: Record<LoadFailureReason, string> = {
  missing: 'the model file does not exist',
  corrupt: 'the bytes are not a valid ONNX model (corrupt or truncated)',
  unsupported_opset: 'the model uses an opset this onnxruntime does not support',
  provider_unavailable: 'a requested execution provider could not be loaded',
  unknown: 'the runtime refused the model',
};

/** A model load or reload failed: core's ModelLoadError with onnxruntime's reason; the runtime's error is `cause`. */
export class ModelLoadError extends BaseLoadError<LoadFailureReason> {
  override readonly name = 'ModelLoadError';
  constructor(model: string, kind: 'load' | 'reload', reason: LoadFailureReason, options: { cause: unknown }) {
    const { cause } = options;
    super({ runtime: 'ONNX', model, kind, reason, explanation: EXPLANATION[reason], detail: sentenceOf(cause), cause });
  }
}
// `instanceof` holds for instances made by the other build (ESM / CommonJS) of this package too.
brand(ModelLoadError, 'onnx.ModelLoadError');

/** `run()` or `reload()` after `release()`. */
export class SessionReleasedError extends ModelReleasedError {
  override readonly name = 'SessionReleasedError';
  constructor(model: string) {
    super({ runtime: 'ONNX', model });
  }
}
brand(SessionReleasedError, 'onnx.SessionReleasedError');

/** onnxruntime puts a C++ source location and function signature before the sentence; keep the sentence. */
function sentenceOf(err: unknown): string {
  return messageOf(err).replace(/\/onnxruntime_src\/\S+:\d+ .*?\) (?=[A-Z])/, '');
}

/** Classifies onnxruntime-node 1.x load errors by their message (the binding throws plain `Error`s). */
export function classifyLoadError(err: unknown): LoadFailureReason {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOENT') return 'missing';
  const text = err instanceof Error ? err.message : String(err);
  if (/File doesn't exist|no such file/i.test(text)) return 'missing';
  if (/opset/i.test(text)) return 'unsupported_opset';
  if (/protobuf parsing failed|invalid model|ModelProto|corrupt/i.test(text)) return 'corrupt';
  if (/ExecutionProvider|backend not found|Failed to load shared library|adapter/i.test(text))
    return 'provider_unavailable';
  return 'unknown';
}
