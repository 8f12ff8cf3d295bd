import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, type Ticket } from '../src/index';
import { createRequestGate } from '../src/signals';
import { QueueAge } from '../src/signals/queue-age';
import type { TestMonitor } from '../../../test/support/monitor';
import { setup } from './helpers';

let t: TestMonitor | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** A small seeded generator (mulberry32), so every run of a scenario is the same run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

interface Scenario {
  /** Offered load (requests/s) at ms. */
  rate(ms: number): number;
  /** Service time (ms) of a request that starts at ms. */
  service(ms: number): number;
  durationMs: number;
  /** Offset of the 1 s detector tick. */
  phase: number;
  seed: number;
}

interface Run {
  /** Alerts of the queue and 503s, in the order they happened. */
  log: string[];
  first503: number;
  /** 503s written while the queue's shedding (queue_backpressure CRITICAL) was not announced. */
  unannounced: number;
  shed: number;
}

/**
 * Open-loop Poisson arrivals through core's request gate with shedding on,
 * into 4 slots of capacity 16 (20 ms per request: 200 requests/s), in
 * simulated milliseconds with the detector tick once a second.
 */
function simulate(s: Scenario): Run {
  const m = (t = setup({ eventLoop: false }));
  const log: string[] = [];
  m.monitor.onAlert((e) => {
    if (e.labels.queue === 'infer') log.push(`${e.signal}:${e.level}`);
  });
  const gate = createRequestGate(
    m.monitor,
    { queue: { name: 'infer', concurrency: 4, capacity: 16 }, shed: true, model: 'mlp' },
    { source: 'sim', queue: 'sim', keys: ['queue', 'shed', 'model', 'autoStart'] },
  );
  const next = random(s.seed);
  const start = m.now();
  const waiting: Ticket[] = [];
  const running: { ticket: Ticket; endAt: number }[] = [];
  let nextArrival = 0;
  let first503 = Number.NaN;
  let unannounced = 0;
  let shed = 0;
  for (let ms = 0; ms < s.durationMs; ms++) {
    m.set(start + ms);
    for (let i = running.length - 1; i >= 0; i--) {
      if (running[i]!.endAt > ms) continue;
      running[i]!.ticket.end('completed');
      running.splice(i, 1);
    }
    while (nextArrival <= ms) {
      if (gate.shed('mlp') !== undefined) {
        shed++;
        log.push('503');
        if (Number.isNaN(first503)) first503 = ms;
        if (m.monitor.snapshot().active.every((a) => a.signal !== 'queue_backpressure')) unannounced++;
      } else {
        waiting.push(gate.enqueue('mlp'));
      }
      nextArrival += (-Math.log(1 - next()) / s.rate(ms)) * 1000;
    }
    while (running.length < 4 && waiting.length > 0) {
      const ticket = waiting.shift()!;
      ticket.start();
      running.push({ ticket, endAt: ms + s.service(ms) });
    }
    if (ms % 1000 === s.phase) m.monitor.tick();
  }
  return { log, first503, unannounced, shed };
}

/** The first WARN of the queue comes before its first 503, which the announced shedding precedes. */
function expectWarnedFirst(run: Run, where: string): void {
  expect(run.shed, where).toBeGreaterThan(0);
  const firstWarn = run.log.findIndex((entry) => entry.endsWith(':warn'));
  const first503 = run.log.indexOf('503');
  expect(firstWarn, where).toBeGreaterThanOrEqual(0);
  expect(firstWarn, where).toBeLessThan(first503);
  expect(run.log.indexOf('queue_backpressure:critical'), where).toBeLessThan(first503);
  expect(run.unannounced, where).toBe(0);
}

