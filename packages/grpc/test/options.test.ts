import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS } from '@infersignal/core';
import { UNKNOWN_MODEL } from '../../core/src/names';
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { callTicket, createServerInterceptor, instrumentService } from '../src/index';
import { callUnary, Inference, MODES, setupMonitor, startServer } from './helpers';

const open: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
});

function monitorEnv() {
  const env = setupMonitor();
  open.push(env);
  return env;
}

function configError(fn: () => unknown): InferSignalConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InferSignalConfigError);
    return error as InferSignalConfigError;
  }
  throw new Error('expected a config error');
}

describe('options', () => {
  it('bad options throw at creation, naming the field', () => {
    const { monitor } = monitorEnv();
    const impl = {};
    const service = Inference.service;
    expect(configError(() => instrumentService(monitor, service, impl, { queueName: 'x' } as never)).field).toBe(
      'options.queueName',
    );
    expect(
      configError(() => instrumentService(monitor, service, impl, { shedStatus: 'INTERNAL' as never })).field,
    ).toBe('options.shedStatus');
    expect(configError(() => instrumentService(monitor, service, impl, { queue: { capacity: 0 } })).field).toBe(
      'options.queue.capacity',
    );
    expect(configError(() => instrumentService(monitor, service, impl, { queue: { concurrency: 1.5 } })).field).toBe(
      'options.queue.concurrency',
    );
    // The flat queue settings of before are unknown keys now: refused, named.
    expect(configError(() => instrumentService(monitor, service, impl, { capacity: 4 } as never)).field).toBe(
      'options.capacity',
    );
    expect(configError(() => instrumentService(monitor, service, impl, { queue: '' })).field).toBe('options.queue');
    expect(configError(() => instrumentService(monitor, service, impl, { model: 5 as never })).field).toBe(
      'options.model',
    );
    expect(configError(() => createServerInterceptor(monitor, grpc, { shed: 'yes' as never })).field).toBe(
      'options.shed',
    );
    monitor.queue('small', { capacity: 2 });
    expect(
      configError(() => instrumentService(monitor, service, impl, { queue: { name: 'small', capacity: 4 } })).message,
    ).toContain('already exists with capacity 2');
    expect(
      configError(() =>
        instrumentService(monitor, service, impl, { queue: { name: 'small', capacity: 2, concurrency: 2 } }),
      ).field,
    ).toBe('options.queue.concurrency');
    // Same settings on an existing queue are fine (one queue for several services).
    expect(() => instrumentService(monitor, service, impl, { queue: { name: 'small', capacity: 2 } })).not.toThrow();
    expect(() => createServerInterceptor(monitor, {} as never)).toThrow(/needs the @grpc\/grpc-js module/);
  });

  it('keeps the implementation keys as written (camelCase originalName too) and leaves missing methods out', () => {
    const { monitor } = monitorEnv();
    const infer = () => {};
    const wrapped = instrumentService(monitor, Inference.service, { infer, Generate: () => {} }) as Record<
      string,
      unknown
    >;
    expect(Object.keys(wrapped).sort()).toEqual(['Generate', 'infer']);
    expect(wrapped.infer).not.toBe(infer);
  });
});

describe.each(MODES)('%s with autoStart: false', (mode) => {
  it('callTicket(call) lets the handler queue the work: the queue wait is real', async () => {
    const env = monitorEnv();
    const tracker = env.monitor.queue('gpu', { capacity: 8, concurrency: 1 });
    // The first call holds the single slot until the second has arrived, and 200 ms more: however late the
    // second call reaches the server (a busy machine), it waits those 200 ms at least (a timer may fire a few
    // ms early against the clock core reads, hence the 150 ms below).
    let handlers = 0;
    let secondArrived!: () => void;
    const bothArrived = new Promise<void>((resolve) => (secondArrived = resolve));
    const started = await startServer(
      mode,
      env.monitor,
      {
        Infer(call: grpc.ServerUnaryCall<any, any>, callback: grpc.sendUnaryData<any>) {
          const ticket = callTicket(call);
          expect(ticket?.started).toBe(false);
          if (++handlers === 2) secondArrived();
          tracker
            .run(() => bothArrived.then(() => new Promise((resolve) => setTimeout(resolve, 200))), { ticket })
            .then(
              () => callback(null, { output: 'ok' }),
              (error) => callback(error),
            );
        },
      },
      { queue: tracker, autoStart: false },
    );
    open.push(started);
    const [a, b] = await Promise.all([
      callUnary(started.client, 'Infer', { prompt: 'a' }),
      callUnary(started.client, 'Infer', { prompt: 'b' }),
    ]);
    expect([a.error, b.error]).toEqual([null, null]);

    const metrics = await env.collect();
    const [wait] = metrics.points<Histogram>(METRICS.queueWait.name, {
      [ATTR.queue]: 'gpu',
      [ATTR.model]: UNKNOWN_MODEL,
    });
    expect(wait.value.count).toBe(2);
    // The second call waited for the first one's 200 ms on the single slot; the first did not wait.
    expect(wait.value.max).toBeGreaterThanOrEqual(0.15);
    expect(wait.value.min).toBeLessThan(0.15);
    expect(env.monitor.snapshot().queues.gpu).toMatchObject({ waiting: 0, inFlight: 0, completed: 2 });
  });
});
