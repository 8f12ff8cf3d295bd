import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, type AlertEvent } from '../src/index';
import { setup } from './helpers';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise((r) => {
          s.closeAllConnections();
          s.close(r);
        }),
    ),
  );
});

function receiver(
  handler: (body: Record<string, unknown>, req: IncomingMessage, respond: (status: number) => void) => void,
): Promise<string> {
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => handler(JSON.parse(data), req, (status) => res.writeHead(status).end()));
  });
  servers.push(server);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`)),
  );
}

function occupancyAlert(t: ReturnType<typeof setup>) {
  const queue = t.monitor.queue('q', { capacity: 2 });
  queue.enqueue();
  queue.enqueue();
  t.monitor.tick();
}

describe('alerts', () => {
  it('a listener that throws is counted, warned once, and other listeners still run', async () => {
    const t = setup({
      onAlert: () => {
        throw new Error('pager broke');
      },
    });
    const seen: AlertEvent[] = [];
    t.monitor.onAlert((e) => seen.push(e));
    occupancyAlert(t);
    expect(seen.map((e) => e.signal)).toEqual(['queue_occupancy']);
    const metrics = await t.collect();
    expect(metrics.sum(METRICS.internalErrors.name, { [ATTR.errorSource]: 'onAlert' })).toBe(1);
    expect(metrics.sum(METRICS.alerts.name, { [ATTR.signal]: 'queue_occupancy', [ATTR.level]: 'critical' })).toBe(1);
    expect(t.warnings).toHaveLength(1);
    expect(t.monitor.snapshot().active).toHaveLength(1);
    expect(t.monitor.level()).toBe('critical');
  });

  it('webhook: posts a Slack-compatible body to a real HTTP receiver', async () => {
    const bodies: Record<string, unknown>[] = [];
    const url = await receiver((body, _req, respond) => {
      bodies.push(body);
      respond(200);
    });
    const t = setup({ serviceName: 'llm-gateway' });
    const sink = t.monitor.webhook(url);
    occupancyAlert(t);
    await sink.flush(5000);
    expect(sink.delivered).toBe(1);
    expect(bodies).toHaveLength(1);
    expect(bodies[0].text).toBe('[CRITICAL] llm-gateway: queue_occupancy CRITICAL (queue=q): 1 > 0.85');
    expect((bodies[0].attachments as Array<{ color: string }>)[0].color).toBe('#e01e5a');
    expect(bodies[0].infersignal).toMatchObject({
      service: 'llm-gateway',
      signal: 'queue_occupancy',
      level: 'critical',
      value: 1,
    });
  });

  it('webhook answering 500 is retried with backoff, then dropped with a count', async () => {
    const times: number[] = [];
    const url = await receiver((_b, _r, respond) => {
      times.push(performance.now());
      respond(500);
    });
    const t = setup();
    const sink = t.monitor.webhook(url, { retries: 2, backoffMs: 50 });
    occupancyAlert(t);
    await sink.flush(5000);
    expect(times).toHaveLength(3);
    // Each retry waits its backoff (50 ms, then 100 ms) after the answer; a timer may fire up to 1 ms early.
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(50 - 1);
    expect(times[2] - times[1]).toBeGreaterThanOrEqual(100 - 1);
    expect(sink.dropped).toBe(1);
    const metrics = await t.collect();
    expect(metrics.sum(METRICS.webhookDropped.name)).toBe(1);
  });

  it('a slow (10 s) or down webhook does not delay ticket.end() and the queue stays bounded', async () => {
    const slowUrl = await receiver(() => {
      /* never answers within the test */
    });
    const t = setup();
    const slowTimeoutMs = 10_000;
    const slow = t.monitor.webhook(slowUrl, { timeoutMs: slowTimeoutMs, retries: 0, maxQueue: 5 });
    const down = t.monitor.webhook('http://127.0.0.1:1/hook', { retries: 1, backoffMs: 10, maxQueue: 5 });
    // 50 alert events: flap one signal between levels.
    for (let i = 0; i < 50; i++) t.monitor.report('custom', i % 2 ? 'ok' : 'warn', i, 1, { n: String(i % 2) });
    for (let i = 0; i < 50; i++) t.monitor.report('custom2', 'warn', i, 1, { n: String(i) });
    expect(slow.queued).toBeLessThanOrEqual(5);
    expect(down.queued).toBeLessThanOrEqual(5);
    const queue = t.monitor.queue('q');
    const started = performance.now();
    for (let i = 0; i < 1000; i++) {
      const ticket = queue.enqueue();
      ticket.start();
      ticket.end();
    }
    const elapsedMs = performance.now() - started;
    // Waiting on one delivery to the slow receiver would take its whole timeout (it never answers).
    expect(elapsedMs).toBeLessThan(slowTimeoutMs);
    expect(slow.dropped).toBeGreaterThanOrEqual(45);
    slow.close();
    await down.flush(3000);
    down.close();
    expect(down.delivered).toBe(0);
  });

  it('rejects a malformed webhook url at creation', () => {
    const t = setup();
    expect(() => t.monitor.webhook('not a url')).toThrow(/invalid webhook url/);
    expect(() => t.monitor.webhook('ftp://x/y')).toThrow(/http/);
  });
});