describe('queue levels crossed on the request path', () => {
  it('a step from 0.5x to 2x: the queue WARNs before its first shed, 5 runs at different phases to the tick', () => {
    for (let run = 0; run < 5; run++) {
      const stepAt = 5000 + run * 211;
      const trace = simulate({
        rate: (ms) => (ms < stepAt ? 100 : 400),
        service: () => 20,
        durationMs: 9000,
        phase: (run * 397) % 1000,
        seed: run + 1,
      });
      const where = `run ${run}: ${trace.log.slice(0, 8).join(' ')}`;
      expectWarnedFirst(trace, where);
      // Half load sheds nothing and raises nothing.
      expect(trace.first503, where).toBeGreaterThanOrEqual(stepAt);
      t?.close();
      t = undefined;
    }
  });

  it('capacity halves at 0.6x load (service 20 → 40 ms): the queue WARNs before its first shed, 5 runs', () => {
    for (let run = 0; run < 5; run++) {
      const lossAt = 5000 + run * 173;
      const trace = simulate({
        rate: () => 120,
        service: (ms) => (ms < lossAt ? 20 : 40),
        durationMs: 12_000,
        phase: (run * 331 + 500) % 1000,
        seed: 100 + run,
      });
      const where = `run ${run}: ${trace.log.slice(0, 8).join(' ')}`;
      expectWarnedFirst(trace, where);
      expect(trace.first503, where).toBeGreaterThanOrEqual(lossAt);
      t?.close();
      t = undefined;
    }
  });

  it('queue_age has no hold: with queue.forSeconds 2 the WARN comes on the first arrival past 1 s, not 2 s later', () => {
    const m = (t = setup({ thresholds: { queue: { forSeconds: 2 } } }));
    const queue = m.monitor.queue('held', { capacity: 100 });
    queue.enqueue();
    m.advance(900);
    queue.enqueue();
    expect(m.alerts).toHaveLength(0);
    m.advance(200);
    queue.enqueue();
    // A hold would count the same second again: the oldest request has waited 1.1 s already.
    expect(m.alerts.map((a) => `${a.signal}:${a.level}:${a.value}`)).toEqual(['queue_age:warn:1.1']);
  });

  it('without arrivals the tick still judges: a stuck queue raises queue_age at the tick', () => {
    const m = (t = setup());
    const queue = m.monitor.queue('stuck', { capacity: 100 });
    queue.enqueue();
    m.advance(1100);
    expect(m.alerts).toHaveLength(0);
    m.monitor.tick();
    expect(m.alerts.map((a) => `${a.signal}:${a.level}`)).toEqual(['queue_age:warn']);
    m.advance(4000);
    m.monitor.tick();
    expect(m.alerts.map((a) => `${a.signal}:${a.level}`)).toEqual(['queue_age:warn', 'queue_age:critical']);
    // One request of one slot that has waited 5.1 s is 5.1 s of waiting per slot: under queue_pending_wait's WARN.
    expect(m.alerts[1]!.message).toBe(
      'queue_age CRITICAL on queue "stuck": oldest waiting request 5100 ms > 5000 ms; 1 waiting have waited 5.1 s in all',
    );
  });
});

