import { Agent, get } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, createMonitor, type AlertEvent, type Monitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/fastify';
import { instrumentServer } from '@infersignal/http';
import { collect, createMeterProvider, type TestReader } from '../../../test/support/otel';
import { gate, until } from '../../../test/support/async';

let app: FastifyInstance | undefined;
let agent: Agent | undefined;
let monitor: Monitor | undefined;

afterEach(async () => {
  agent?.destroy();
  await app?.close();
  await monitor?.close();
  app = undefined;
  agent = undefined;
  monitor = undefined;
});

function setup(): { app: FastifyInstance; monitor: Monitor; reader: TestReader; alerts: AlertEvent[] } {
  const { provider, reader } = createMeterProvider();
  const alerts: AlertEvent[] = [];
  monitor = createMonitor({
    meterProvider: provider,
    detectorIntervalMs: 0,
    traces: false,
    eventLoop: false,
    onAlert: (event) => alerts.push(event),
  });
  app = Fastify({ forceCloseConnections: true });
  return { app, monitor, reader, alerts };
}

/** GET on a keep-alive agent; resolves with the status, rejects with the socket error. */
function request(url: string, via: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { agent: via }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    }).on('error', reject);
  });
}

const freeSockets = (via: Agent): number =>
  Object.values(via.freeSockets).reduce((n, list) => n + (list?.length ?? 0), 0);

