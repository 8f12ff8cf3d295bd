import { PerformanceObserver, performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS, resolveThresholds } from '../src/index';
import type { TestMonitor } from '../../../test/support/monitor';
import { setup } from './helpers';

let t: TestMonitor | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const PENDING = METRICS.queueTokensPending.name;
const DRAIN = METRICS.queueTokensDrainTime.name;

/** The token backlog gauges of queue `name` at a collection: [input, output, drain time or undefined]. */
async function backlog(m: TestMonitor, name: string) {
  const metrics = await m.collect();
  const at = { [ATTR.queue]: name };
  const input = metrics.points<number>(PENDING, { ...at, [ATTR.tokenType]: 'input' });
  const output = metrics.points<number>(PENDING, { ...at, [ATTR.tokenType]: 'output' });
  const drain = metrics.points<number>(DRAIN, at);
  expect(input.length + output.length).toBeLessThanOrEqual(2);
  return [input[0]?.value, output[0]?.value, drain[0]?.value];
}

describe('token backlog of an LLM queue', () => {
  it('a queue made with tokens: true exports its backlog at 0 from the start; other queues do not', async () => {
    const m = (t = setup());
    m.monitor.queue('llm', { tokens: true });
    m.monitor.queue('plain');
    expect(await backlog(m, 'llm')).toEqual([0, 0, 0]);
    expect(await backlog(m, 'plain')).toEqual([undefined, undefined, undefined]);
    expect(m.monitor.snapshot().queues.plain!.tokens).toBeUndefined();
  });

  it('prompt tokens waiting and output tokens owed are exact at each collection', async () => {
    const m = (t = setup());
    const queue = m.monitor.queue('llm', { concurrency: 2, tokens: true });
    const a = queue.enqueue('m');
    a.setTokens(100, 50);
    const b = queue.enqueue('m');
    b.setTokens(30, 20);
    const c = queue.enqueue('m');
    c.setTokens(7); // no max_tokens: owes nothing
    expect(await backlog(m, 'llm')).toEqual([137, 0, undefined]);
    a.start();
    expect(await backlog(m, 'llm')).toEqual([37, 50, undefined]);
    m.advance(100);
    a.produced(10);
    // 10 tokens in 100 ms of running: 100 tokens/s; 40 owed by a and 20 asked by b.
    expect(await backlog(m, 'llm')).toEqual([37, 40, 0.6]);
    b.start();
    b.produced(5);
    // c waits, asking for nothing; the rate is 15 tokens over 100 ms of running.
    expect(await backlog(m, 'llm')).toEqual([7, 55, (40 + 15) / 150]);
    // A request producing more than its max owes nothing, never less than nothing.
    a.produced(45);
    expect(await backlog(m, 'llm')).toEqual([7, 15, 15 / ((10 + 5 + 45) / 0.1)]);
    // A cost said again replaces the first one, waiting or running.
    c.setTokens(9, 40);
    b.setTokens(30, 25);
    expect(m.monitor.snapshot().queues.llm!.tokens).toMatchObject({
      waitingPrompt: 9,
      waitingOutput: 40,
      owedOutput: 20,
    });
    c.end('cancelled');
    a.end();
    b.produced(30);
    expect(await backlog(m, 'llm')).toEqual([0, 0, 0]);
    b.end();
    // Tokens after the end change nothing.
    b.produced(5);
    a.setTokens(1000, 1000);
    expect(await backlog(m, 'llm')).toEqual([0, 0, 0]);
  });

  it('a queue whose requests say their tokens exports the backlog from then on', async () => {
    const m = (t = setup());
    const queue = m.monitor.queue('late');
    const a = queue.enqueue();
    expect(await backlog(m, 'late')).toEqual([undefined, undefined, undefined]);
    a.setTokens(12, 8);
    expect(await backlog(m, 'late')).toEqual([12, 0, undefined]);
  });

  it('queue_token_backlog: WARN and CRITICAL when the backlog takes longer than its bounds to drain at the measured rate', async () => {
    const m = (t = setup());
    const queue = m.monitor.queue('llm', { concurrency: 1, capacity: 100, tokens: true });
    // An hour idle before the burst: the rate counts only the time a request ran.
    m.advance(3_600_000);
    const running = queue.enqueue('m');
    running.setTokens(20, 600);
    running.start();
    for (let i = 0; i < 20; i++) {
      m.advance(100);
      running.produced(10);
    }
    // 200 tokens in 2 s of running: 100 tokens/s; 400 still owed.
    const waiters = Array.from({ length: 5 }, () => {
      const w = queue.enqueue('m');
      w.setTokens(50, 1000);
      return w;
    });
    m.monitor.tick();
    expect(await backlog(m, 'llm')).toEqual([250, 400, 54]);
    expect(m.alerts.map((a) => `${a.signal}:${a.level}`)).toEqual(['queue_token_backlog:warn']);
    expect(m.alerts[0]!.message).toBe(
      'queue_token_backlog WARN on queue "llm": token backlog drains in 54.0 s > 30 s at 100.0 tokens/s: 400 output tokens owed to 1 running + 5000 asked by 5 waiting (250 prompt tokens)',
    );
    expect(m.alerts[0]).toMatchObject({ value: 54, threshold: 30, labels: { queue: 'llm' } });
    for (let i = 0; i < 7; i++) queue.enqueue('m').setTokens(50, 1000);
    m.advance(100);
    running.produced(10);
    m.monitor.tick();
    // (390 + 12 000) tokens at 210 / 2.1 s = 100 tokens/s.
    expect(m.alerts.map((a) => `${a.signal}:${a.level}`)).toEqual([
      'queue_token_backlog:warn',
      'queue_token_backlog:critical',
    ]);
    expect(m.alerts[1]!.value).toBeCloseTo(123.9, 9);
    expect(m.monitor.snapshot().queues.llm!.tokens).toEqual({
      waitingPrompt: 600,
      waitingOutput: 12_000,
      owedOutput: 390,
      usedShare: 1,
      outputRate: 100,
      drainSeconds: 123.9,
    });
    // Five waiters give up: (390 + 7000) / 100 = 73.9 s, back to WARN.
    for (const w of waiters) w.end('cancelled');
    m.monitor.tick();
    expect(m.alerts.at(-1)).toMatchObject({ signal: 'queue_token_backlog', level: 'warn' });
    expect(m.alerts.at(-1)!.value).toBeCloseTo(73.9, 9);
  });

  it('the output rate: tokens over the time requests ran, also across a stretch longer than the window', () => {
    const m = (t = setup());
    const queue = m.monitor.queue('llm', { concurrency: 1, tokens: true });
    const tokens = () => m.monitor.snapshot().queues.llm!.tokens!;
    expect(tokens().outputRate).toBeNull();
    const a = queue.enqueue('m');
    a.setTokens(5, 100_000);
    a.start();
    // A minute with no read at all: 100 tokens/s all along.
    for (let i = 0; i < 600; i++) {
      m.advance(100);
      a.produced(10);
    }
    expect(tokens().outputRate).toBeCloseTo(100, 9);
    expect(tokens().owedOutput).toBe(100_000 - 6000);
    // Bad counts are ignored, never thrown.
    a.produced(Number.NaN);
    a.produced(-3);
    a.produced(Number.POSITIVE_INFINITY);
    a.produced('7' as unknown as number);
    a.setTokens(Number.NaN, -1);
    expect(tokens()).toMatchObject({ owedOutput: 0, waitingPrompt: 0 });
    a.end();
    // Idle for a minute: no rate to judge by.
    m.advance(60_000);
    expect(tokens().outputRate).toBeNull();
  });

  it('max_tokens counts at the share recent requests used: a chat client asking for 4096 and taking 300 is no minute of work', () => {
    const m = (t = setup());
    const queue = m.monitor.queue('chat', { concurrency: 4, capacity: 64, tokens: true });
    const alerts = () => m.alerts.filter((a) => a.signal === 'queue_token_backlog');
    // A healthy server: 4 sequences at 100 tokens/s together, every request asks for 4096 and stops at
    // 300; every 3 s a burst leaves 2 waiting for a moment.
    const serve = (seconds: number) => {
      for (let s = 0; s < seconds; s++) {
        const running = Array.from({ length: 4 }, () => {
          const r = queue.enqueue('m');
          r.setTokens(40, 4096);
          r.start();
          return r;
        });
        const waiting = s % 3 === 0 ? [queue.enqueue('m'), queue.enqueue('m')] : [];
        for (const w of waiting) w.setTokens(40, 4096);
        for (let step = 0; step < 10; step++) {
          m.advance(100);
          for (const r of running) r.produced(2.5 * 3);
          if (step === 0) m.monitor.tick();
        }
        for (const r of running) r.end();
        for (const w of waiting) w.end('cancelled');
        m.monitor.tick();
      }
    };
    // Before 8 have completed, max_tokens counts whole: 4 × 4096 − 30 + 2 × 4096 at 300 tokens/s is ~82 s.
    serve(1);
    expect(alerts().map((a) => a.level)).toEqual(['warn']);
    expect((4 * (4096 - 7.5) + 2 * 4096) / 300).toBeCloseTo(81.8, 1);
    expect(alerts()[0]!.message).toBe(
      'queue_token_backlog WARN on queue "chat": token backlog drains in 81.8 s > 30 s at 300.0 tokens/s: 16354 output tokens owed to 4 running + 8192 asked by 2 waiting (80 prompt tokens)',
    );
    // The next burst comes before 8 have completed too; then the share is known.
    serve(1);
    m.advance(30_000);
    m.monitor.tick();
    expect(alerts().at(-1)!.level).toBe('ok');
    const seen = alerts().length;
    serve(60);
    const share = m.monitor.snapshot().queues.chat!.tokens!.usedShare;
    // Each completed request produced 10 × 7.5 = 75 of its 4096.
    expect(share).toBeCloseTo(75 / 4096, 9);
    // A burst's first tick now reads (4 × (4096 × share − 7.5) + 2 × 4096 × share) / 300 = 1.4 s: no alert
    // in a minute of the same bursts.
    expect(alerts()).toHaveLength(seen);
  });

  it('requests that run with large max_tokens and none waiting are no backlog: no alert', async () => {
    const m = (t = setup());
    const queue = m.monitor.queue('llm', { concurrency: 4, tokens: true });
    const running = Array.from({ length: 4 }, () => {
      const r = queue.enqueue('m');
      r.setTokens(10, 100_000);
      r.start();
      return r;
    });
    for (let i = 0; i < 60; i++) {
      m.advance(1000);
      for (const r of running) r.produced(5);
      m.monitor.tick();
    }
    expect(await backlog(m, 'llm')).toEqual([0, 4 * (100_000 - 300), 0]);
    expect(m.alerts).toHaveLength(0);
  });

  it.each([
    ['a manual clock', {}],
    ["the monitor's own clock", { clock: undefined }],
  ])(
    'a produced token allocates nothing (%s): a million of them leave the heap where it was, with no collection',
    async (_, options) => {
      const m = (t = setup(options));
      const queue = m.monitor.queue('llm', { concurrency: 1, tokens: true });
      const ticket = queue.enqueue('m');
      ticket.setTokens(10, 2_000_000);
      ticket.start();
      const run = (n: number) => {
        for (let i = 0; i < n; i++) {
          if ((i & 1023) === 0) m.advance(1);
          ticket.produced(1);
        }
      };
      run(100_000); // optimized before measuring
      v8.setFlagsFromString('--expose-gc');
      (runInNewContext('gc') as () => void)();
      // Collections that started while the loop ran (an entry comes after its collection, on the loop).
      const during: number[] = [];
      let from = Number.POSITIVE_INFINITY;
      let to = Number.NEGATIVE_INFINITY;
      const observer = new PerformanceObserver((list) => {
        for (const entry of list.getEntries())
          if (entry.startTime >= from && entry.startTime <= to) during.push(entry.startTime);
      });
      observer.observe({ entryTypes: ['gc'] });
      const before = v8.getHeapStatistics().used_heap_size;
      from = performance.now();
      run(1_000_000);
      to = performance.now();
      const grown = v8.getHeapStatistics().used_heap_size - before;
      await new Promise((resolve) => setTimeout(resolve, 50));
      observer.disconnect();
      // 16 bytes per token would be 16 MB: a scavenge (the young generation is smaller) or that much growth.
      expect(during).toEqual([]);
      expect(grown).toBeLessThan(1 << 20);
      expect(m.monitor.snapshot().queues.llm!.tokens!.owedOutput).toBe(2_000_000 - 1_100_000);
    },
  );

  it('the drain bounds are validated: WARN below CRITICAL, both positive', () => {
    expect(resolveThresholds().queue).toMatchObject({ tokenDrainWarnSeconds: 30, tokenDrainCriticalSeconds: 120 });
    expect(() => resolveThresholds({ queue: { tokenDrainWarnSeconds: 200 } })).toThrow(
      new InferSignalConfigError(
        'thresholds.queue.tokenDrainWarnSeconds',
        'must be below queue.tokenDrainCriticalSeconds (120), got 200',
      ),
    );
    expect(() => resolveThresholds({ queue: { tokenDrainCriticalSeconds: 0 } })).toThrow(
      /thresholds\.queue\.tokenDrainCriticalSeconds/,
    );
  });
});