describe('queue age and the waits still accruing', () => {
  it('stuck requests: the oldest age and the sum of waits are exact at collection, and the WARN comes on the next arrival', async () => {
    const m = (t = setup());
    const queue = m.monitor.queue('gen', { capacity: 100 });
    const t0 = m.now();
    const a = queue.enqueue('llama');
    m.advance(100);
    const b = queue.enqueue('llama');
    m.advance(150);
    const c = queue.enqueue('llama');
    m.set(t0 + 1200);
    const gauges = async () => {
      const metrics = await m.collect();
      const at = { [ATTR.queue]: 'gen' };
      return [
        metrics.points<number>(METRICS.queueWaitOldest.name, at)[0]!.value,
        metrics.points<number>(METRICS.queueWaitPending.name, at)[0]!.value,
      ];
    };
    // Ages 1.2, 1.1 and 0.95 s; no tick has run: the values are read at collection.
    let [oldest, pending] = await gauges();
    expect(oldest).toBeCloseTo(1.2, 9);
    expect(pending).toBeCloseTo(3.25, 9);
    // No tick and no arrival yet: nothing announced although the oldest is past 1 s.
    expect(m.alerts).toHaveLength(0);
    const d = queue.enqueue('llama');
    expect(m.alerts.map((e) => `${e.signal}:${e.level}`)).toEqual(['queue_age:warn']);
    expect(m.alerts[0]).toMatchObject({ value: 1.2, threshold: 1, labels: { queue: 'gen' } });
    // The oldest starts: the age is the next one's; out of order, the middle one leaves next.
    a.start();
    m.advance(500);
    [oldest, pending] = await gauges();
    expect(oldest).toBeCloseTo(1.6, 9);
    expect(pending).toBeCloseTo(1.6 + 1.45 + 0.5, 9);
    b.end('cancelled');
    [oldest, pending] = await gauges();
    expect(oldest).toBeCloseTo(1.45, 9);
    expect(pending).toBeCloseTo(1.45 + 0.5, 9);
    const snapshot = m.monitor.snapshot().queues.gen!;
    expect(snapshot.oldestWaitSeconds).toBeCloseTo(1.45, 9);
    expect(snapshot.pendingWaitSeconds).toBeCloseTo(1.95, 9);
    c.start();
    d.start();
    [oldest, pending] = await gauges();
    expect([oldest, pending]).toEqual([0, 0]);
    for (const ticket of [a, c, d]) ticket.end();
  });

  it('the ring of arrival stamps is bounded: past it the oldest age is still at least the mean age, and exact again once it drains', () => {
    const age = new QueueAge(4, 1000);
    const seqs = [0, 10, 20, 30, 40, 50].map((at) => ({ at: 1000 + at, seq: age.arrive(1000 + at) }));
    expect(seqs.map((s) => s.seq)).toEqual([0, 1, 2, 3, -1, -1]);
    expect(age.oldest(1100)).toBe(100);
    expect(age.total(1100)).toBe(100 + 90 + 80 + 70 + 60 + 50);
    // The four stamped ones leave: only the two past the ring wait, aged 60 and 50 ms; read as their mean.
    for (const s of seqs.slice(0, 4)) age.leave(s.seq, s.at);
    expect(age.waiting).toBe(2);
    expect(age.oldest(1100)).toBe(55);
    expect(age.total(1100)).toBe(110);
    for (const s of seqs.slice(4)) age.leave(s.seq, s.at);
    expect([age.oldest(1200), age.total(1200)]).toEqual([0, 0]);
    const next = age.arrive(1200);
    expect(next).toBeGreaterThanOrEqual(0);
    expect(age.oldest(1250)).toBe(50);
  });
});

