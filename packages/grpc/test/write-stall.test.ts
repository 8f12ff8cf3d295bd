/**
 * A gRPC client that keeps a server-streaming call open and stops reading:
 * a real grpc-js client on a real server (127.0.0.1, port 0) pauses its
 * response stream after the first message. HTTP/2 flow control then holds
 * the server's messages, the call's buffer fills and the handler waits for
 * `drain`; once no message has been taken for the write-stall timeout the
 * call is counted CANCELLED with `error.type` write_stall, the handler sees
 * `cancelled`, and nothing stays in flight. Every case runs through both
 * wirings, `instrumentService` and `createServerInterceptor`.
 */
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS, createMonitor } from '@infersignal/core';
import { createServerInterceptor, instrumentService } from '../src/index';
import { Inference, MODES, type Mode, setupMonitor, startServer, until, type Started } from './helpers';
import type { TestMonitor } from '../../../test/support/monitor';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const TEXT = 'x'.repeat(64 * 1024);

interface HandlerResult {
  /** performance.now() of the first write that found the buffer full. */
  fullAt: number | null;
  /**
   * With `timeTaken`: the longest time in which no write callback ran (no message went out), between two of
   * them or from the last one to the handler's end.
   */
  longestQuietMs: number | null;
  /** performance.now() when the handler stopped writing. */
  doneAt: number;
  messages: number;
  /** How the handler's wait for room ended: the call was cancelled, or it wrote everything. */
  ended: 'cancelled' | 'completed';
}

/**
 * Generate writes `tokens` 64 KiB tokens, `gapMs` apart, waiting for `drain` (or the call's cancel)
 * whenever a write finds the buffer full, then ends the call unless it was cancelled. With `timeTaken`
 * each write has a callback that notes when it ran.
 */
function streamingImplementation(
  tokens: number,
  gapMs: number,
  timeTaken: boolean,
  results: Promise<HandlerResult>[],
): grpc.UntypedServiceImplementation {
  return {
    Generate(call: grpc.ServerWritableStream<unknown, unknown>) {
      results.push(
        (async (): Promise<HandlerResult> => {
          let fullAt: number | null = null;
          let lastTakenAt: number | null = null;
          let longestQuietMs: number | null = null;
          const quiet = (now: number) => {
            if (lastTakenAt !== null) longestQuietMs = Math.max(longestQuietMs ?? 0, now - lastTakenAt);
          };
          // Only writes that went out: once the call is reset, the ones still buffered are called back with an error.
          const taken = timeTaken
            ? (error?: Error | null) => {
                if (error) return;
                const now = performance.now();
                quiet(now);
                lastTakenAt = now;
              }
            : undefined;
          let messages = 0;
          for (let i = 0; i < tokens; i++) {
            if (call.cancelled) break;
            if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
            messages++;
            if (!call.write({ index: i, text: TEXT }, taken)) {
              fullAt ??= performance.now();
              const room = await new Promise<boolean>((resolve) => {
                const onDrain = () => {
                  call.off('cancelled', onCancel);
                  resolve(true);
                };
                const onCancel = () => {
                  call.off('drain', onDrain);
                  resolve(false);
                };
                call.once('drain', onDrain);
                call.once('cancelled', onCancel);
              });
              if (!room) break;
            }
          }
          const ended = call.cancelled ? 'cancelled' : 'completed';
          if (ended === 'completed') call.end();
          const doneAt = performance.now();
          quiet(doneAt);
          return { fullAt, longestQuietMs, doneAt, messages, ended };
        })(),
      );
    },
  };
}

async function start(
  mode: Mode,
  t: TestMonitor,
  tokens: number,
  writeStallTimeoutMs: number,
  { gapMs = 0, timeTaken = false } = {},
) {
  const results: Promise<HandlerResult>[] = [];
  const started: Started = await startServer(
    mode,
    t.monitor,
    streamingImplementation(tokens, gapMs, timeTaken, results),
    { model: 'tiny', queue: { name: 'grpc', capacity: 8, concurrency: 2 }, writeStallTimeoutMs },
  );
  cleanup.push(() => started.close());
  return { ...started, results };
}

