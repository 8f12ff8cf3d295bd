import { stat } from 'node:fs/promises';
import type { ModelSource } from './types';

export interface ResolvedSource {
  /** What `InferenceSession.create` takes. */
  input: string | Uint8Array;
  fileBytes: number | null;
}

/** Calls a loader if given and measures the model's size (a stat for a path). */
export async function resolveSource(source: ModelSource): Promise<ResolvedSource> {
  const value = typeof source === 'function' ? await source() : source;
  if (typeof value === 'string') {
    // A failed stat is left to the runtime, whose error then says what is wrong with the path.
    const size = await stat(value).then(
      (s) => s.size,
      () => null,
    );
    return { input: value, fileBytes: size };
  }
  const bytes = value instanceof Uint8Array ? value : new Uint8Array(value);
  return { input: bytes, fileBytes: bytes.byteLength };
}

export function sourceKind(source: ModelSource): 'path' | 'buffer' | 'loader' {
  if (typeof source === 'function') return 'loader';
  return typeof source === 'string' ? 'path' : 'buffer';
}
