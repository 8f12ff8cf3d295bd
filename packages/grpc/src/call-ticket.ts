import type { Ticket } from '@infersignal/core';
import type { Metadata } from '@grpc/grpc-js';

/**
 * Tickets of calls instrumented with `autoStart: false`, keyed by the
 * request Metadata object. grpc-js hands the handler the same Metadata
 * instance that interceptors see, so the key works for both entry points;
 * the WeakMap lets a finished call's entry go with it.
 */
const tickets = new WeakMap<Metadata, Ticket>();

export function rememberTicket(metadata: Metadata | undefined, ticket: Ticket | undefined): void {
  if (metadata !== undefined && ticket !== undefined) tickets.set(metadata, ticket);
}

/**
 * The core queue ticket of a call instrumented with `autoStart: false`, for
 * the handler to start when inference really begins, e.g.
 * `tracker.run(fn, { ticket: callTicket(call) })`. Undefined for calls
 * without one (autoStart on, shed, or not instrumented).
 */
export function callTicket(call: { readonly metadata: Metadata }): Ticket | undefined {
  return tickets.get(call.metadata);
}