async function streams(t: TestMonitor, attributes: Record<string, string>): Promise<number> {
  return (await t.collect()).sum(METRICS.streams.name, { [ATTR.model]: 'tiny', ...attributes });
}

/** The client's final status, bounded only to catch a hang. */
function statusOf(call: grpc.ClientReadableStream<unknown>): Promise<grpc.StatusObject> {
  return new Promise((resolve) => {
    call.on('error', () => {}); // the status carries the code
    call.on('status', resolve);
  });
}

describe.each(MODES)('gRPC write stall (%s)', (mode) => {
  it('a client that stops reading is cut off after the timeout: CANCELLED, write_stall, nothing in flight', async () => {
    const t = setupMonitor();
    cleanup.push(() => t.close());
    const writeStallTimeoutMs = 300;
    const { client, results } = await start(mode, t, 10_000, writeStallTimeoutMs, { timeTaken: true });
    const call: grpc.ClientReadableStream<unknown> = client.Generate({ model: 'tiny', prompt: 'hi' });
    const status = statusOf(call);
    let received = 0;
    call.on('data', () => {
      // The first message, then nothing: the client keeps the call open and reads no more.
      if (++received === 1) call.pause();
    });

    await until(() => results.length === 1, 5000);
    const result = await Promise.race([
      results[0],
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the handler still waits')), 20_000)),
    ]);
    expect(result.ended).toBe('cancelled');
    // It filled the buffers first (several 64 KiB messages), and was cut off only after HTTP/2 had taken none of
    // its messages for the timeout (1 ms: the timer's clock against performance.now()). The reset itself may
    // complete the write that waited, so the quiet time is looked for anywhere, not only at the end.
    expect(result.messages).toBeGreaterThan(1);
    expect(result.fullAt).not.toBeNull();
    expect(result.longestQuietMs).toBeGreaterThanOrEqual(writeStallTimeoutMs - 1);

    expect(await streams(t, { [ATTR.outcome]: 'cancelled', [ATTR.errorType]: 'write_stall' })).toBe(1);
    expect(await streams(t, { [ATTR.outcome]: 'completed' })).toBe(0);
    const calls = (await t.collect()).points<{ count: number }>(METRICS.rpcCallDuration.name);
    expect(calls.map((p) => [p.attributes[ATTR.rpcResponseStatusCode], p.value.count])).toEqual([['CANCELLED', 1]]);
    expect(t.monitor.snapshot().queues.grpc).toMatchObject({ inFlight: 0, waiting: 0 });
    // The client learns the call is over once it reads again.
    call.resume();
    expect((await status).code).toBe(grpc.status.CANCELLED);
  }, 30_000);

  it('a handler that ends while a stalled client holds its last messages: the call is cut off too', async () => {
    const t = setupMonitor();
    cleanup.push(() => t.close());
    // 5 ms apart, each message leaves the call's buffer until the client's buffer and the flow-control window
    // are full (about 17 of them); the last ones wait in the call's buffer, fewer than fill it, so no write
    // returns false, and the handler ends the call.
    const { client, results } = await start(mode, t, 30, 300, { gapMs: 5 });
    const call: grpc.ClientReadableStream<unknown> = client.Generate({ model: 'tiny', prompt: 'hi' });
    const status = statusOf(call);
    let received = 0;
    call.on('data', () => {
      if (++received === 1) call.pause();
    });
    await until(() => results.length === 1, 5000);
    const result = await results[0];
    expect(result.fullAt).toBeNull();
    expect(result.ended).toBe('completed');
    await until(() => t.monitor.snapshot().queues.grpc.inFlight === 0, 10_000);
    expect(await streams(t, { [ATTR.outcome]: 'cancelled', [ATTR.errorType]: 'write_stall' })).toBe(1);
    call.resume();
    expect((await status).code).toBe(grpc.status.CANCELLED);
    expect(received).toBeLessThan(30);
  }, 30_000);

  it('a client that pauses for less than the timeout and reads on gets the whole stream: OK', async () => {
    const t = setupMonitor();
    cleanup.push(() => t.close());
    const tokens = 64; // 4 MiB: more than the flow-control windows hold, so the handler does wait for drain.
    const { client, results } = await start(mode, t, tokens, 10_000);
    const call: grpc.ClientReadableStream<unknown> = client.Generate({ model: 'tiny', prompt: 'hi' });
    const status = statusOf(call);
    let received = 0;
    call.on('data', () => {
      if (++received === 1) {
        call.pause();
        setTimeout(() => call.resume(), 100);
      }
    });
    expect((await status).code).toBe(grpc.status.OK);
    expect(received).toBe(tokens);
    const result = await results[0];
    expect(result.ended).toBe('completed');
    expect(result.fullAt).not.toBeNull();
    await until(() => t.monitor.snapshot().queues.grpc.completed === 1, 5000);
    expect(await streams(t, { [ATTR.outcome]: 'completed' })).toBe(1);
    expect(await streams(t, { [ATTR.errorType]: 'write_stall' })).toBe(0);
  }, 30_000);

  it('a client that reads slowly but steadily is never cut off, though the stream lasts longer than the timeout', async () => {
    const t = setupMonitor();
    cleanup.push(() => t.close());
    // 128 × 64 KiB read 40 ms apart: the handler is held back by flow control for about 5 s, but HTTP/2
    // takes a message every few tens of ms, far inside the 3 s timeout (room for a process a busy machine
    // pauses for a second or two).
    const writeStallTimeoutMs = 3000;
    const tokens = 128;
    const { client, results } = await start(mode, t, tokens, writeStallTimeoutMs);
    const call: grpc.ClientReadableStream<unknown> = client.Generate({ model: 'tiny', prompt: 'hi' });
    const status = statusOf(call);
    let received = 0;
    call.on('data', () => {
      received++;
      call.pause();
      setTimeout(() => call.resume(), 40);
    });
    expect((await status).code).toBe(grpc.status.OK);
    // The status can come before the client has read what it holds.
    await until(() => received === tokens, 20_000);
    const result = await results[0];
    expect(result.ended).toBe('completed');
    expect(result.fullAt).not.toBeNull();
    expect(result.doneAt - result.fullAt!).toBeGreaterThan(writeStallTimeoutMs);
    await until(() => t.monitor.snapshot().queues.grpc.completed === 1, 5000);
    expect(await streams(t, { [ATTR.outcome]: 'completed' })).toBe(1);
    expect(await streams(t, { [ATTR.errorType]: 'write_stall' })).toBe(0);
  }, 30_000);
});

describe('gRPC write stall options', () => {
  it.each(MODES)('refuses a bad timeout, naming the field (%s)', (mode) => {
    const monitor = createMonitor({ detectorIntervalMs: 0, traces: false, eventLoop: false });
    cleanup.push(() => monitor.close());
    const field = (writeStallTimeoutMs: unknown) => {
      const options = { writeStallTimeoutMs: writeStallTimeoutMs as number };
      try {
        if (mode === 'interceptor') createServerInterceptor(monitor, grpc, options);
        else instrumentService(monitor, Inference.service, {}, options);
      } catch (error) {
        expect(error).toBeInstanceOf(InferSignalConfigError);
        return (error as InferSignalConfigError).field;
      }
      return undefined;
    };
    expect(field(-1)).toBe('options.writeStallTimeoutMs');
    expect(field(Number.NaN)).toBe('options.writeStallTimeoutMs');
    expect(field('5')).toBe('options.writeStallTimeoutMs');
    expect(field(2 ** 31)).toBe('options.writeStallTimeoutMs');
    expect(field(0)).toBeUndefined();
    expect(field(1000)).toBeUndefined();
  });
});
