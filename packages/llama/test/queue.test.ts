import { describe, expect, it } from 'vitest';
import { QueueFullError } from '@infersignal/core';
import { MODEL, QUEUE_WAIT, REQUESTS, TPOT, TTFT, gate, monitorFor, servedModel, until } from './helpers';

describe('sequence slots are the queue', () => {
  const { open } = servedModel({ kvCache: false });

  it('more callers than sequences wait their turn: exact queue waits, TTFT from arrival', async () => {
    const t = monitorFor();
    const model = await open(t);
    try {
      // Both sequences held at t = 0 …
      const held = [gate(), gate()];
      const holders = held.map((g) => model.withSequence(() => g.wait));
      // … three completions arrive at t = 0. Each token moves the monitor's clock 10 ms.
      const firstTokenAt: number[] = [];
      const lastTokenAt: number[] = [];
      const tokens = [0, 0, 0];
      const calls = [0, 1, 2].map((i) =>
        model.complete(`prompt ${i}`, {
          maxTokens: 4,
          onToken(batch) {
            if (tokens[i] === 0) firstTokenAt[i] = t.now();
            lastTokenAt[i] = t.now();
            tokens[i] += batch.length;
            t.advance(10);
          },
        }),
      );
      expect(model.queue.waiting).toBe(3);
      expect(model.queue.inFlight).toBe(2);
      expect(model.pending).toBe(5);
      t.advance(100);
      held[0].open(); // one sequence frees at 100 ms; the three completions take it in arrival order
      const results = await Promise.all(calls);
      expect(model.queue.inFlight).toBe(1);
      held[1].open();
      await Promise.all(holders);

      const start = 1_000_000;
      expect(firstTokenAt.map((at) => at - start)).toEqual([100, 140, 180]);
      const exported = await t.collect();
      const waits = exported.histogram(QUEUE_WAIT, { [MODEL]: 'tiny' });
      expect(waits?.count).toBe(5);
      expect(waits?.sum).toBeCloseTo(0 + 0 + 0.1 + 0.14 + 0.18, 9);
      expect(waits?.max).toBeCloseTo(0.18, 9);
      const ttft = exported.histogram(TTFT, { [MODEL]: 'tiny' });
      expect(ttft?.count).toBe(3);
      expect(ttft?.sum).toBeCloseTo(0.1 + 0.14 + 0.18, 9);
      // One time-per-output-token sample per stream: (last − first) / (tokens − 1) = 10 ms.
      const tpot = exported.histogram(TPOT, { [MODEL]: 'tiny' });
      expect(tpot?.count).toBe(3);
      expect(tpot?.sum).toBeCloseTo(0.03, 9);
      for (const [i, r] of results.entries()) {
        expect(r.usage.outputTokens).toBe(4);
        expect(tokens[i]).toBe(4);
        expect(lastTokenAt[i] - firstTokenAt[i]).toBe(30);
      }
      expect(exported.sum(REQUESTS, { [MODEL]: 'tiny', 'infersignal.outcome': 'completed' })).toBe(5);
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('never fails with "No sequences left": twelve concurrent generations on two sequences', async () => {
    const t = monitorFor({ clock: undefined });
    const model = await open(t);
    try {
      let peak = 0;
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          model.complete(`p${i}`, {
            maxTokens: 6,
            onToken: () => {
              peak = Math.max(peak, model.queue.inFlight);
            },
          }),
        ),
      );
      expect(results.map((r) => r.usage.outputTokens)).toEqual(Array(12).fill(6));
      expect(peak).toBe(2);
      const snapshot = t.monitor.snapshot().queues['llama:tiny'];
      expect(snapshot).toMatchObject({ waiting: 0, inFlight: 0, completed: 12 });
      expect((await t.collect()).count(QUEUE_WAIT)).toBe(12);
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('sheds at a critical level and past maxWaiting, counting both as rejected', async () => {
    // The level under test is the queue's own: no event-loop level (a busy machine's stalls) mixed in.
    const t = monitorFor({ eventLoop: false });
    // One sequence, room for 4: occupancy 1 running + 3 waiting = 1.0 (critical above 0.85).
    const model = await open(t, { sequences: 1, capacity: 4, maxWaiting: 3, shed: true });
    try {
      const held = gate();
      const holder = model.withSequence(() => held.wait);
      const waiting = [0, 1, 2].map((i) => model.complete(`w${i}`, { maxTokens: 2 }));
      expect(model.queue.level()).toBe('critical');
      const shed = await model.complete('late', { maxTokens: 2 }).catch((e: unknown) => e);
      expect(shed).toBeInstanceOf(QueueFullError);
      expect((shed as QueueFullError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
      held.open();
      await Promise.all([holder, ...waiting]);

      // Without shedding the FIFO bound still holds: the fourth waiter is refused.
      const other = monitorFor();
      const plain = await open(other, { sequences: 1, maxWaiting: 1 });
      const again = gate();
      const pinned = plain.withSequence(() => again.wait);
      const queued = plain.complete('a', { maxTokens: 2 });
      await expect(plain.complete('b', { maxTokens: 2 })).rejects.toBeInstanceOf(QueueFullError);
      again.open();
      await Promise.all([pinned, queued]);
      await plain.release();
      expect((await other.collect()).by(REQUESTS, 'infersignal.outcome')).toEqual({ completed: 2, rejected: 1 });
      await other.close();

      const exported = await t.collect();
      expect(exported.by(REQUESTS, 'infersignal.outcome', { [MODEL]: 'tiny' })).toEqual({ completed: 4, rejected: 1 });
    } finally {
      await model.release();
      await t.close();
    }
  });

  it('a caller that gives up while waiting leaves the queue as cancelled; the others are served', async () => {
    const t = monitorFor();
    const model = await open(t, { sequences: 1 });
    try {
      const held = gate();
      const holder = model.withSequence(() => held.wait);
      const controller = new AbortController();
      const leaving = model.complete('bye', { maxTokens: 2, signal: controller.signal }).catch((e: unknown) => e);
      const staying = model.complete('hi', { maxTokens: 2 });
      await until(() => model.queue.waiting === 2, 1000, 'two waiting');
      controller.abort();
      expect(await leaving).toMatchObject({ name: 'AbortError' });
      expect(model.queue.waiting).toBe(1);
      held.open();
      expect((await staying).usage.outputTokens).toBe(2);
      await holder;
      const exported = await t.collect();
      expect(exported.by(REQUESTS, 'infersignal.outcome', { [MODEL]: 'tiny' })).toEqual({ completed: 2, cancelled: 1 });
      // It never started: no stream was opened for it.
      expect(exported.sum('infersignal.streams', { [MODEL]: 'tiny' })).toBe(1);
    } finally {
      await model.release();
      await t.close();
    }
  });
});
