import type { Histogram } from '@opentelemetry/sdk-metrics';
import { describe, expect, it } from 'vitest';
import { ATTR, METRICS, QueueFullError, type QueueTracker } from '../src/index';
import { setup } from './helpers';

/** `n` requests one after another, each started after waiting `waitMs` on the test clock. */
function serveAfter(t: ReturnType<typeof setup>, queue: QueueTracker, waitMs: number, n: number): void {
  for (let i = 0; i < n; i++) {
    const ticket = queue.enqueue();
    t.advance(waitMs);
    ticket.start();
    ticket.end();
  }
}

describe('queue wait', () => {
  it('records 100 tickets with known waits: histogram count and sum are exact', async () => {
    const t = setup();
    const queue = t.monitor.queue('gen', { capacity: 200 });
    let expectedWait = 0;
    let expectedInference = 0;
    for (let i = 0; i < 100; i++) {
      const ticket = queue.enqueue('llama');
      const wait = (i % 10) * 10; // 0..90 ms
      t.advance(wait);
      ticket.start();
      t.advance(5);
      ticket.end('completed');
      expectedWait += wait / 1000;
      expectedInference += 0.005;
    }
    const metrics = await t.collect();
    const [wait] = metrics.points<Histogram>(METRICS.queueWait.name, { [ATTR.model]: 'llama', [ATTR.queue]: 'gen' });
    expect(wait.value.count).toBe(100);
    expect(wait.value.sum).toBeCloseTo(expectedWait, 9);
    expect(wait.value.max).toBeCloseTo(0.09, 9);
    const [inference] = metrics.points<Histogram>(METRICS.inferenceDuration.name, { [ATTR.outcome]: 'completed' });
    expect(inference.value.count).toBe(100);
    expect(inference.value.sum).toBeCloseTo(expectedInference, 9);
    expect(metrics.sum(METRICS.requests.name, { [ATTR.outcome]: 'completed' })).toBe(100);
  });

  it('tracks waiting / in-flight depth and occupancy, exported as gauges', async () => {
    const t = setup();
    const queue = t.monitor.queue('q', { capacity: 10 });
    const tickets = Array.from({ length: 6 }, () => queue.enqueue());
    tickets[0].start();
    tickets[1].start();
    expect(queue.waiting).toBe(4);
    expect(queue.inFlight).toBe(2);
    const metrics = await t.collect();
    expect(metrics.points<number>(METRICS.queueWaiting.name)[0].value).toBe(4);
    expect(metrics.points<number>(METRICS.queueInFlight.name)[0].value).toBe(2);
    expect(metrics.points<number>(METRICS.queueOccupancy.name)[0].value).toBeCloseTo(0.6, 9);
    expect(t.monitor.snapshot().queues.q.level).toBe('ok');
  });

  it('occupancy 0.9 is CRITICAL, 0.75 WARN, each announced by the enqueue that crosses it; admit() sheds only at CRITICAL with a Retry-After', () => {
    const t = setup({ thresholds: { queue: { retryAfterSeconds: 2 } } });
    const queue = t.monitor.queue('q', { capacity: 20 });
    const tickets = Array.from({ length: 14 }, () => queue.enqueue());
    expect(t.alerts).toHaveLength(0); // 70 %: not over the WARN bound
    tickets.push(queue.enqueue());
    // The 15th request (75 %) announces the WARN as it arrives, with no tick.
    expect(t.alerts.map((a) => `${a.signal}:${a.level}`)).toEqual(['queue_occupancy:warn']);
    expect(t.alerts[0]).toMatchObject({ value: 0.75, threshold: 0.7, labels: { queue: 'q' } });
    expect(queue.level()).toBe('warn');
    expect(queue.admit()).toEqual({ admit: true, level: 'warn', retryAfterSeconds: 2 });
    tickets.push(queue.enqueue(), queue.enqueue(), queue.enqueue());
    expect(queue.level()).toBe('critical');
    expect(queue.admit().admit).toBe(false);
    t.monitor.tick();
    const occupancy = t.alerts.filter((a) => a.signal === 'queue_occupancy');
    expect(occupancy.map((a) => a.level)).toEqual(['warn', 'critical']);
    expect(occupancy[1]).toMatchObject({ value: 0.9, threshold: 0.85, labels: { queue: 'q' } });
    expect(t.alerts.map((a) => `${a.signal}:${a.level}`)).toEqual([
      'queue_occupancy:warn',
      'queue_occupancy:critical',
      'queue_backpressure:critical',
    ]);
    for (const ticket of tickets) ticket.end('cancelled');
    t.monitor.tick();
    // The episode lasts until none was turned away for queue.shedHoldSeconds (3 s); an empty queue admits within it.
    expect(queue.admit()).toMatchObject({ admit: true, level: 'critical' });
    expect(queue.level()).toBe('critical');
    t.advance(3000);
    t.monitor.tick();
    expect(queue.level()).toBe('ok');
    expect(queue.admit().admit).toBe(true);
    t.advance(10_000);
    t.monitor.tick();
    expect(t.alerts.map((a) => `${a.signal}:${a.level}`)).toEqual([
      'queue_occupancy:warn',
      'queue_occupancy:critical',
      'queue_backpressure:critical',
      // CRITICAL falls to WARN at once, which stays for queue.keepFiringSeconds.
      'queue_occupancy:warn',
      'queue_backpressure:ok',
      'queue_occupancy:ok',
    ]);
  });

  it('P95 queue wait over the window drives WARN at 200 ms and CRITICAL at 500 ms', () => {
    const t = setup();
    const queue = t.monitor.queue('q', { capacity: 1000 });
    queue.enqueue(); // a backlog: one request keeps waiting while we judge
    const feed = (waitMs: number, n: number) => serveAfter(t, queue, waitMs, n);
    feed(50, 100);
    t.monitor.tick();
    expect(queue.level()).toBe('ok');
    feed(300, 100); // P95 of the window now 300 ms
    t.monitor.tick();
    expect(queue.level()).toBe('warn');
    feed(800, 300);
    t.monitor.tick();
    expect(queue.level()).toBe('critical');
    expect(t.alerts.filter((a) => a.signal === 'queue_wait').map((a) => a.level)).toEqual(['warn', 'critical']);
    // The window is 30 s: after it passes with fast requests only, the level recovers. CRITICAL at once;
    // the WARN once the wait stayed low for queue.keepFiringSeconds (10 s).
    t.advance(31_000);
    feed(10, 50);
    t.monitor.tick();
    expect(queue.level()).toBe('warn');
    t.advance(9_000);
    feed(10, 50);
    t.monitor.tick();
    expect(queue.level()).toBe('warn');
    t.advance(500);
    feed(10, 50);
    t.monitor.tick();
    expect(queue.level()).toBe('ok');
    expect(t.alerts.filter((a) => a.signal === 'queue_wait').map((a) => a.level)).toEqual([
      'warn',
      'critical',
      'warn',
      'ok',
    ]);
  });

  it('a WARN stays through a moment the queue drains; one that stays drained resolves after keepFiringSeconds', () => {
    // The queue's age has its own test: here it stays below its bounds.
    const t = setup({ thresholds: { queue: { keepFiringSeconds: 5, ageWarnSeconds: 10, ageCriticalSeconds: 20 } } });
    const queue = t.monitor.queue('q', { capacity: 1000 });
    const serve = (waitMs: number, n: number) => serveAfter(t, queue, waitMs, n);
    const backlog = queue.enqueue();
    serve(300, 4); // P95 300 ms while a request waits
    t.monitor.tick();
    expect(queue.level()).toBe('warn');
    backlog.end('cancelled'); // drained for a moment: the newest waits are short
    serve(20, 10);
    t.monitor.tick();
    expect(queue.level()).toBe('ok'); // nothing waits: admission and readiness read ok
    expect(t.monitor.snapshot().active.map((a) => `${a.signal}:${a.level}`)).toEqual(['queue_wait:warn']);
    const again = queue.enqueue(); // waiting again 3 s later: the window still holds the 300 ms waits
    t.advance(3000);
    t.monitor.tick();
    expect(queue.level()).toBe('warn');
    again.end('cancelled');
    serve(20, 10);
    t.monitor.tick(); // drained: the keep starts again
    t.advance(4900);
    t.monitor.tick();
    expect(t.monitor.snapshot().active).toHaveLength(1);
    t.advance(100);
    t.monitor.tick();
    expect(t.monitor.snapshot().active).toHaveLength(0);
    // One warning, one resolution: no flap.
    expect(t.alerts.filter((a) => a.signal === 'queue_wait').map((a) => a.level)).toEqual(['warn', 'ok']);
  });

  it('a burst the queue is still draining raises no level once its newest requests wait briefly again', () => {
    // Two identical queues with a 2 s hold (the demo's): each takes a burst of 300 ms waits, then
    // keeps one request waiting. Afterwards one serves its newest requests after 40 ms, the other
    // after 300 ms. The window's P95 stays above 200 ms in both for the whole hold.
    const t = setup({ thresholds: { queue: { forSeconds: 2 } } });
    const draining = t.monitor.queue('draining', { capacity: 1000 });
    const overloaded = t.monitor.queue('overloaded', { capacity: 1000 });
    const backlog = [draining.enqueue(), overloaded.enqueue()];
    const serve = (queue: QueueTracker, waitMs: number, n: number) => serveAfter(t, queue, waitMs, n);
    serve(draining, 300, 10);
    serve(overloaded, 300, 2);
    t.monitor.tick(); // both: window and newest above 200 ms, the hold starts
    for (let second = 0; second < 4; second++) {
      serve(draining, 40, 5);
      serve(overloaded, 300, 2);
      t.monitor.tick();
      expect(t.monitor.snapshot().queues.draining.waitQuantileSeconds).toBeGreaterThan(0.2);
    }
    expect(draining.level()).toBe('ok');
    expect(overloaded.level()).toBe('warn');
    expect(t.alerts.filter((a) => a.signal === 'queue_wait').map((a) => a.labels.queue)).toEqual(['overloaded']);
    // Nothing started since the last tick while requests wait: no new evidence, the window decides.
    const stalled = t.monitor.queue('stalled', { capacity: 1000 });
    const stuck = stalled.enqueue();
    serve(stalled, 300, 3);
    t.monitor.tick();
    t.advance(2000);
    t.monitor.tick();
    expect(stalled.level()).toBe('warn');
    for (const ticket of [...backlog, stuck]) ticket.end('cancelled');
  });

  it('a drained queue is not held at CRITICAL by past waits: admission and readiness recover at the first tick after the shedding hold', () => {
    const t = setup();
    const queue = t.monitor.queue('q', { capacity: 1000 });
    const held = queue.enqueue();
    for (let i = 0; i < 50; i++) {
      const ticket = queue.enqueue();
      t.advance(800);
      ticket.start();
      ticket.end();
    }
    t.monitor.tick();
    expect(queue.admit().admit).toBe(false);
    expect(t.monitor.level()).toBe('critical');
    held.end('cancelled'); // the backlog is gone
    // The episode lasts until none was turned away for queue.shedHoldSeconds (3 s) and the wait level left
    // CRITICAL; within it, the drained queue admits (nothing ahead to wait for) and readiness stays failing.
    expect(queue.admit()).toMatchObject({ admit: true, level: 'critical' });
    t.advance(1000);
    t.monitor.tick();
    expect(queue.admit()).toMatchObject({ admit: true, level: 'critical' });
    expect(t.monitor.level()).toBe('critical');
    t.advance(2000);
    t.monitor.tick();
    expect(queue.admit().admit).toBe(true);
    // Readiness fails only at CRITICAL; the WARN stays for queue.keepFiringSeconds.
    expect(t.monitor.level()).toBe('warn');
    t.advance(10_000);
    t.monitor.tick();
    expect(t.monitor.level()).toBe('ok');
    expect(t.alerts.filter((a) => a.signal === 'queue_wait').map((a) => a.level)).toEqual(['critical', 'warn', 'ok']);
    expect(t.alerts.filter((a) => a.signal === 'queue_backpressure').map((a) => a.level)).toEqual(['critical', 'ok']);
    expect(t.alerts.find((a) => a.signal === 'queue_backpressure')?.message).toBe(
      'queue_backpressure CRITICAL on queue "q": admission sheds (queue wait P95 800 ms CRITICAL): it turns away a request that would take the queue past 807 of 1000 or wait more than 450 ms, and serves everything again once it has turned none away for 3 s (queue.shedHoldSeconds) and those levels cleared by their hysteresis',
    );
    // The WARN it fell to says why it is still raised.
    expect(t.alerts.find((a) => a.signal === 'queue_wait' && a.level === 'warn')?.message).toBe(
      'queue_wait WARN on queue "q": queue wait P95 0 ms, back under 200 ms (0 waiting); the warning stays until it has been for 10 s (queue.keepFiringSeconds)',
    );
  });

  it('run() bounds concurrency to N, keeps FIFO order and rejects past maxWaiting', async () => {
    const t = setup({ clock: undefined });
    const queue = t.monitor.queue('fifo', { concurrency: 2, maxWaiting: 5 });
    let running = 0;
    let maxRunning = 0;
    const order: number[] = [];
    const task = (id: number) => async () => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      order.push(id);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return id * 2;
    };
    const results = await Promise.allSettled(Array.from({ length: 9 }, (_, id) => queue.run(task(id))));
    const fulfilled = results
      .filter((r) => r.status === 'fulfilled')
      .map((r) => (r as PromiseFulfilledResult<number>).value);
    const rejected = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
    expect(fulfilled).toEqual([0, 2, 4, 6, 8, 10, 12]);
    expect(rejected).toHaveLength(2);
    expect(rejected[0]).toBeInstanceOf(QueueFullError);
    expect(maxRunning).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const metrics = await t.collect();
    expect(metrics.sum(METRICS.requests.name, { [ATTR.outcome]: 'completed' })).toBe(7);
    expect(metrics.sum(METRICS.requests.name, { [ATTR.outcome]: 'rejected' })).toBe(2);
    expect(queue.inFlight).toBe(0);
    expect(queue.waiting).toBe(0);
  });

  it('run() records a thrown error as outcome error and rethrows it unchanged', async () => {
    const t = setup();
    const queue = t.monitor.queue('q');
    const boom = new Error('model exploded');
    await expect(queue.run(() => Promise.reject(boom))).rejects.toBe(boom);
    const metrics = await t.collect();
    expect(metrics.sum(METRICS.requests.name, { [ATTR.outcome]: 'error' })).toBe(1);
  });

  it('run() with an abort signal removes a waiting request and counts it cancelled', async () => {
    const t = setup({ clock: undefined });
    const queue = t.monitor.queue('q', { concurrency: 1, maxWaiting: 4 });
    let release!: () => void;
    const first = queue.run(() => new Promise<void>((r) => (release = r)));
    const controller = new AbortController();
    const second = queue.run(() => 'never', { signal: controller.signal });
    controller.abort(new Error('client gone'));
    await expect(second).rejects.toThrow('client gone');
    release();
    await first;
    const metrics = await t.collect();
    expect(metrics.sum(METRICS.requests.name, { [ATTR.outcome]: 'cancelled' })).toBe(1);
    expect(metrics.sum(METRICS.requests.name, { [ATTR.outcome]: 'completed' })).toBe(1);
  });

  it('ends each ticket once: a second end() and a start() after end() change nothing', async () => {
    const t = setup();
    const queue = t.monitor.queue('q');
    const ticket = queue.enqueue();
    ticket.start();
    ticket.end('error');
    ticket.end('cancelled');
    ticket.start();
    const metrics = await t.collect();
    expect(metrics.sum(METRICS.requests.name)).toBe(1);
    expect(metrics.sum(METRICS.requests.name, { [ATTR.outcome]: 'error' })).toBe(1);
    expect(queue.inFlight).toBe(0);
  });

  it('caps model labels: a flood of names folds into _other', async () => {
    const t = setup({ maxModels: 5 });
    const queue = t.monitor.queue('q', { capacity: 100_000 });
    for (let i = 0; i < 1000; i++) queue.enqueue(`model-${i}`).end('completed');
    const metrics = await t.collect();
    const series = metrics.points<number>(METRICS.requests.name);
    expect(series).toHaveLength(6);
    expect(metrics.sum(METRICS.requests.name, { [ATTR.model]: '_other' })).toBe(995);
    expect(t.monitor.label('model', 'model-999')).toBe('_other');
  });

  it('records runs of one model, names past the cap and sanitized names each under its own label', async () => {
    const t = setup({ maxModels: 3 });
    const queue = t.monitor.queue('q', { capacity: 100 });
    // Runs of one name (the queue reuses the last name's series), a control character (sanitized to `xy`),
    // and names past the cap of 3 (`_other`), interleaved; rejections take the same path.
    const names = ['a', 'a', 'x\u0001y', 'x\u0001y', 'xy', 'b', 'c', 'c', 'a', 'd', 'd', 'b', 'xy'];
    for (const name of names) queue.enqueue(name).end('completed');
    queue.reject('d');
    queue.reject('a');
    const metrics = await t.collect();
    const count = (model: string, outcome: string) =>
      metrics.sum(METRICS.requests.name, { [ATTR.model]: model, [ATTR.outcome]: outcome });
    expect(count('a', 'completed')).toBe(3);
    expect(count('xy', 'completed')).toBe(4);
    expect(count('b', 'completed')).toBe(2);
    expect(count('_other', 'completed')).toBe(4);
    expect(count('_other', 'rejected')).toBe(1);
    expect(count('a', 'rejected')).toBe(1);
    expect(metrics.points<number>(METRICS.requests.name).map((p) => p.attributes[ATTR.model])).not.toContain('c');
  });

  it('a clock going backwards drops the sample and counts it, never records a negative duration', async () => {
    const t = setup();
    const queue = t.monitor.queue('q');
    const ticket = queue.enqueue();
    t.advance(-500);
    ticket.start();
    ticket.end();
    const metrics = await t.collect();
    expect(metrics.points<Histogram>(METRICS.queueWait.name)).toHaveLength(0);
    expect(metrics.sum(METRICS.internalErrors.name, { [ATTR.errorSource]: 'clock' })).toBeGreaterThanOrEqual(1);
    expect(t.warnings.filter((w) => w.includes('clock'))).toHaveLength(1);
  });
});
