import { describe, expect, it } from 'vitest';
import { HotSwap } from '../src/model-swap';

class ReleasedError extends Error {}

interface Model {
  id: string;
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function setup(initial = 'v1') {
  const released: string[] = [];
  const errors: unknown[] = [];
  const swaps: string[] = [];
  const afterRuns: string[] = [];
  const swap: HotSwap<Model> = new HotSwap<Model>(
    { id: initial },
    {
      release: (m) => {
        if (m.id === 'bad') throw new Error('dispose failed');
        released.push(m.id);
      },
      onReleaseError: (err) => errors.push(err),
      releasedError: () => new ReleasedError('released'),
      onSwap: (next, old) => swaps.push(`${old.id}->${next.id}`),
      afterRun: () => afterRuns.push(`released=${released.join(',')}`),
    },
  );
  return { swap, released, errors, swaps, afterRuns };
}

describe('HotSwap', () => {
  it('swaps while a run is in flight and releases the old slot only after that run ends', async () => {
    const { swap, released, swaps, afterRuns } = setup();
    const gate = deferred();
    const seen: string[] = [];
    const run = swap.use(async (m) => {
      seen.push(m.id);
      await gate.promise;
      return m.id;
    });
    expect(swap.pending).toBe(1);

    await expect(swap.reload(async () => ({ id: 'v2' }))).resolves.toEqual({ id: 'v2' });
    expect(swap.current.id).toBe('v2');
    expect(swaps).toEqual(['v1->v2']);
    expect(released).toEqual([]); // v1 still has a run on it

    // A run started after the swap uses the new slot.
    await expect(swap.use((m) => m.id)).resolves.toBe('v2');
    expect(released).toEqual([]);

    gate.resolve();
    await expect(run).resolves.toBe('v1');
    expect(seen).toEqual(['v1']);
    expect(released).toEqual(['v1']);
    // afterRun sees the retired slot already released.
    expect(afterRuns).toEqual(['released=', 'released=v1']);
    expect(swap.pending).toBe(0);
  });

  it('picks the slot when a scheduled run starts: queued before a swap, it runs on the new slot', async () => {
    const { swap, released } = setup();
    const start = deferred();
    const run = swap.use(
      (m) => m.id,
      (task) => start.promise.then(task),
    );
    await swap.reload(async () => ({ id: 'v2' }));
    expect(released).toEqual(['v1']); // nothing ran on v1: released at once
    start.resolve();
    await expect(run).resolves.toBe('v2');
  });

  it('a failed reload keeps the old slot; reloads are serialized', async () => {
    const { swap, released, swaps } = setup();
    const first = deferred<Model>();
    const order: string[] = [];
    const a = swap.reload(() => {
      order.push('a');
      return first.promise;
    });
    const second = deferred<Model>();
    const b = swap.reload(() => {
      order.push('b');
      return second.promise;
    });
    await Promise.resolve();
    expect(order).toEqual(['a']); // b waits for a
    first.reject(new Error('load failed'));
    await expect(a).rejects.toThrow('load failed');
    expect(swap.current.id).toBe('v1');
    expect(released).toEqual([]);
    second.resolve({ id: 'v3' });
    await expect(b).resolves.toEqual({ id: 'v3' });
    expect(order).toEqual(['a', 'b']);
    expect(swaps).toEqual(['v1->v3']);
    expect(released).toEqual(['v1']);
  });

  it('release waits for accepted runs and pending reloads, is idempotent, and refuses new work', async () => {
    const { swap, released } = setup();
    const gate = deferred();
    const run = swap.use(async (m) => {
      await gate.promise;
      return m.id;
    });
    const load = deferred<Model>();
    const reload = swap.reload(() => load.promise);

    const r1 = swap.release();
    const r2 = swap.release();
    expect(r2).toBe(r1);
    expect(swap.released).toBe(true);
    await expect(swap.use((m) => m.id)).rejects.toBeInstanceOf(ReleasedError);
    await expect(swap.reload(async () => ({ id: 'x' }))).rejects.toBeInstanceOf(ReleasedError);

    let done = false;
    void r1.then(() => (done = true));
    // The reload finishing after release frees its new slot and rejects.
    load.resolve({ id: 'v2' });
    await expect(reload).rejects.toBeInstanceOf(ReleasedError);
    expect(released).toEqual(['v2']);
    expect(swap.current.id).toBe('v1');
    await new Promise((r) => setTimeout(r, 5));
    expect(done).toBe(false); // the run is still going

    gate.resolve();
    await expect(run).resolves.toBe('v1');
    await r1;
    expect(released).toEqual(['v2', 'v1']);
    await swap.release();
    expect(released).toEqual(['v2', 'v1']); // released once
    expect(swap.pending).toBe(0);
  });

  it('release waits for an async slot release; release errors go to onReleaseError, not the run', async () => {
    const releaseGate = deferred();
    const errors: unknown[] = [];
    const log: string[] = [];
    const swap = new HotSwap<Model>(
      { id: 'bad' },
      {
        release: async (m) => {
          await releaseGate.promise;
          log.push(`released ${m.id}`);
          throw new Error('release failed');
        },
        onReleaseError: (err) => errors.push(err),
        releasedError: () => new ReleasedError('released'),
      },
    );
    await expect(swap.use((m) => m.id)).resolves.toBe('bad');
    let done = false;
    const closing = swap.release().then(() => (done = true));
    await new Promise((r) => setTimeout(r, 5));
    expect(done).toBe(false);
    releaseGate.resolve();
    await closing;
    expect(log).toEqual(['released bad']);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe('release failed');
  });

  it('a synchronous throw from schedule rejects the run and settles the count', async () => {
    const { swap } = setup();
    const run = swap.use(
      (m) => m.id,
      () => {
        throw new Error('queue full');
      },
    );
    await expect(run).rejects.toThrow('queue full');
    expect(swap.pending).toBe(0);
    await swap.release();
  });

  it('a throwing sync release is reported and the swap still completes', async () => {
    const { swap, errors, released } = setup('bad');
    await swap.reload(async () => ({ id: 'v2' }));
    expect(swap.current.id).toBe('v2');
    expect(errors).toHaveLength(1);
    await swap.release();
    expect(released).toEqual(['v2']);
  });
});
