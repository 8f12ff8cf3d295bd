/**
 * A picker-style router in front of two replicas of the llama-completions example, as the Gateway API
 * Inference Extension's endpoint picker routes: it scrapes each replica's /metrics every 50 ms through the
 * generated engine config, scores a replica by max(queued / 5, kv / 0.8) (the saturation thresholds of
 * core's config), counts a replica whose last good scrape is older than 200 ms as fully saturated (at
 * least 1), and sends each request to the lowest score (ties alternate). One replica is slowed down by long generations that
 * did not come through the router (clients of its own); the router must send at least 90 % of its
 * requests to the other. Two real servers on 127.0.0.1:0 with the generated model, a bounded request count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_THRESHOLDS } from '../packages/core/src/config';
import { engineConfig } from '../packages/rules/src/kubernetes';
import { startServer, type RunningServer } from '../examples/llama-completions/src/server';
import { pool, sleep, until } from './support/async';
import { read, saturation, type Reading } from './support/picker';

const REQUESTS = 40;
const ROUTER_CONCURRENCY = 2;
const BACKGROUND_CLIENTS = 8;
const SCRAPE_MS = 50;
const STALE_MS = 200;

interface Replica {
  name: string;
  server: RunningServer;
  reading: Reading | null;
  readAt: number;
  routed: number;
}

describe('a picker-style router over two llama-completions replicas', () => {
  const replicas: Replica[] = [];
  const engine = engineConfig({ queueName: 'llama:tiny-llama', model: 'tiny-llama' });
  beforeAll(async () => {
    for (const name of ['healthy', 'slowed']) {
      const server = await startServer({
        port: 0,
        sequences: 2,
        maxWaiting: 32,
        registerGlobals: false,
        thresholds: { eventLoop: { backpressure: false } },
      });
      replicas.push({ name, server, reading: null, readAt: 0, routed: 0 });
    }
  });
  afterAll(async () => {
    for (const replica of replicas) await replica.server.close();
  });

  it('sends at least 90 % of the requests to the replica that is not slowed down', async () => {
    const [healthy, slowed] = replicas as [Replica, Replica];
    let stop = false;

    // The slowed replica: its own clients keep both sequences on long generations and six more waiting
    // (6 / 5 > 1: saturated even against a healthy replica whose reading went stale).
    const background = Array.from({ length: BACKGROUND_CLIENTS }, async (_, c) => {
      while (!stop) {
        const response = await fetch(`${slowed.server.url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ prompt: `background ${c}`, max_tokens: 200 }),
        }).catch(() => null);
        await response?.arrayBuffer();
        // A refused client waits before it comes back, as a polite one would.
        if (response?.status !== 200) await sleep(100);
      }
    });
    await until(() => slowed.server.model.queue.waiting >= 4, 10_000, 'the slowed replica to queue');

    // The picker's data layer: a scrape of every replica every 50 ms, off the request path.
    const scrapeLoop = (async () => {
      while (!stop) {
        const started = performance.now();
        await Promise.all(
          replicas.map(async (replica) => {
            try {
              const text = await (await fetch(replica.server.metricsUrl)).text();
              replica.reading = read(text, engine);
              replica.readAt = performance.now();
            } catch {
              // A failed scrape leaves the old reading, which goes stale.
            }
          }),
        );
        await sleep(Math.max(0, SCRAPE_MS - (performance.now() - started)));
      }
    })();
    await until(() => replicas.every((r) => r.reading !== null), 5000, 'a first scrape of both');

    let tie = 0;
    let stalePicks = 0;
    const score = (replica: Replica) => {
      const value = saturation(replica.reading!, DEFAULT_THRESHOLDS.saturation);
      if (performance.now() - replica.readAt <= STALE_MS) return value;
      stalePicks++;
      return Math.max(value, 1);
    };
    const pick = (): Replica => {
      const [a, b] = [score(healthy), score(slowed)];
      if (a === b) return tie++ % 2 === 0 ? healthy : slowed;
      return a < b ? healthy : slowed;
    };

    const statuses: number[] = [];
    try {
      await pool(REQUESTS, ROUTER_CONCURRENCY, async (i) => {
        const replica = pick();
        replica.routed++;
        const response = await fetch(`${replica.server.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ messages: [{ role: 'user', content: `request ${i}` }], max_tokens: 8 }),
        });
        await response.arrayBuffer();
        statuses.push(response.status);
      });
    } finally {
      stop = true;
      await scrapeLoop;
      await Promise.all(background);
    }

    const share = healthy.routed / REQUESTS;
    console.log(
      `[router] ${healthy.routed}/${REQUESTS} to the healthy replica (${(share * 100).toFixed(0)} %), ${slowed.routed} to the slowed one; ${stalePicks} stale readings`,
    );
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(healthy.routed + slowed.routed).toBe(REQUESTS);
    expect(share).toBeGreaterThanOrEqual(0.9);
  }, 120_000);
});
