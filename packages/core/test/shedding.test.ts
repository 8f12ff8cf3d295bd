import { afterEach, describe, expect, it } from 'vitest';
import { QueueFullError, type AlertEvent, type Ticket } from '../src/index';
import { createRequestGate } from '../src/signals';
import type { TestMonitor } from '../../../test/support/monitor';
import { setup } from './helpers';

let t: TestMonitor | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

interface Trace {
  /** Alerts and 503s in the order they happened. */
  log: string[];
  first503: number;
  firstCritical: number;
  /** 503s written while no CRITICAL level was announced. */
  unannounced: number;
  shed: number;
  alerts: AlertEvent[];
}

/**
 * Closed-loop users against a queue of 4 slots (20 ms per request,
 * capacity 16) through core's request gate with shedding on, in simulated
 * milliseconds with a detector tick every second: 2 users until `stepAt`,
 * then 40. A shed user retries after 100 ms.
 */
function stepLoad(stepAt: number): Trace {
  const m = (t = setup({ eventLoop: false }));
  const log: string[] = [];
  m.monitor.onAlert((e) => log.push(`${e.signal}:${e.level}`));
  const gate = createRequestGate(
    m.monitor,
    { queue: { name: 'onnx:matmul-chain', concurrency: 4, capacity: 16 }, shed: true, model: 'mlp' },
    { source: 'sim', queue: 'sim', keys: ['queue', 'shed', 'model', 'autoStart'] },
  );
  const start = m.now();
  const users: number[] = [0, 0]; // next arrival (ms from start) per user
  const waiting: { ticket: Ticket; user: number }[] = [];
  const running: { ticket: Ticket; user: number; endAt: number }[] = [];
  let first503 = Number.NaN;
  let unannounced = 0;
  let shed = 0;
  for (let ms = 0; ms < 12_000; ms++) {
    m.set(start + ms);
    if (ms === stepAt) while (users.length < 40) users.push(ms);
    for (let i = running.length - 1; i >= 0; i--) {
      const r = running[i]!;
      if (r.endAt > ms) continue;
      r.ticket.end('completed');
      running.splice(i, 1);
      users[r.user] = ms;
    }
    for (const [user, at] of users.entries()) {
      if (at !== ms) continue;
      if (gate.shed('mlp') !== undefined) {
        shed++;
        log.push('503');
        if (Number.isNaN(first503)) first503 = ms;
        if (!m.monitor.snapshot().active.some((a) => a.level === 'critical')) unannounced++;
        users[user] = ms + 100;
      } else {
        waiting.push({ ticket: gate.enqueue('mlp'), user });
        users[user] = Number.POSITIVE_INFINITY;
      }
    }
    while (running.length < 4 && waiting.length > 0) {
      const next = waiting.shift()!;
      next.ticket.start();
      running.push({ ...next, endAt: ms + 20 });
    }
    if (ms % 1000 === 999) m.monitor.tick();
  }
  const critical = m.alerts.find((a) => a.level === 'critical');
  return {
    log,
    first503,
    firstCritical: critical ? critical.at - start : Number.NaN,
    unannounced,
    shed,
    alerts: m.alerts,
  };
}

describe('shedding and alerts agree', () => {
  it('a step from 2 to 40 users, 10 runs at different phases to the tick: the CRITICAL event comes at or before the first 503', () => {
    for (let run = 0; run < 10; run++) {
      const stepAt = 4000 + run * 97;
      const trace = stepLoad(stepAt);
      const where = `run ${run}: ${trace.log.slice(0, 6).join(' ')}`;
      expect(trace.shed, where).toBeGreaterThan(0);
      expect(trace.firstCritical, where).toBeLessThanOrEqual(trace.first503);
      expect(trace.log.indexOf('queue_occupancy:critical'), where).toBeLessThan(trace.log.indexOf('503'));
      expect(trace.unannounced, where).toBe(0);
      // Nothing was shed before the step, and the announcement names the queue.
      expect(trace.first503, where).toBeGreaterThanOrEqual(stepAt);
      const critical = trace.alerts.find((a) => a.level === 'critical')!;
      expect(critical.message, where).toMatch(
        /^queue_occupancy CRITICAL on queue "onnx:matmul-chain": \d+ waiting \+ \d+ in flight of capacity 16 \(\d+ %\); admission sheds/,
      );
      t?.close();
      t = undefined;
    }
  });

  it('the announcement happens once per episode, not once per shed request', () => {
    const trace = stepLoad(3000);
    expect(trace.shed).toBeGreaterThan(100);
    const occupancyCritical = trace.alerts.filter((a) => a.signal === 'queue_occupancy' && a.level === 'critical');
    // Raised at the first shed; the ticks keep it while the queue stays full.
    expect(occupancyCritical.length).toBeLessThan(trace.shed / 10);
  });

  it('run() refusing a request past maxWaiting announces the CRITICAL occupancy first', async () => {
    const m = (t = setup({ eventLoop: false }));
    const log: string[] = [];
    m.monitor.onAlert((e) => log.push(`${e.signal}:${e.level}`));
    const queue = m.monitor.queue('gen', { concurrency: 1, maxWaiting: 4 });
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    const runs = Array.from({ length: 5 }, () => queue.run(() => held));
    const refused = await queue
      .run(() => undefined)
      .catch((error: unknown) => {
        log.push('refused');
        return error;
      });
    expect(refused).toBeInstanceOf(QueueFullError);
    // Announced by the requests that crossed each bound as they arrived (4 and 5 of capacity 5).
    expect(log).toEqual(['queue_occupancy:warn', 'queue_occupancy:critical', 'refused']);
    release();
    await Promise.all(runs);
  });
});
