/**
 * One overload episode, one shedding episode: a real queue with shedding,
 * driven open-loop past its capacity in simulated milliseconds (manual
 * clock, a detector tick every second), serves at its capacity throughout
 * and turns away only the excess, with one backpressure CRITICAL and one
 * "serves again" per episode.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Ticket } from '../src/index';
import type { TestMonitor } from '../../../test/support/monitor';
import { setup } from './helpers';

let t: TestMonitor | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

interface Phase {
  /** End of the phase, ms from the start. */
  untilMs: number;
  /** Offered load as a multiple of the queue's capacity c / S. */
  load: number;
}

interface Run {
  /** Per simulated second: requests completed, shed, and slot-ms busy. */
  served: number[];
  shed: number[];
  busy: number[];
  /** queue_backpressure events, ms from the start. */
  backpressure: { level: string; at: number }[];
  firstShedMs: number;
  lastShedMs: number;
  /** 503s written while the queue's backpressure level was not yet announced CRITICAL. */
  unannounced: number;
  /** From a second after the first shed, the largest occupancy (waiting + in flight); the longest wait (ms) of the requests the episode let in. */
  peak: number;
  longestWaitMs: number;
}

/**
 * Open-loop arrivals at the phase's load × c / S, evenly spaced or Poisson
 * (seeded), into a queue of `concurrency` slots, each request served in
 * `serviceMs`, through admit() → enqueue() → start() → end(), as every
 * adapter drives it.
 */
