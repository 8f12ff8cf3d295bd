import { afterEach, describe, expect, it } from 'vitest';
import { runBench } from '@infersignal/bench';
import { startQueueServer, type QueueServer } from '../packages/bench/test/helpers';
import { watchCpuWaits } from './support/machine';

let server: QueueServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

/**
 * Predictive capacity against a real server: core's queue helper at concurrency 2
 * with a fixed 20 ms handler (capacity 100 req/s), shedding with 503 at
 * CRITICAL, driven by the open-loop load generator through a ramp past
 * capacity. The forward-looking capacity alert must come first, then the
 * queue-wait WARN, then the first shed or timed-out request.
 */
describe('predictive capacity on a real server', () => {
  it('capacity early warning → queue-wait WARN → first failure, in that order', async (ctx) => {
    server = await startQueueServer({ workMs: 20, concurrency: 2 });
    const monitor = server.monitor;
    const cpuWaits = watchCpuWaits();
    const result = await runBench({
      target: `${server.url}/v1/infer`,
      body: { input: [1] },
      stages: [
        { name: '40/s', rate: 40, durationMs: 3000 },
        { name: '70/s', rate: 70, durationMs: 3000 },
        { name: '90/s', rate: 90, durationMs: 5000 },
        { name: '115/s', rate: 115, durationMs: 4000 },
        { name: '160/s', rate: 160, durationMs: 3000 },
      ],
      timeoutMs: 3000,
      subscribeAlerts: (listener) => monitor.onAlert(listener),
    });
    cpuWaits.stop();
    const first = (signal: string) => result.alerts.find((a) => a.signal === signal && a.level !== 'ok');
    const capacity = first('capacity');
    const queueWait = result.alerts.find((a) => a.signal === 'queue_wait' && a.level === 'warn');
    const failure = result.firstFailure;
    console.log(
      `capacity ${capacity?.level} at ${((capacity?.atMs ?? NaN) / 1000).toFixed(1)} s, queue_wait WARN at ${((queueWait?.atMs ?? NaN) / 1000).toFixed(1)} s, ` +
        `first failure (${failure?.errorClass}) at ${((failure?.atMs ?? NaN) / 1000).toFixed(1)} s; ` +
        result.leadTimes.map((l) => l.text).join('; '),
    );
    expect(capacity, 'capacity alert').toBeDefined();
    expect(queueWait, 'queue_wait WARN').toBeDefined();
    expect(failure, 'a shed or timed-out request').not.toBeNull();
    expect(['shed', 'timeout']).toContain(failure!.errorClass);
    // The order is the load's doing only while the machine runs this process: held off its CPUs for 100 ms
    // (half the 200 ms wait threshold), it piles up the requests of that time in the queue at once.
    if (cpuWaits.longestMs() >= 100) {
      const reason = `the machine held this process off its CPUs for ${cpuWaits.longestMs().toFixed(0)} ms at once`;
      console.warn(`[capacity e2e] skipping the order of the alerts: ${reason}`);
      return ctx.skip(reason);
    }
    expect(capacity!.atMs).toBeLessThan(queueWait!.atMs);
    expect(queueWait!.atMs).toBeLessThan(failure!.atMs);
  }, 60_000);
});
