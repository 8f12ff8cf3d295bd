import type { IncomingMessage, ServerResponse } from 'node:http';
import { InferSignalConfigError } from '@infersignal/core';
import { describeValue } from '@infersignal/core/signals';

/** Body of the default answer to a shed request (503); the same bytes every time. */
export const HTTP_SHED_BODY = JSON.stringify({
  error: 'overloaded',
  message: 'The server is at critical backpressure; retry later.',
});

/** What a shed request is told. */
interface ShedInfo {
  /** Value of the Retry-After header: whole seconds, at least 1. */
  readonly retryAfter: string;
  /** The model label the request was counted under, if any. */
  readonly model: string | undefined;
}

/**
 * Writes the whole answer to a shed request on the raw Node objects (the
 * route's handler has not run and will not). A throw or rejection, or
 * returning (or resolving) without having answered, is counted as internal
 * error `<source>.shedResponse` and the default 503 is sent.
 */
type ShedHandler = (req: IncomingMessage, res: ServerResponse, shed: ShedInfo) => void | Promise<void>;

/** The answer's parts; each one left out keeps the default. */
interface ShedAnswerOptions {
  /** HTTP status, 400–599. Default 503. */
  status?: number;
  /** Headers written with it, over the defaults (`retry-after`, `content-type: application/json; charset=utf-8`). */
  headers?: Record<string, string>;
  /** A string or bytes as they are, anything else as JSON. Default HTTP_SHED_BODY. */
  body?: unknown;
}

export type ShedResponseOption = ShedAnswerOptions | ShedHandler;

/** A resolved answer: status, headers (Retry-After added per request) and body bytes, made once. */
export interface ShedAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Uint8Array;
  /** Set when the answer comes from the app's handler. */
  readonly handler: ShedHandler | undefined;
}

const JSON_TYPE = 'application/json; charset=utf-8';
export const DEFAULT_SHED_ANSWER: ShedAnswer = Object.freeze({
  status: 503,
  headers: Object.freeze({ 'content-type': JSON_TYPE }),
  body: HTTP_SHED_BODY,
  handler: undefined,
});

/** Checks the `shedResponse` option (fields named `options.shedResponse.<field>`) and builds the answer once. */
export function resolveShedAnswer(option: unknown): ShedAnswer {
  if (option === undefined) return DEFAULT_SHED_ANSWER;
  if (typeof option === 'function') return { ...DEFAULT_SHED_ANSWER, handler: option as ShedHandler };
  if (typeof option !== 'object' || option === null || Array.isArray(option))
    throw new InferSignalConfigError('options.shedResponse', 'must be { status?, headers?, body? } or a function');
  const { status, headers, body, ...rest } = option as ShedAnswerOptions;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined)
    throw new InferSignalConfigError(`options.shedResponse.${unknown}`, 'is not an option (status, headers, body)');
  if (status !== undefined && (!Number.isInteger(status) || status < 400 || status > 599))
    throw new InferSignalConfigError(
      'options.shedResponse.status',
      `must be an HTTP error status (400–599), got ${describeValue(status)}`,
    );
  const merged: Record<string, string> = { 'content-type': JSON_TYPE };
  if (headers !== undefined) {
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers))
      throw new InferSignalConfigError('options.shedResponse.headers', 'must be an object of header names to strings');
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name))
        throw new InferSignalConfigError(
          `options.shedResponse.headers.${name}`,
          'must be a valid header name with a string value',
        );
      merged[name.toLowerCase()] = value;
    }
  }
  let bytes: string | Uint8Array = HTTP_SHED_BODY;
  if (body !== undefined) {
    if (typeof body === 'string' || body instanceof Uint8Array) bytes = body;
    else {
      const json = JSON.stringify(body);
      if (json === undefined)
        throw new InferSignalConfigError('options.shedResponse.body', 'must be a string, bytes or JSON-serialisable');
      bytes = json;
    }
  }
  return Object.freeze({ status: status ?? 503, headers: Object.freeze(merged), body: bytes, handler: undefined });
}

/** Writes the configured part of the answer (not the handler's) on a raw response. */
export function writeShedAnswer(answer: ShedAnswer, res: ServerResponse, retryAfter: string): void {
  res.statusCode = answer.status;
  res.setHeader('retry-after', retryAfter);
  for (const name in answer.headers) res.setHeader(name, answer.headers[name]);
  res.end(answer.body);
}
