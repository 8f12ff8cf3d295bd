import type { SessionOptions } from './types';

/** Names of the execution providers asked for; onnxruntime uses CPU when none are given. */
export function requestedProviders(options: SessionOptions | undefined): string[] {
  const list = options?.executionProviders;
  if (!list || list.length === 0) return ['cpu'];
  return list.map((p) => (typeof p === 'string' ? p : p.name));
}

/**
 * Providers a successfully created session was built with: onnxruntime-node
 * throws when it cannot append a requested provider, and always keeps CPU
 * as the fallback for the nodes the others do not take.
 */
export function usedProviders(requested: readonly string[]): string[] {
  return requested.includes('cpu') ? [...requested] : [...requested, 'cpu'];
}
