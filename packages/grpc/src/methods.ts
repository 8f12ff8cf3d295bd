import { ATTR } from '@infersignal/core';
import type { Attributes } from '@opentelemetry/api';
import type { GrpcMethodInfo } from './options';
import { MAX_STATUS, statusName } from './status';

/** A method and its attribute objects, one per status code, built on first use. */
export interface MethodEntry extends GrpcMethodInfo {
  /** `rpc.method` of the current RPC conventions: `pkg.Service/Method`, `_OTHER` past the method cap. */
  readonly rpcMethod: string;
  /** Index = status code (0..16); reused for every call so recording allocates nothing. */
  readonly attributes: (Attributes | undefined)[];
  /** The same for the older conventions' `rpc.server.duration` (OTEL_SEMCONV_STABILITY_OPT_IN=rpc/dup). */
  readonly oldAttributes: (Attributes | undefined)[];
}

/**
 * Bound on distinct paths kept. grpc-js only runs handlers (and interceptors)
 * for registered methods, so this is a guard, not a working limit; past it
 * calls share one `_OTHER` entry.
 */
const MAX_METHODS = 1000;

/**
 * The codes the gRPC conventions count as a server error: `error.type` is
 * set (to the code's name) for these only. CANCELLED, RESOURCE_EXHAUSTED
 * (a shed call), INVALID_ARGUMENT … are the client's or a deliberate answer.
 */
const SERVER_ERRORS: ReadonlySet<number> = new Set([2, 4, 12, 13, 14, 15]);

export class MethodTable {
  private readonly byPath = new Map<string, MethodEntry>();
  private overflow: MethodEntry | undefined;

  get(path: string, requestStream: boolean, responseStream: boolean): MethodEntry {
    let entry = this.byPath.get(path);
    if (entry !== undefined) return entry;
    if (this.byPath.size >= MAX_METHODS) {
      this.overflow ??= makeEntry('/_OTHER/_OTHER', requestStream, responseStream, '_OTHER');
      return this.overflow;
    }
    entry = makeEntry(path, requestStream, responseStream);
    this.byPath.set(path, entry);
    return entry;
  }
}

function makeEntry(path: string, requestStream: boolean, responseStream: boolean, rpcMethod?: string): MethodEntry {
  // '/pkg.Service/Method' → service 'pkg.Service', method 'Method', rpc.method 'pkg.Service/Method'
  const slash = path.lastIndexOf('/');
  const service = slash > 0 ? path.slice(path[0] === '/' ? 1 : 0, slash) : '';
  const method = slash >= 0 ? path.slice(slash + 1) : path;
  return {
    path,
    service,
    method,
    rpcMethod: rpcMethod ?? (service === '' ? method : `${service}/${method}`),
    requestStream,
    responseStream,
    attributes: new Array(MAX_STATUS + 1),
    oldAttributes: new Array(MAX_STATUS + 1),
  };
}

/** The `rpc.server.call.duration` attribute set of (method, status), cached. */
export function attributesOf(entry: MethodEntry, code: number): Attributes {
  let attrs = entry.attributes[code];
  if (attrs === undefined) {
    const status = statusName(code);
    attrs = {
      [ATTR.rpcSystemName]: 'grpc',
      [ATTR.rpcMethod]: entry.rpcMethod,
      [ATTR.rpcResponseStatusCode]: status,
    };
    if (SERVER_ERRORS.has(code)) attrs[ATTR.errorType] = status;
    entry.attributes[code] = attrs;
  }
  return attrs;
}

/** The older conventions' `rpc.server.duration` attribute set of (method, status), cached. */
export function oldAttributesOf(entry: MethodEntry, code: number): Attributes {
  let attrs = entry.oldAttributes[code];
  if (attrs === undefined) {
    attrs = {
      [ATTR.rpcSystem]: 'grpc',
      [ATTR.rpcService]: entry.service,
      [ATTR.rpcMethod]: entry.method,
      [ATTR.rpcGrpcStatusCode]: code,
    };
    entry.oldAttributes[code] = attrs;
  }
  return attrs;
}