describe('shedding follows the hysteresis', () => {
  it('occupancy hovering at the CRITICAL bound sheds in one stretch, not per request', () => {
    const m = (t = setup());
    const queue = m.monitor.queue('q', { capacity: 20 });
    // In flight, so the waits stay short and occupancy alone decides.
    const tickets = Array.from({ length: 17 }, () => queue.enqueue());
    for (const ticket of tickets) ticket.start();
    let changes = 0;
    let admitting = true;
    const admit = () => {
      const answer = queue.admit().admit;
      if (answer !== admitting) changes++;
      admitting = answer;
    };
    // 17 and 18 of 20 (85 % and 90 %) in turn every 50 ms for 10 s, with a tick each second.
    let extra: Ticket | undefined;
    for (let ms = 0; ms < 10_000; ms += 10) {
      m.advance(10);
      if (ms % 50 === 0) {
        if (extra === undefined) extra = queue.enqueue();
        else {
          extra.end('cancelled');
          extra = undefined;
        }
      }
      admit();
      if (ms % 1000 === 990) m.monitor.tick();
    }
    expect(changes).toBe(1);
    expect(admitting).toBe(false);
    // Down to 80 % (85 % less the 5 % hysteresis): the episode still turns away what would take it past 16 of 20.
    extra?.end('cancelled');
    tickets.pop()!.end('cancelled');
    admit();
    expect(admitting).toBe(false);
    // At 15 one more fits; the episode goes on (level CRITICAL) and refuses the one after it.
    tickets.pop()!.end('cancelled');
    admit();
    expect(admitting).toBe(true);
    const admitted = queue.enqueue();
    admit();
    expect(admitting).toBe(false);
    expect(queue.level()).toBe('critical');
    // It ends once none was turned away for queue.shedHoldSeconds (3 s).
    admitted.end('cancelled');
    m.advance(2990);
    m.monitor.tick();
    expect(queue.level()).toBe('critical');
    m.advance(10);
    admit();
    expect(admitting).toBe(true);
    expect(queue.level()).toBe('warn');
    expect(m.alerts.filter((a) => a.signal === 'queue_backpressure').map((a) => a.level)).toEqual(['critical', 'ok']);
    expect(m.alerts.find((a) => a.signal === 'queue_backpressure' && a.level === 'ok')?.message).toMatch(
      /^queue_backpressure recovered on queue "q": admission serves everything again after \d+\.\d s of shedding, which turned away (\d+) of (\d+) requests$/,
    );
    for (const ticket of tickets) ticket.end('cancelled');
  });

  it('a CRITICAL wait: the episode admits while the expected wait fits under it, turns away the rest, and ends once none was turned away for shedHoldSeconds', () => {
    const m = (t = setup({ thresholds: { queue: { shedHoldSeconds: 5 } } }));
    const queue = m.monitor.queue('q', { capacity: 1000 });
    const held = queue.enqueue();
    for (let i = 0; i < 20; i++) {
      const ticket = queue.enqueue();
      m.advance(800);
      ticket.start();
      ticket.end();
    }
    m.monitor.tick();
    // The held request has waited 16 s: a request behind it would wait longer than 450 ms (500 ms less 10 %).
    expect(queue.admit()).toMatchObject({ admit: false, level: 'critical' });
    held.end('cancelled');
    const answers: boolean[] = [];
    let refill: Ticket | undefined;
    // 1 s of a queue that drains and refills every 100 ms: its oldest waits 100 ms at most, so the episode admits.
    for (let ms = 0; ms < 1000; ms += 10) {
      m.advance(10);
      if (ms % 100 === 0) {
        if (refill === undefined) refill = queue.enqueue();
        else {
          refill.start();
          refill.end();
          refill = undefined;
        }
      }
      answers.push(queue.admit().admit);
    }
    expect(answers.every((a) => a)).toBe(true);
    expect(queue.level()).toBe('critical');
    // A request left waiting 460 ms: the next is turned away, and the hold (5 s) counts from it.
    refill?.end('cancelled');
    const slow = queue.enqueue();
    m.advance(460);
    expect(queue.admit().admit).toBe(false);
    slow.end('cancelled');
    m.monitor.tick();
    expect(queue.admit()).toMatchObject({ admit: true, level: 'critical' });
    m.advance(4990);
    m.monitor.tick();
    expect(queue.level()).toBe('critical');
    m.advance(10);
    m.monitor.tick();
    expect(queue.level()).not.toBe('critical');
    expect(m.alerts.filter((a) => a.signal === 'queue_backpressure').map((a) => a.level)).toEqual(['critical', 'ok']);
    expect(m.alerts.find((a) => a.signal === 'queue_backpressure' && a.level === 'ok')?.message).toMatch(
      /admission serves everything again after 6\.\d s of shedding, which turned away 2 of 103 requests$/,
    );
  });
});

