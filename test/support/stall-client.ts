// A raw TCP client that reads the head of a response and then stops reading, and the checks the adapters share.
import { connect, type Socket } from 'node:net';
import { expect } from 'vitest';
import { ATTR, METRICS, type Monitor } from '@infersignal/core';
import { until } from './async';
import { collect, type TestReader } from './otel';

/** Sends `GET path`, reads the first chunk, then pauses the socket for good. Destroy it when done. */
export function stopReadingAfterHead(port: number, path: string): Socket {
  const socket = connect(port, '127.0.0.1');
  socket.once('data', () => socket.pause());
  socket.on('error', () => {});
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  return socket;
}

/** 64 KiB: a few of these fill the loopback socket buffers. */
export const BIG_EVENT = 'x'.repeat(64 * 1024);

/**
 * After a client stopped reading: the handler's stream ended with
 * `write_stall` (read through `endReason`), the stream and the request were
 * counted `cancelled` once (the stream with `error.type` write_stall), and nothing of queue `queue` is in flight.
 */
export async function expectStalledStream(
  monitor: Monitor,
  reader: TestReader,
  queue: string,
  endReason: () => string | undefined,
): Promise<void> {
  // Bounded only to catch a writer that never gives up.
  await until(() => endReason() !== undefined, 20_000, 'the stalled stream to end');
  expect(endReason()).toBe('write_stall');
  await until(() => monitor.snapshot().queues[queue]?.inFlight === 0, 5000, 'nothing in flight');
  const out = await collect(reader);
  expect(out.sum(METRICS.streams.name, { [ATTR.outcome]: 'cancelled' })).toBe(1);
  expect(out.sum(METRICS.streams.name, { [ATTR.outcome]: 'cancelled', [ATTR.errorType]: 'write_stall' })).toBe(1);
  expect(out.sum(METRICS.streams.name, { [ATTR.outcome]: 'completed' })).toBe(0);
  expect(out.sum(METRICS.requests.name, { [ATTR.outcome]: 'cancelled' })).toBe(1);
}
