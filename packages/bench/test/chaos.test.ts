import { afterEach, describe, expect, it } from 'vitest';
import { runBench } from '@infersignal/bench';
import { chaos, ChaosError, CHAOS_DEFAULTS } from '../src/chaos';
import { listen, type TestServer } from './helpers';

let server: TestServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
  delete process.env.NODE_ENV_TEST_UNUSED;
});

describe('chaos injection', () => {
  it('defaults (15 %, 200–1200 ms): failure share and latency range within tolerance', () => {
    const c = chaos({ ...CHAOS_DEFAULTS, seed: 42 });
    let failures = 0;
    let min = Infinity;
    let max = 0;
    let sum = 0;
    for (let i = 0; i < 10_000; i++) {
      const d = c.decide();
      if (d.fail) failures++;
      min = Math.min(min, d.delayMs);
      max = Math.max(max, d.delayMs);
      sum += d.delayMs;
    }
    // Binomial(10000, 0.15): sd = 36, so ±2 % is > 5 sd.
    expect(failures / 10_000).toBeGreaterThan(0.13);
    expect(failures / 10_000).toBeLessThan(0.17);
    expect(min).toBeGreaterThanOrEqual(200);
    expect(max).toBeLessThanOrEqual(1200);
    expect(sum / 10_000).toBeGreaterThan(680);
    expect(sum / 10_000).toBeLessThan(720);
    expect(c.stats).toEqual({ calls: 10_000, failures, delayed: 10_000 });
  });

  it('even distribution fails exactly the share; disabled when unconfigured', async () => {
    const c = chaos({ errorRate: 0.25, distribution: 'even' });
    const draws = Array.from({ length: 100 }, () => c.decide().fail);
    expect(draws.filter(Boolean).length).toBe(25);
    const off = chaos();
    expect(off.enabled).toBe(false);
    const fn = off.wrap(async (x: number) => x * 2);
    expect(await fn(21)).toBe(42);
    expect(off.stats.calls).toBe(0);
  });

  it('wrap() rejects with ChaosError without calling the function; user errors pass unchanged', async () => {
    let calls = 0;
    const all = chaos({ errorRate: 1 }).wrap(async () => ++calls);
    await expect(all()).rejects.toBeInstanceOf(ChaosError);
    expect(calls).toBe(0);
    const userError = new Error('mine');
    const none = chaos({ errorRate: 0, latencyMs: [1, 2] }).wrap(async () => {
      throw userError;
    });
    await expect(none()).rejects.toBe(userError);
  });

  it('refuses NODE_ENV=production unless forced; validates options', () => {
    const before = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      expect(() => chaos({ errorRate: 0.1 })).toThrow(/refuses to activate with NODE_ENV=production/);
      expect(chaos({ errorRate: 0.1, force: true }).enabled).toBe(true);
      expect(chaos().enabled).toBe(false); // unconfigured is fine anywhere
    } finally {
      process.env.NODE_ENV = before;
    }
    expect(() => chaos({ errorRate: 1.5 })).toThrow(/"errorRate"/);
    expect(() => chaos({ latencyMs: [10, 5] })).toThrow(/"latencyMs"/);
  });

  it('HTTP handler on a real server: the bench sees ~15 % 500s', async () => {
    const c = chaos({ errorRate: 0.15, seed: 3 });
    server = await listen(
      c.handler((_req, res) => {
        res.writeHead(200);
        res.end('ok');
      }),
    );
    const result = await runBench({
      target: server.url,
      method: 'GET',
      connections: 4,
      durationMs: 30_000,
      maxRequests: 2000,
    });
    const t = result.total;
    expect(t.requests).toBe(2000);
    expect(t.errors.server).toBe(c.stats.failures);
    expect(t.statuses['500']).toBe(c.stats.failures);
    expect(t.errors.server / 2000).toBeGreaterThan(0.12);
    expect(t.errors.server / 2000).toBeLessThan(0.18);
    expect(result.firstFailure).toMatchObject({ errorClass: 'server', detail: '500' });
  });
});