function drive(options: {
  concurrency: number;
  serviceMs: number;
  capacity?: number;
  poisson?: boolean;
  phases: Phase[];
}): Run {
  const { concurrency, serviceMs } = options;
  const m = (t = setup({ eventLoop: false }));
  const queue = m.monitor.queue('infer', { concurrency, capacity: options.capacity });
  const start = m.now();
  const end = options.phases.at(-1)!.untilMs;
  const seconds = Math.ceil(end / 1000);
  const run: Run = {
    served: Array(seconds).fill(0),
    shed: Array(seconds).fill(0),
    busy: Array(seconds).fill(0),
    backpressure: [],
    firstShedMs: Number.NaN,
    lastShedMs: Number.NaN,
    unannounced: 0,
    peak: 0,
    longestWaitMs: 0,
  };
  m.monitor.onAlert((e) => {
    if (e.signal === 'queue_backpressure') run.backpressure.push({ level: e.level, at: e.at - start });
  });
  const waiting: { ticket: Ticket; at: number }[] = [];
  const running: { ticket: Ticket; endAt: number }[] = [];
  let nextArrival = 0;
  let phase = 0;
  let seed = 12345;
  // Exponential gaps from a small LCG, so the run is the same on every machine.
  const gap = (mean: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return options.poisson ? -mean * Math.log((seed + 1) / 2147483649) : mean;
  };
  for (let ms = 0; ms < end; ms++) {
    m.set(start + ms);
    const second = Math.floor(ms / 1000);
    // Past the backlog the episode began with.
    const settled = ms >= run.firstShedMs + 1000;
    for (let i = running.length - 1; i >= 0; i--) {
      if (running[i]!.endAt > ms) continue;
      running[i]!.ticket.end('completed');
      running.splice(i, 1);
      run.served[second]!++;
    }
    while (ms >= options.phases[phase]!.untilMs) phase++;
    const interval = serviceMs / concurrency / options.phases[phase]!.load;
    while (nextArrival <= ms) {
      nextArrival += gap(interval);
      if (!queue.admit().admit) {
        queue.reject();
        run.shed[second]!++;
        if (Number.isNaN(run.firstShedMs)) run.firstShedMs = ms;
        run.lastShedMs = ms;
        if (run.backpressure.at(-1)?.level !== 'critical') run.unannounced++;
        continue;
      }
      waiting.push({ ticket: queue.enqueue(), at: ms });
    }
    while (running.length < concurrency && waiting.length > 0) {
      const next = waiting.shift()!;
      next.ticket.start();
      if (next.at > run.firstShedMs) run.longestWaitMs = Math.max(run.longestWaitMs, ms - next.at);
      running.push({ ticket: next.ticket, endAt: ms + serviceMs });
    }
    if (settled) run.peak = Math.max(run.peak, waiting.length + running.length);
    run.busy[second]! += running.length;
    if (ms % 1000 === 999) m.monitor.tick();
  }
  for (const r of running) r.ticket.end('completed');
  for (const w of waiting) w.ticket.end('cancelled');
  return run;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe('shedding under sustained overload', () => {
  // Short service (the occupancy target binds: 51 of 64 wait ~0.24 s) and long service (the wait target binds).
  it.each([
    { concurrency: 4, serviceMs: 20, capacity: 64, poisson: false },
    { concurrency: 4, serviceMs: 100, capacity: 64, poisson: false },
    { concurrency: 8, serviceMs: 40, capacity: 64, poisson: true },
  ])(
    '2× capacity for 30 s (c $concurrency, S $serviceMs ms, Poisson $poisson): one episode, served at capacity, only the excess shed',
    (setup) => {
      const rate = (setup.concurrency * 1000) / setup.serviceMs;
      const run = drive({ ...setup, phases: [{ untilMs: 30_000, load: 2 }] });
      const where = JSON.stringify({ backpressure: run.backpressure, served: run.served, shed: run.shed });
      // One episode: announced once, before the first 503, and not ended while the overload lasts.
      expect(run.backpressure, where).toEqual([{ level: 'critical', at: expect.any(Number) }]);
      expect(run.backpressure[0]!.at, where).toBeLessThanOrEqual(run.firstShedMs);
      expect(run.unannounced, where).toBe(0);
      // From the second after the first shed on, every second serves at capacity and sheds.
      const from = Math.floor(run.firstShedMs / 1000) + 1;
      for (let s = from; s < run.served.length; s++) {
        expect(run.served[s], `second ${s}: ${where}`).toBeGreaterThanOrEqual(rate * 0.97);
        expect(run.busy[s], `second ${s}: ${where}`).toBeGreaterThanOrEqual(setup.concurrency * 1000 * 0.97);
        expect(run.shed[s], `second ${s}: ${where}`).toBeGreaterThan(0);
      }
      // Served ≈ c / S; shed ≈ the excess, half of what was offered at 2×.
      const served = sum(run.served.slice(from)) / (run.served.length - from);
      const shed = sum(run.shed.slice(from)) / (sum(run.shed.slice(from)) + sum(run.served.slice(from)));
      expect(served / rate, where).toBeGreaterThan(0.97);
      expect(served / rate, where).toBeLessThanOrEqual(1.0001);
      expect(shed, where).toBeGreaterThan(0.47);
      expect(shed, where).toBeLessThan(0.53);
      // The queue is held under occupancyCritical less its hysteresis (85 % less 5 %), the waits under the CRITICAL wait.
      expect(run.peak, where).toBeGreaterThan(setup.concurrency);
      expect(run.peak / setup.capacity, where).toBeLessThanOrEqual(0.85 * 0.95);
      expect(run.longestWaitMs, where).toBeLessThan(500);
    },
  );

  it('a load that falls back under capacity ends the episode once nothing was shed for queue.shedHoldSeconds', () => {
    const run = drive({
      concurrency: 4,
      serviceMs: 20,
      capacity: 64,
      phases: [
        { untilMs: 15_000, load: 2 },
        { untilMs: 30_000, load: 0.5 },
      ],
    });
    const where = JSON.stringify({ backpressure: run.backpressure, served: run.served, shed: run.shed });
    expect(
      run.backpressure.map((e) => e.level),
      where,
    ).toEqual(['critical', 'ok']);
    const ended = run.backpressure[1]!.at;
    // The backlog (under 0.3 s of work) drains at once: nothing is shed after the fall.
    expect(run.lastShedMs, where).toBeLessThan(15_000);
    expect(run.lastShedMs, where).toBeGreaterThan(14_900);
    // Ended once nothing was shed for the hold (3 s), at the latest on the tick after it.
    expect(ended - run.lastShedMs, where).toBeGreaterThanOrEqual(3000);
    expect(ended, where).toBeLessThanOrEqual(15_000 + 3000 + 1000);
    // Under capacity afterwards: everything offered is served.
    for (let s = 17; s < 30; s++) expect(run.served[s], `second ${s}: ${where}`).toBeGreaterThanOrEqual(99);
  });
});
