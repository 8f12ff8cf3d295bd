/**
 * The live board: what another thread reads while the main thread is busy
 * must be what the queue and the monitor say at that moment, read straight
 * from the shared buffer with the layout that travels with it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { setup } from './helpers';

const running: ReturnType<typeof setup>[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.close()));
});

function board(t: ReturnType<typeof setup>) {
  const { buffer, layout, queueNames } = t.monitor.liveBoard;
  const cells = new Float64Array(buffer);
  const queue = (name: string) => {
    const at = layout.header.headerCells + queueNames.indexOf(name) * layout.queue.cells;
    const q = layout.queue;
    return {
      waiting: cells[at + q.waiting],
      inFlight: cells[at + q.inFlight],
      capacity: cells[at + q.capacity],
      level: cells[at + q.level],
      stamped: cells[at + q.stamped],
      /** The oldest waiting request's age (ms) at `now`, as a reader computes it. */
      oldestAge: (now: number) => now - cells[at + q.origin] - cells[at + q.oldest],
      /** The waits accrued so far (ms) at `now`. */
      pending: (now: number) => cells[at + q.stamped] * (now - cells[at + q.origin]) - cells[at + q.arrivals],
    };
  };
  return { cells, layout, queue };
}

describe("the monitor's live board", () => {
  it("follows each arrival, start and end of a queue's requests, with the ages a reader computes", () => {
    const t = setup();
    running.push(t);
    const q = t.monitor.queue('infer', { capacity: 10, concurrency: 2 });
    const b = board(t);
    expect(b.queue('infer')).toMatchObject({ waiting: 0, inFlight: 0, capacity: 10, level: 0, stamped: 0 });

    const first = q.enqueue('m');
    t.advance(100);
    const second = q.enqueue('m');
    t.advance(50);
    const third = q.enqueue('m');
    expect(b.queue('infer')).toMatchObject({ waiting: 3, inFlight: 0, stamped: 3 });
    // Arrived at 0, 100 and 150 ms: at 150 the oldest has waited 150 ms, the three 150 + 50 + 0.
    expect(b.queue('infer').oldestAge(t.now())).toBe(150);
    expect(b.queue('infer').pending(t.now())).toBe(200);

    first.start();
    t.advance(30);
    expect(b.queue('infer')).toMatchObject({ waiting: 2, inFlight: 1, stamped: 2 });
    // The oldest now is the second: 80 ms; the two 80 + 30.
    expect(b.queue('infer').oldestAge(t.now())).toBe(80);
    expect(b.queue('infer').pending(t.now())).toBe(110);

    second.end('cancelled');
    first.end('completed');
    third.start();
    expect(b.queue('infer')).toMatchObject({ waiting: 0, inFlight: 1, stamped: 0 });
    expect(Number.isNaN(b.cells[b.layout.header.headerCells + b.layout.queue.oldest])).toBe(true);
  });

  it('shows a shedding episode as CRITICAL at once, and the monitor level and a heartbeat at each tick', () => {
    const t = setup();
    running.push(t);
    const q = t.monitor.queue('infer', { capacity: 4, concurrency: 1 });
    const b = board(t);
    for (let i = 0; i < 4; i++) q.enqueue('m');
    // Full: the next admission starts an episode, which the board shows before any tick.
    expect(q.admit().admit).toBe(false);
    expect(b.queue('infer').level).toBe(2);
    expect(Number.isNaN(b.cells[b.layout.header.beatEpoch])).toBe(true);

    const before = performance.timeOrigin + performance.now();
    t.monitor.tick();
    expect(b.cells[b.layout.header.level]).toBe(2);
    expect(b.cells[b.layout.header.beatClock]).toBe(t.now());
    expect(b.cells[b.layout.header.beatEpoch]).toBeGreaterThanOrEqual(before);
  });

  it('holds the level and counts the queue reports after every step of a random run', () => {
    const t = setup({ thresholds: { queue: { waitWarnSeconds: 0.05, waitCriticalSeconds: 0.2 } } });
    running.push(t);
    const q = t.monitor.queue('infer', { capacity: 12, concurrency: 2 });
    const b = board(t);
    const waiting: ReturnType<typeof q.enqueue>[] = [];
    const inFlight: ReturnType<typeof q.enqueue>[] = [];
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const levels = new Set<number>();
    for (let step = 0; step < 3000; step++) {
      const r = random();
      t.advance(Math.floor(random() * 40));
      if (r < 0.3) {
        if (q.admit().admit) waiting.push(q.enqueue('m'));
      } else if (r < 0.55 && waiting.length > 0) {
        const ticket = waiting.shift()!;
        ticket.start();
        inFlight.push(ticket);
      } else if (r < 0.8 && inFlight.length > 0) inFlight.shift()!.end('completed');
      else if (r < 0.85 && waiting.length > 0) waiting.pop()!.end('cancelled');
      else if (r < 0.9) t.monitor.tick();
      const live = b.queue('infer');
      const expected = { ok: 0, warn: 1, critical: 2 }[q.level()];
      expect(live.level, `step ${step}`).toBe(expected);
      expect([live.waiting, live.inFlight]).toEqual([q.waiting, q.inFlight]);
      levels.add(live.level);
    }
    // The run went through every level, so each transition was checked.
    expect([...levels].sort()).toEqual([0, 1, 2]);
  });

  it('counts every record into the aggregates, and every queue update, and nothing else', async () => {
    const t = setup({ exportMode: 'producer' });
    running.push(t);
    const b = board(t);
    const changes = () => b.cells[b.layout.header.changes];
    const q = t.monitor.queue('infer', { capacity: 10, concurrency: 2 });
    let before = changes();
    // A collection, a snapshot and the level read nothing into the board.
    await t.collect();
    t.monitor.snapshot();
    t.monitor.level();
    expect(changes()).toBe(before);

    const ticket = q.enqueue('m');
    expect(changes()).toBeGreaterThan(before);
    before = changes();
    ticket.start();
    expect(changes()).toBeGreaterThan(before);
    before = changes();
    ticket.end('completed');
    expect(changes()).toBeGreaterThan(before);
    // A record that touches no queue: a model load's duration into its histogram.
    before = changes();
    await t.monitor.modelLoad('m', 'load', () => {});
    expect(changes()).toBeGreaterThan(before);
    // A tick refreshes samples (a reader bounds their age), and a collection records nothing.
    before = changes();
    t.monitor.tick();
    await t.collect();
    expect(changes()).toBe(before);
  });

  it('bounds a stuck main thread by the event loop CRITICAL delay, or two heartbeat gaps when longer', () => {
    const ticked = setup({ detectorIntervalMs: 1000, thresholds: { eventLoop: { delayCriticalSeconds: 0.5 } } });
    running.push(ticked);
    // Only the tick beats (no event-loop probe in the test monitor): 2 × 1 s.
    expect(board(ticked).cells[board(ticked).layout.header.stuckAfterMs]).toBe(2000);
    const probed = setup({
      eventLoop: true,
      detectorIntervalMs: 0,
      thresholds: { eventLoop: { delayCriticalSeconds: 0.5 } },
    });
    running.push(probed);
    // The probe beats at least every 200 ms while the loop rests: the CRITICAL delay bounds it.
    expect(board(probed).cells[board(probed).layout.header.stuckAfterMs]).toBe(500);
    const none = setup({ detectorIntervalMs: 0 });
    running.push(none);
    // Nothing beats: a reader must not call the main thread stuck.
    expect(Number.isNaN(board(none).cells[board(none).layout.header.stuckAfterMs])).toBe(true);
  });
});
