/**
 * The fidelity suite (and the demo) start a scenario only from a calm
 * server. A calibration can leave a queue other than `infer` near its
 * capacity bound with no signal raised yet; a scenario started then saw
 * that queue's capacity WARN 0.4 s in, a false alert of the harness's
 * making (in the stream-drops scenario). Calm means every queue is idle enough.
 */
import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { createMonitor } from '@infersignal/core';
import { readinessHandler } from '@infersignal/fastify';
import { FIDELITY_THRESHOLDS, waitForCalm } from '../fidelity/suite';

describe('waitForCalm (fidelity harness)', () => {
  let now = 0;
  const monitor = createMonitor({
    exportMode: 'producer',
    clock: () => now,
    detectorIntervalMs: 0,
    eventLoop: false,
    thresholds: FIDELITY_THRESHOLDS,
  });
  const app = Fastify();
  app.get('/healthz/ready', readinessHandler(monitor));
  afterAll(async () => {
    await app.close();
    await monitor.close();
  });

  /** `seconds` of traffic on one queue at `rate`/s, each request served at once for `serviceMs`, a tick a second. */
  function drive(queueName: string, rate: number, serviceMs: number, seconds: number): void {
    const queue = monitor.queue(queueName);
    for (let second = 0; second < seconds; second++) {
      for (let i = 0; i < rate; i++) {
        const ticket = queue.enqueue('m');
        ticket.start();
        now += serviceMs;
        ticket.end('completed');
        now += 1000 / rate - serviceMs;
      }
      monitor.tick();
    }
  }

  it('is not calm while a queue other than infer is at 0.7 utilization, and is once it has decayed', async () => {
    monitor.queue('infer');
    drive('onnx:matmul-chain', 70, 10, 10);
    const busy = monitor.snapshot().queues?.['onnx:matmul-chain']?.utilization ?? 0;
    expect(busy).toBeGreaterThan(0.6);
    expect(busy).toBeLessThan(0.8); // under the WARN bound: no signal is raised
    expect(monitor.level()).toBe('ok');
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    expect(await waitForCalm(url, 1000)).toBe(false);

    for (let second = 0; second < 30; second++) {
      now += 1000;
      monitor.tick();
    }
    expect(monitor.snapshot().queues?.['onnx:matmul-chain']?.utilization ?? 0).toBeLessThan(0.5);
    expect(await waitForCalm(url, 5000)).toBe(true);
  });
});
