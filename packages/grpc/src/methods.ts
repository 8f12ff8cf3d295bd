import { ATTR } from '@infersignal/core';
import type { Attributes } from '@opentelemetry/api';
import type { GrpcMethodInfo } from './options';
import { MAX_STATUS } from './status';

/** A method and its attribute objects, one per status code, built on first use. */
export interface MethodEntry extends GrpcMethodInfo {
  /** Index = status code (0..16); reused for every call so recording allocates nothing. */
  readonly attributes: (Attributes | undefined)[];
}

/**
 * Bound on distinct paths kept. grpc-js only runs handlers (and interceptors)
 * for registered methods, so this is a guard, not a working limit; past it
 * calls share one `_other` entry.
 */
const MAX_METHODS = 1000;

export class MethodTable {
  private readonly byPath = new Map<string, MethodEntry>();
  private overflow: MethodEntry | undefined;

  get(path: string, requestStream: boolean, responseStream: boolean): MethodEntry {
    let entry = this.byPath.get(path);
    if (entry !== undefined) return entry;
    if (this.byPath.size >= MAX_METHODS) {
      this.overflow ??= makeEntry('/_other/_other', requestStream, responseStream);
      return this.overflow;
    }
    entry = makeEntry(path, requestStream, responseStream);
    this.byPath.set(path, entry);
    return entry;
  }
}

function makeEntry(path: string, requestStream: boolean, responseStream: boolean): MethodEntry {
  // '/pkg.Service/Method' → service 'pkg.Service', method 'Method'
  const slash = path.lastIndexOf('/');
  const service = slash > 0 ? path.slice(path[0] === '/' ? 1 : 0, slash) : '';
  const method = slash >= 0 ? path.slice(slash + 1) : path;
  return { path, service, method, requestStream, responseStream, attributes: new Array(MAX_STATUS + 1) };
}

/** The `rpc.server.call.duration` attribute set of (method, status), cached. */
export function attributesOf(entry: MethodEntry, code: number): Attributes {
  let attrs = entry.attributes[code];
  if (attrs === undefined) {
    attrs = {
      [ATTR.rpcSystem]: 'grpc',
      [ATTR.rpcService]: entry.service,
      [ATTR.rpcMethod]: entry.method,
      [ATTR.rpcGrpcStatusCode]: code,
    };
    entry.attributes[code] = attrs;
  }
  return attrs;
}
