/**
 * The SSE writer against clients that stop reading: a raw TCP client on a
 * real server (127.0.0.1, port 0) reads the head, then pauses its socket.
 * The server writes 64 KiB events until the socket buffer is full and
 * waits for `drain`; past the stall timeout the writer destroys the
 * response and the request ends `cancelled` — an interrupted stream —
 * with nothing left in flight.
 */
import { createServer, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS, createMonitor } from '@infersignal/core';
import { createHttpTracking, type SseOptions, type SseStream } from '@infersignal/http';
import { createSseStream } from '../src/sse';
import { gate, until } from '../../../test/support/async';
import { testMonitor, type TestMonitor } from '../../../test/support/monitor';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const EVENT = 'x'.repeat(64 * 1024);

interface HandlerResult {
  sse: SseStream;
  /** performance.now() of the first write that found the buffer full. */
  fullAt: number | null;
  /** performance.now() when the handler stopped writing. */
  doneAt: number;
  bytes: number;
  aborted: boolean;
}

/**
 * A server whose one route writes `events` 64 KiB events (or until the stream closes), awaiting
 * `drained()` whenever a write finds the buffer full, then `before` (if given) and end().
 */
async function streamingServer(
  t: TestMonitor,
  sseOptions: SseOptions,
  events = Number.POSITIVE_INFINITY,
  before?: Promise<void>,
) {
  const tracking = createHttpTracking(
    t.monitor,
    { queue: { name: 'sse', capacity: 4 }, model: 'tiny' },
    { source: 'test' },
  );
  const results: Promise<HandlerResult>[] = [];
  const server = createServer((req, res) => {
    const tracked = tracking.open(req, res, '/sse')!;
    results.push(
      tracked.run(async () => {
        const sse = tracked.sse(sseOptions);
        let fullAt: number | null = null;
        let bytes = 0;
        for (let i = 0; i < events && !sse.closed; i++) {
          bytes += EVENT.length;
          if (!sse.send(EVENT)) {
            fullAt ??= performance.now();
            if (!(await sse.drained())) break;
          }
        }
        if (before) await before;
        sse.end();
        return { sse, fullAt, doneAt: performance.now(), bytes, aborted: tracked.signal.aborted };
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { port: (server.address() as AddressInfo).port, results, tracking };
}

/** A raw client: sends the request, then `onData` decides what to do with the socket. */
function rawClient(port: number, onData: (socket: Socket, received: number) => void): Socket {
  const socket = connect(port, '127.0.0.1');
  let received = 0;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.length;
    onData(socket, received);
  });
  socket.on('error', () => {});
  socket.write('GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  cleanup.push(() => socket.destroy());
  return socket;
}

function streamsEnded(t: TestMonitor) {
  return async (outcome: string) =>
    (await t.collect()).sum(METRICS.streams.name, { [ATTR.model]: 'tiny', [ATTR.outcome]: outcome });
}

/** Streams counted with `error.type` write_stall. */
async function writeStalls(t: TestMonitor): Promise<number> {
  return (await t.collect()).sum(METRICS.streams.name, { [ATTR.model]: 'tiny', [ATTR.errorType]: 'write_stall' });
}

describe('SSE write stall', () => {
  it('a client that stops reading is cut off after the stall timeout: cancelled, write_stall, nothing in flight', async () => {
    const t = testMonitor({ eventLoop: false });
    cleanup.push(() => t.close());
    const stallTimeoutMs = 300;
    let stopped = false;
    const { port, results } = await streamingServer(t, { stallTimeoutMs });
    let closedAt: number | null = null;
    // Reads the first chunk (the head and the first events), then nothing.
    const socket = rawClient(port, (s, n) => {
      if (n > 0 && !stopped) {
        stopped = true;
        s.pause();
      }
    });
    socket.on('close', () => (closedAt = performance.now()));

    // Bounded only to catch a hang: the writer must end the stream on its own.
    await until(() => results.length === 1, 5000, 'the request');
    const result = await Promise.race([
      results[0],
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the handler still waits')), 20_000)),
    ]);
    expect(result.sse.endReason).toBe('write_stall');
    expect(result.sse.closed).toBe(true);
    expect(result.aborted).toBe(true);
    // It filled the socket buffers first (several 64 KiB events), then waited at least the timeout.
    expect(result.bytes).toBeGreaterThan(EVENT.length);
    expect(result.fullAt).not.toBeNull();
    expect(result.doneAt - result.fullAt!).toBeGreaterThanOrEqual(stallTimeoutMs - 1);

    const ended = streamsEnded(t);
    expect(await ended('cancelled')).toBe(1);
    expect(await ended('completed')).toBe(0);
    expect(await writeStalls(t)).toBe(1);
    expect(t.monitor.snapshot().queues.sse).toMatchObject({ inFlight: 0, waiting: 0 });
    // The peer sees the connection go once it reads again.
    socket.resume();
    await until(() => closedAt !== null, 10_000, 'the client socket to close');
  }, 30_000);

  it('a client that pauses for less than the timeout and reads on gets the whole stream: completed', async () => {
    const t = testMonitor({ eventLoop: false });
    cleanup.push(() => t.close());
    const events = 64; // 4 MiB: more than the loopback buffers hold, so the writer does wait for drain.
    const { port, results } = await streamingServer(t, { stallTimeoutMs: 10_000 }, events);
    let paused = false;
    let received = 0;
    let ended = false;
    const socket = rawClient(port, (s, n) => {
      received = n;
      if (!paused) {
        paused = true;
        s.pause();
        setTimeout(() => s.resume(), 100);
      }
    });
    socket.on('end', () => (ended = true));
    await until(() => results.length === 1, 5000, 'the request');
    const result = await results[0];
    expect(result.fullAt).not.toBeNull();
    expect(result.sse.endReason).toBeUndefined();
    expect(result.bytes).toBe(events * EVENT.length);
    await until(() => received >= result.bytes, 10_000, 'the client to read the stream');
    socket.end();
    await until(() => ended || socket.destroyed || t.monitor.snapshot().queues.sse.completed === 1, 10_000, 'the end');
    await until(() => t.monitor.snapshot().queues.sse.completed === 1, 10_000, 'the request to be counted');
    expect(await streamsEnded(t)('completed')).toBe(1);
    expect(await streamsEnded(t)('cancelled')).toBe(0);
    expect(await writeStalls(t)).toBe(0);
  }, 30_000);

  it('heartbeats are comment lines written while the handler generates nothing, from the first event on', async () => {
    const t = testMonitor({ eventLoop: false });
    cleanup.push(() => t.close());
    const release = gate();
    const { port, results } = await streamingServer(t, { heartbeatMs: 20 }, 1, release.wait);
    let text = '';
    const socket = rawClient(port, () => {});
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    const beats = () => text.split('\n:\n\n').length - 1;
    await until(() => beats() >= 3, 10_000, 'three heartbeats');
    release.open();
    const result = await results[0];
    expect(result.sse.endReason).toBeUndefined();
    // The event first, then the heartbeats; none before the head.
    expect(text.indexOf(`data: ${EVENT.slice(0, 10)}`)).toBeLessThan(text.indexOf('\n:\n\n'));
    await until(() => t.monitor.snapshot().queues.sse.completed === 1, 10_000, 'the request to be counted');
    expect(await streamsEnded(t)('completed')).toBe(1);
  }, 30_000);

  it('a writer made from a bare ticket counts the stalled stream itself', async () => {
    const t = testMonitor({ eventLoop: false });
    cleanup.push(() => t.close());
    const queue = t.monitor.queue('bare', { capacity: 2 });
    const done = gate();
    let sse: SseStream | undefined;
    const server = createServer((_req, res: ServerResponse) => {
      const ticket = queue.enqueue('tiny');
      ticket.start();
      sse = createSseStream(res, ticket.stream(), { stallTimeoutMs: 200 });
      void (async () => {
        while (sse!.send(EVENT) || (await sse!.drained()));
        ticket.end('cancelled');
        done.open();
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    rawClient((server.address() as AddressInfo).port, (s) => s.pause());
    await Promise.race([
      done.wait,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the writer never gave up')), 20_000)),
    ]);
    expect(sse!.endReason).toBe('write_stall');
    expect(await streamsEnded(t)('cancelled')).toBe(1);
    expect(await writeStalls(t)).toBe(1);
    server.closeAllConnections();
  }, 30_000);

  it('refuses bad timeouts, naming the field', () => {
    const monitor = createMonitor({ detectorIntervalMs: 0, traces: false });
    cleanup.push(() => monitor.close());
    const handle = monitor.queue('q').enqueue('m').stream();
    const res = {} as ServerResponse;
    const field = (options: SseOptions) => {
      try {
        createSseStream(res, handle, options);
      } catch (error) {
        expect(error).toBeInstanceOf(InferSignalConfigError);
        return (error as InferSignalConfigError).field;
      }
      return undefined;
    };
    expect(field({ stallTimeoutMs: -1 })).toBe('options.stallTimeoutMs');
    expect(field({ stallTimeoutMs: Number.NaN })).toBe('options.stallTimeoutMs');
    expect(field({ heartbeatMs: '5' as never })).toBe('options.heartbeatMs');
    expect(field({ stallTimeoutMs: 0, heartbeatMs: 0 })).toBeUndefined();
  });
});