describe('Fastify plugin: connections', () => {
  it('maxConnections 10, 20 concurrent keep-alive clients: 10 rejected, saturation alerts, then keep-alive reuse', async () => {
    const { app, monitor, reader, alerts } = setup();
    await app.register(inferSignal, { monitor, connections: { name: 'inference' } });
    app.server.maxConnections = 10;
    const held = gate();
    let arrived = 0;
    app.get('/v1/infer', async () => {
      arrived++;
      await held.wait;
      return { ok: true };
    });
    const url = `${await app.listen({ port: 0, host: '127.0.0.1' })}/v1/infer`;
    // The plugin's handle: instrumentServer on the same server returns it.
    const connections = instrumentServer(monitor, app.server);
    expect(connections.name).toBe('inference');

    // 20 requests at once on a keep-alive agent with room for 20 sockets: 20 connections are attempted. The
    // handler holds the first 10 until the other 10 were turned away at accept, so exactly 10 fit.
    agent = new Agent({ keepAlive: true, maxSockets: 20 });
    const first = Promise.allSettled(Array.from({ length: 20 }, () => request(url, agent!)));
    await until(() => connections.rejected === 10 && arrived === 10, 5000, '10 rejected and 10 held');

    const atPeak = await collect(reader);
    const attributes = { [ATTR.server]: 'inference' };
    expect(atPeak.points(METRICS.connectionsOpen.name).map((p) => [p.attributes, p.value])).toEqual([[attributes, 10]]);
    expect(atPeak.points(METRICS.connectionsCapacity.name).map((p) => p.value)).toEqual([10]);
    expect(atPeak.sum(METRICS.connectionsOpened.name, attributes)).toBe(10);
    expect(atPeak.sum(METRICS.connectionsRejected.name, attributes)).toBe(10);
    expect(connections.level).toBe('critical');
    // 9 of 10 open crossed 0.85 (warn), 10 of 10 crossed 0.95 (critical); one alert each, in that order.
    expect(alerts.map((a) => [a.signal, a.level, a.value, a.threshold, a.labels])).toEqual([
      ['connections', 'warn', 0.9, 0.85, { server: 'inference' }],
      ['connections', 'critical', 1, 0.95, { server: 'inference' }],
    ]);
    expect(alerts[1]!.message).toContain('10 of 10 connections open');
    expect(monitor.snapshot().active.map((a) => a.signal)).toContain('connections');
    expect(monitor.level()).toBe('critical');

    held.open();
    const results = await first;
    expect(
      results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<number>).value),
    ).toEqual(Array(10).fill(200));
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(10);
    for (const r of refused) expect(['ECONNRESET', 'EPIPE']).toContain((r.reason as NodeJS.ErrnoException).code);

    // Second round: the 10 kept-alive sockets each carry one more request; no new connection is opened.
    await until(() => freeSockets(agent!) === 10, 5000, '10 free keep-alive sockets');
    const second = await Promise.all(Array.from({ length: 10 }, () => request(url, agent!)));
    expect(second).toEqual(Array(10).fill(200));
    expect(connections.opened).toBe(10);

    // Clients leave: the level steps down with 10 % hysteresis (critical until below 0.855, warn until below 0.765).
    agent.destroy();
    await until(() => connections.open === 0, 5000, 'all connections closed');
    expect(alerts.slice(2).map((a) => [a.level, a.value])).toEqual([
      ['warn', 0.8],
      ['ok', 0.7],
    ]);
    expect(connections.level).toBe('ok');

    const after = await collect(reader);
    // 10 connections closed, each having served 2 requests.
    const perConnection = after.points(METRICS.connectionsRequests.name);
    expect(perConnection.map((p) => (p.value as { count: number; sum: number }).count)).toEqual([10]);
    expect(perConnection.map((p) => (p.value as { count: number; sum: number }).sum)).toEqual([20]);
    // Of 20 requests, the 10 of the second round came on a reused connection.
    expect(after.points(METRICS.connectionsReuseRatio.name).map((p) => p.value)).toEqual([0.5]);
    expect(after.points(METRICS.connectionsOpen.name).map((p) => p.value)).toEqual([0]);
    expect(after.sum(METRICS.connectionsRejected.name, attributes)).toBe(10);
    // Plain HTTP: no TLS instruments.
    expect(after.points(METRICS.tlsHandshakeDuration.name)).toHaveLength(0);
    expect(after.points(METRICS.tlsSessionReuseRatio.name)).toHaveLength(0);
    // The plugin's request tracking saw the 20 requests that reached the server.
    expect(monitor.snapshot().queues.http!.completed).toBe(20);
    expect(monitor.snapshot().internalErrors).toBe(0);
  });

  it('judges saturation against a configured capacity without maxConnections, and stops on close', async () => {
    const { app, monitor, alerts } = setup();
    await app.register(inferSignal, {
      monitor,
      connections: { capacity: 4, saturationWarn: 0.5, saturationCritical: 0.75 },
    });
    const held = gate();
    app.get('/v1/infer', async () => {
      await held.wait;
      return { ok: true };
    });
    const url = `${await app.listen({ port: 0, host: '127.0.0.1' })}/v1/infer`;
    const connections = instrumentServer(monitor, app.server);
    expect(connections.name).toBe('http');
    expect(connections.capacity).toBe(4);

    agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const running = Promise.all(Array.from({ length: 4 }, () => request(url, agent!)));
    await until(() => connections.open === 4, 5000, '4 open');
    // 3 of 4 (0.75) is not above 0.75: warn; 4 of 4 is critical. Nothing rejected: no limit in Node.
    expect(alerts.map((a) => [a.level, a.value, a.threshold])).toEqual([
      ['warn', 0.75, 0.5],
      ['critical', 1, 0.75],
    ]);
    expect(connections.rejected).toBe(0);
    held.open();
    expect(await running).toEqual([200, 200, 200, 200]);

    // Closing the app stops the instrumentation (onClose), which also clears the active alert.
    await app.close();
    expect(connections.level).toBe('ok');
    expect(alerts.at(-1)!.level).toBe('ok');
    expect(monitor.snapshot().active.filter((a) => a.signal === 'connections')).toEqual([]);
    expect(app.server.listenerCount('drop')).toBe(0);
  });

  it('fails registration on a bad connections option, naming the field', async () => {
    const { app, monitor } = setup();
    await expect(app.register(inferSignal, { monitor, connections: { capcity: 4 } as never }).ready()).rejects.toThrow(
      /options\.connections\.capcity/,
    );
    const other = Fastify();
    await expect(other.register(inferSignal, { monitor, connections: 'yes' as never }).ready()).rejects.toThrow(
      /options\.connections/,
    );
    await other.close();
  });
});
