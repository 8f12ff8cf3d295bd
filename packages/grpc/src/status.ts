import type { Outcome, StreamOutcome } from '@infersignal/core';

/**
 * gRPC status codes. The numbers are fixed by the gRPC protocol
 * (grpc/doc/statuscodes.md), so the package needs no runtime import of
 * `@grpc/grpc-js` to use them; they equal `grpc.status.*`.
 */
export const GRPC_STATUS = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type GrpcStatusName = keyof typeof GRPC_STATUS;

/** Highest defined code; anything outside 0..MAX_STATUS is recorded as UNKNOWN. */
export const MAX_STATUS = 16;

/** A status code as recorded: integers 0..16, everything else UNKNOWN (keeps the attribute set bounded). */
export function normalizeStatus(code: unknown): number {
  return typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= MAX_STATUS
    ? code
    : GRPC_STATUS.UNKNOWN;
}

/**
 * The code grpc-js sends for an error passed to a callback or emitted on a
 * stream: its integer `code`, else UNKNOWN (same rule as grpc-js's
 * `serverErrorToStatus`).
 */
export function statusOfError(error: unknown): number {
  if (error !== null && typeof error === 'object' && 'code' in error)
    return normalizeStatus((error as { code: unknown }).code);
  return GRPC_STATUS.UNKNOWN;
}

/** Stream outcome for core's stream handle: everything but OK is an interruption. */
export function streamOutcomeOf(code: number): StreamOutcome {
  switch (code) {
    case GRPC_STATUS.OK:
      return 'completed';
    case GRPC_STATUS.CANCELLED:
      return 'cancelled';
    case GRPC_STATUS.UNAVAILABLE:
      return 'unavailable';
    case GRPC_STATUS.DEADLINE_EXCEEDED:
      return 'deadline_exceeded';
    default:
      return 'error';
  }
}

/**
 * Request outcome for core's queue ticket: the same mapping as a stream's
 * (every stream outcome is also a request outcome; gRPC has no code for
 * core's `rejected` or `timeout`).
 */
export function outcomeOf(code: number): Outcome {
  return streamOutcomeOf(code);
}
