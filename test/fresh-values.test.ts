/**
 * The fresh suite (benchmarks/fresh.ts) judges "live values" by reading
 * three queue gauges out of a real scrape and comparing them with the
 * monitor's snapshot. Here, on a quiet server whose queue values are known,
 * that reader must find them equal, and a change must read as a difference:
 * otherwise the suite would call a live exposition stale, or a stale one live.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start, type InferSignal } from '@infersignal/node';
import { complete, difference, queueValues, type QueueValues } from '../benchmarks/lib/fresh-values';

let telemetry: InferSignal;
let metricsUrl: string;
beforeAll(async () => {
  telemetry = start({
    serviceName: 'fresh-values',
    prometheus: { host: '127.0.0.1', port: 0 },
    registerGlobals: false,
  });
  metricsUrl = (await telemetry.prometheus!.ready)!.url;
});
afterAll(async () => {
  await telemetry?.shutdown();
});

function truth(): Record<string, QueueValues> {
  const out: Record<string, QueueValues> = {};
  for (const [name, q] of Object.entries(telemetry.monitor.snapshot().queues))
    out[name] = { waiting: q.waiting, inFlight: q.inFlight, occupancy: q.occupancy };
  return out;
}

async function scrape(): Promise<string> {
  const res = await fetch(metricsUrl);
  expect(res.status).toBe(200);
  return res.text();
}

describe("fresh suite's reader of the queue gauges", () => {
  it('reads waiting, in flight and occupancy of every queue as the snapshot has them, and sees a change', async () => {
    // A name the exposition has to escape.
    const held = telemetry.monitor.queue('held "q"', { concurrency: 2, capacity: 8 });
    telemetry.monitor.queue('idle', { concurrency: 1, capacity: 4 });
    const tickets = Array.from({ length: 5 }, () => held.enqueue());
    tickets[0]!.start();
    tickets[1]!.start();
    const before = truth();
    expect(before['held "q"']).toEqual({ waiting: 3, inFlight: 2, occupancy: 5 / 8 });

    const found = queueValues(await scrape());
    expect(complete(found, before)).toBe(true);
    expect(difference(found, before)).toBe('');

    // One more starts: the old scrape no longer tells the truth, a new one does.
    tickets[2]!.start();
    const after = truth();
    expect(difference(found, after)).toBe('held "q" waiting 3≠2, held "q" inFlight 2≠3');
    expect(difference(queueValues(await scrape()), after)).toBe('');
    for (const t of tickets) t.end('completed');
  });
});