describe('the waits still accruing, per slot (queue_pending_wait)', () => {
  it('a busy queue that stops starting requests: WARN at 10 s per slot, before its oldest request passes the age WARN, and CRITICAL at 60 s', () => {
    const m = (t = setup());
    const log: string[] = [];
    m.monitor.onAlert((e) => log.push(`${e.signal}:${e.level}@${e.at - start}`));
    const queue = m.monitor.queue('stuck', { concurrency: 4, capacity: 1000 });
    const start = m.now();
    // Four requests hold the slots and never end; 200 requests/s keep arriving behind them.
    const held = Array.from({ length: 4 }, () => queue.enqueue());
    for (const ticket of held) ticket.start();
    const waiting: Ticket[] = [];
    for (let ms = 5; ms <= 1750; ms += 5) {
      m.set(start + ms);
      waiting.push(queue.enqueue());
      if (ms % 250 === 0) m.monitor.tick();
    }
    // Σ waits at t s: 200·t²/2 = 100·t², over 4 slots 25·t²: 14 s at the 0.75 s tick, 76 s at 1.75 s. The age
    // passes 1 s with the arrival at 1010 ms (the first waiting one came at 5 ms).
    expect(log.filter((entry) => !entry.startsWith('queue_occupancy'))).toEqual([
      'queue_pending_wait:warn@750',
      'queue_age:warn@1010',
      'queue_pending_wait:critical@1750',
    ]);
    const critical = m.alerts.find((a) => a.signal === 'queue_pending_wait' && a.level === 'critical')!;
    expect(critical).toMatchObject({ threshold: 60, labels: { queue: 'stuck' } });
    // 350 waiting, arrived at 5, 10 … 1750 ms: Σ (1750 − 5k) ms = 305.375 s, over 4 slots.
    expect(critical.value).toBeCloseTo(305.375 / 4, 9);
    expect(critical.message).toBe(
      'queue_pending_wait CRITICAL on queue "stuck": the 350 requests still waiting have waited 305.4 s in all, 76.3 s per slot of 4 > 60 s; the oldest 1745 ms',
    );
    // Freed: the queue drains, CRITICAL lowers at the next tick and the WARN after queue.keepFiringSeconds (10 s).
    for (const ticket of [...held, ...waiting]) ticket.end('cancelled');
    m.advance(250);
    m.monitor.tick();
    expect(m.alerts.filter((a) => a.signal === 'queue_pending_wait').map((a) => a.level)).toEqual([
      'warn',
      'critical',
      'warn',
    ]);
    m.advance(10_000);
    m.monitor.tick();
    expect(m.alerts.filter((a) => a.signal === 'queue_pending_wait').map((a) => a.level)).toEqual([
      'warn',
      'critical',
      'warn',
      'ok',
    ]);
  });

  it('steady load at 90 % of 4 slots (Poisson arrivals, exponential 100 ms service, 2 min): well under the WARN, never raised', () => {
    const m = (t = setup());
    const queue = m.monitor.queue('steady', { concurrency: 4, capacity: 64 });
    const next = random(7);
    const start = m.now();
    const waiting: Ticket[] = [];
    const running: { ticket: Ticket; endAt: number }[] = [];
    let nextArrival = 0;
    let peak = 0;
    let sum = 0;
    let samples = 0;
    for (let ms = 0; ms < 120_000; ms++) {
      m.set(start + ms);
      for (let i = running.length - 1; i >= 0; i--) {
        if (running[i]!.endAt > ms) continue;
        running[i]!.ticket.end('completed');
        running.splice(i, 1);
      }
      while (nextArrival <= ms) {
        waiting.push(queue.enqueue());
        nextArrival += (-Math.log(1 - next()) / 36) * 1000;
      }
      while (running.length < 4 && waiting.length > 0) {
        const ticket = waiting.shift()!;
        ticket.start();
        running.push({ ticket, endAt: ms + Math.max(1, Math.round(-Math.log(1 - next()) * 100)) });
      }
      if (ms % 10 === 0) {
        const perSlot = m.monitor.snapshot().queues.steady!.pendingWaitSeconds / 4;
        peak = Math.max(peak, perSlot);
        sum += perSlot;
        samples++;
      }
      if (ms % 1000 === 999) m.monitor.tick();
    }
    // Requests did wait (the sum is not idle: 0.12 s per slot on average, 1.8 s at its peak), yet it stays far
    // under the WARN's 10 s per slot.
    expect(sum / samples).toBeGreaterThan(0.05);
    expect(peak).toBeGreaterThan(1);
    expect(peak).toBeLessThan(5);
    expect(m.alerts.filter((a) => a.signal === 'queue_pending_wait')).toEqual([]);
  });
});
