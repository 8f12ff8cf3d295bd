/**
 * `@infersignal/http` without a framework: a plain `node:http` server on
 * 127.0.0.1:0 tracked with createHttpTracking, instrumented with
 * instrumentServer and probed with readinessAnswer, in producer export
 * mode — the connection signal's counters and histogram go through the
 * monitor's MetricProducer like the per-request metrics.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS } from '@infersignal/core';
import { createHttpTracking, instrumentServer, readinessAnswer } from '@infersignal/http';
import { until } from '../../../test/support/async';
import { testMonitor, type TestMonitor } from '../../../test/support/monitor';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

function get(port: number, agent: Agent, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

async function plainServer(t: TestMonitor, shed: boolean): Promise<{ server: Server; port: number }> {
  const tracking = createHttpTracking(
    t.monitor,
    { queue: { name: 'plain', capacity: 4 }, shed, model: 'tiny' },
    {
      source: 'plain',
    },
  );
  const server = createServer((req, res) => {
    if (req.url === '/ready') {
      const { status, body } = readinessAnswer(t.monitor, 'plain');
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
      return;
    }
    // Shed: answered already (503, Retry-After, HTTP_SHED_BODY).
    const tracked = tracking.open(req, res, '/sse');
    if (tracked === undefined) return;
    const sse = tracked.sse();
    sse.send('a');
    sse.send({ b: 2 }, { tokens: 3 });
    sse.end();
  });
  instrumentServer(t.monitor, server, { name: 'plain', capacity: 10 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { server, port: (server.address() as AddressInfo).port };
}

describe('a plain node:http server on @infersignal/http', () => {
  it('counts requests, SSE tokens and connections through the producer; snapshot and readiness see them', async () => {
    const t = testMonitor({ exportMode: 'producer', eventLoop: false });
    cleanup.push(() => t.close());
    const { port } = await plainServer(t, false);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    cleanup.push(() => agent.destroy());
    for (let i = 0; i < 3; i++) {
      const answer = await get(port, agent, '/sse');
      expect(answer).toEqual({ status: 200, body: 'data: a\n\ndata: {"b":2}\n\n' });
    }
    const ready = await get(port, agent, '/ready');
    expect(ready.status).toBe(200);
    const body = JSON.parse(ready.body);
    expect(body.queues.plain).toMatchObject({ completed: 3, capacity: 4 });
    expect(body.connections.plain).toMatchObject({ tls: false, open: 1, capacity: 10, opened: 1, rejected: 0 });
    // One keep-alive connection. The probe's own request is counted after the server's handler answered it
    // (instrumentServer's listener comes after it): of the 3 before, 2 reused the connection.
    expect(body.connections.plain.reuseRatio).toBe(2 / 3);

    agent.destroy();
    // The requests-per-connection histogram is recorded when the connection closes.
    const open = () => (t.monitor.snapshot().connections as Record<string, { open: number }>).plain!.open;
    await until(() => open() === 0, 5000, 'the keep-alive connection to close');

    const produced = await t.monitor.metricProducer!.collect();
    const names = (produced.resourceMetrics.scopeMetrics as Array<{ metrics: Array<{ descriptor: { name: string } }> }>)
      .flatMap((scope) => scope.metrics)
      .map((metric) => metric.descriptor.name);
    expect(names).toEqual(
      expect.arrayContaining([METRICS.connectionsOpened.name, METRICS.connectionsRequests.name, METRICS.requests.name]),
    );
    const exported = await t.collect();
    const server = { [ATTR.server]: 'plain' };
    expect(exported.value(METRICS.connectionsOpened.name, server)).toBe(1);
    expect(exported.histogram(METRICS.connectionsRequests.name, server)).toMatchObject({ count: 1, sum: 4 });
    expect(exported.value(METRICS.connectionsCapacity.name, server)).toBe(10);
    const done = { [ATTR.queue]: 'plain', [ATTR.model]: 'tiny', [ATTR.outcome]: 'completed' };
    expect(exported.value(METRICS.requests.name, done)).toBe(3);
    expect(exported.value(METRICS.streamTokens.name, { [ATTR.model]: 'tiny' })).toBe(12);
  });

  it('refuses options outside the dialect, naming the field, before making a queue', () => {
    const t = testMonitor({ eventLoop: false });
    cleanup.push(() => t.close());
    const field = (options: object) => {
      try {
        createHttpTracking(t.monitor, options as never, { source: 'plain' });
      } catch (error) {
        expect(error).toBeInstanceOf(InferSignalConfigError);
        return (error as InferSignalConfigError).field;
      }
      return undefined;
    };
    expect(field({ route: () => 'x' })).toBe('options.route');
    expect(field({ errorStatus: 700 })).toBe('options.errorStatus');
    expect(field({ queue: { name: 'q', capacity: 1.5 } })).toBe('options.queue.capacity');
    expect(field({ shed: 1 })).toBe('options.shed');
    expect(field({ autoStart: 'no' })).toBe('options.autoStart');
    expect(field({ model: '' })).toBe('options.model');
    expect(Object.keys(t.monitor.snapshot().queues)).toEqual([]);
    expect(() =>
      createHttpTracking(t.monitor, { route: () => 'x' } as never, { source: 'plain', keys: ['route'] }),
    ).not.toThrow();
  });
});

describe.each(['api', 'producer'] as const)('connection series at zero (%s export)', (exportMode) => {
  it('exports the rejected-connections counter of a server at 0 from instrumentServer, before any connection', async () => {
    const t = testMonitor({ exportMode });
    cleanup.push(() => t.close());
    const server = createServer((_req, res) => res.end('ok'));
    instrumentServer(t.monitor, server, { name: 'api', capacity: 4 });
    const exported = await t.collect();
    expect(exported.points(METRICS.connectionsRejected.name).map((p) => [p.attributes[ATTR.server], p.value])).toEqual([
      ['api', 0],
    ]);
  });
});
