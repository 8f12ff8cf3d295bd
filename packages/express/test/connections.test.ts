import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request, createServer as createHttpsServer, type Server } from 'node:https';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import express from 'express';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ATTR, InferSignalConfigError, METRICS, createMonitor, type AlertEvent, type Monitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/express';
import { instrumentServer } from '@infersignal/http';
import { collect, createMeterProvider } from '../../../test/support/otel';
import { until } from '../../../test/support/async';

/**
 * A self-signed certificate for 127.0.0.1, made by openssl in a temp dir
 * (node:crypto can make keys but not X.509 certificates). Null, with the
 * reason printed, when openssl is not installed.
 */
function selfSigned(): { key: Buffer; cert: Buffer } | null {
  const dir = mkdtempSync(join(tmpdir(), 'infersignal-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'pipe', timeout: 20_000 },
    );
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  } catch (error) {
    console.warn(
      `skipping TLS tests: openssl could not make a certificate (${error instanceof Error ? error.message : String(error)})`,
    );
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const credentials = selfSigned();
const SERVER = ATTR.server;

let server: Server | undefined;
let monitor: Monitor | undefined;

afterEach(async () => {
  if (server?.listening) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
  }
  await monitor?.close();
  server = undefined;
  monitor = undefined;
});

afterAll(() => {
  if (!credentials) console.warn('TLS connection tests were skipped: openssl is not available on this machine');
});

/** One HTTPS GET on a fresh connection (the agent does not keep it alive); resolves with the body. */
function get(port: number, agent: Agent, ca: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/infer', agent, ca }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Plain HTTP bytes on the TLS port: the server answers with a TLS error (ERR_SSL_HTTP_REQUEST). */
function plainHttp(port: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1', () =>
      socket.write('GET /v1/infer HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
    );
    socket.on('error', () => undefined);
    socket.resume();
    socket.on('close', () => resolve());
  });
}

/** A client that only speaks TLS 1.1: below Node's default minVersion (TLS 1.2), so the server refuses it. */
function oldTls(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    let code: string | undefined;
    const socket = tlsConnect({
      host: '127.0.0.1',
      port,
      minVersion: 'TLSv1',
      maxVersion: 'TLSv1.1',
      // OpenSSL 3's default security level (Node 22 and 24) forbids the client to offer TLS 1.1 at all.
      ciphers: 'DEFAULT:@SECLEVEL=0',
      rejectUnauthorized: false,
    });
    socket.on('error', (error: NodeJS.ErrnoException) => (code = error.code));
    socket.on('close', () => resolve(code));
  });
}

describe.skipIf(!credentials)('instrumentServer on an Express HTTPS server', () => {
  it('times 50 handshakes, counts 5 bad clients by error code and measures session reuse', async () => {
    const { provider, reader } = createMeterProvider();
    const alerts: AlertEvent[] = [];
    monitor = createMonitor({
      meterProvider: provider,
      detectorIntervalMs: 0,
      traces: false,
      eventLoop: false,
      onAlert: (e) => alerts.push(e),
    });
    const app = express();
    app.use(inferSignal(monitor));
    app.get('/v1/infer', (_req, res) => {
      res.json({ ok: true });
    });
    server = createHttpsServer({ key: credentials!.key, cert: credentials!.cert }, app);
    const connections = instrumentServer(monitor, server, { name: 'api' });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;

    // 50 requests, each on its own connection (no keep-alive), one after another, through one agent: the
    // first handshake is a full one, the agent caches the TLS 1.3 ticket and the other 49 resume the session.
    const agent = new Agent({ keepAlive: false, maxCachedSessions: 10 });
    for (let i = 0; i < 50; i++) expect(await get(port, agent, credentials!.cert)).toBe('{"ok":true}');
    agent.destroy();

    // Five bad clients: three send plain HTTP to the TLS port, two offer only TLS 1.1.
    for (let i = 0; i < 3; i++) await plainHttp(port);
    const refused = [await oldTls(port), await oldTls(port)];
    expect(refused.every((code) => typeof code === 'string')).toBe(true);

    await until(
      () => connections.handshakeFailures === 5 && connections.open === 0,
      5000,
      '5 failures and every connection closed',
    );
    const exported = await collect(reader);
    const attributes = { [SERVER]: 'api' };

    // Exactly the 50 successful handshakes are timed; the 5 failures are not.
    const handshakes = exported.points(METRICS.tlsHandshakeDuration.name);
    expect(handshakes).toHaveLength(1);
    expect(handshakes[0]!.attributes).toEqual(attributes);
    const histogram = handshakes[0]!.value as { count: number; sum: number; min?: number; max?: number };
    expect(histogram.count).toBe(50);
    // Loopback handshakes take more than nothing and far less than the 5 s the test allows.
    expect(histogram.min).toBeGreaterThan(0);
    expect(histogram.max).toBeLessThan(5);

    expect(exported.sum(METRICS.tlsHandshakeFailures.name, attributes)).toBe(5);
    expect(exported.sum(METRICS.tlsHandshakeFailures.name, { [ATTR.errorType]: 'ERR_SSL_HTTP_REQUEST' })).toBe(3);
    expect(exported.sum(METRICS.tlsHandshakeFailures.name, { [ATTR.errorType]: 'ERR_SSL_UNSUPPORTED_PROTOCOL' })).toBe(
      2,
    );
    expect(exported.values(METRICS.tlsHandshakeFailures.name, ATTR.errorType)).toEqual([
      'ERR_SSL_HTTP_REQUEST',
      'ERR_SSL_UNSUPPORTED_PROTOCOL',
    ]);

    // 49 of 50 handshakes resumed a session.
    expect(connections.handshakes).toBe(50);
    expect(exported.points(METRICS.tlsSessionReuseRatio.name).map((p) => p.value)).toEqual([49 / 50]);

    // 55 connections accepted (50 good + 5 bad), all closed; each good one carried exactly one request.
    expect(exported.sum(METRICS.connectionsOpened.name, attributes)).toBe(55);
    expect(exported.points(METRICS.connectionsOpen.name).map((p) => p.value)).toEqual([0]);
    const perConnection = exported.points(METRICS.connectionsRequests.name);
    expect(perConnection.map((p) => (p.value as { count: number }).count)).toEqual([50]);
    expect(perConnection.map((p) => (p.value as { sum: number }).sum)).toEqual([50]);
    // No connection served a second request: keep-alive reuse share 0.
    expect(exported.points(METRICS.connectionsReuseRatio.name).map((p) => p.value)).toEqual([0]);

    // No maxConnections and no capacity: no capacity gauge, no saturation alert, nothing rejected.
    expect(exported.points(METRICS.connectionsCapacity.name)).toHaveLength(0);
    expect(exported.sum(METRICS.connectionsRejected.name)).toBe(0);
    expect(alerts.filter((a) => a.signal === 'connections')).toEqual([]);
    // The request middleware saw the same 50 requests.
    expect(monitor.snapshot().queues.http!.completed).toBe(50);
    expect(monitor.snapshot().internalErrors).toBe(0);
  });

  it('stops on the server close: its listeners are removed and the name can be used again', async () => {
    monitor = createMonitor({ detectorIntervalMs: 0, traces: false, eventLoop: false });
    const first = createHttpsServer({ key: credentials!.key, cert: credentials!.cert }, (_req, res) => res.end('ok'));
    const events = ['connection', 'request', 'secureConnection', 'tlsClientError', 'drop', 'close'];
    const counts = () => events.map((event) => first.listenerCount(event));
    const before = counts();
    const handle = instrumentServer(monitor, first);
    expect(handle.name).toBe('https');
    expect(handle.tls).toBe(true);
    // Same server again: the same handle, not a second set of listeners.
    expect(instrumentServer(monitor, first)).toBe(handle);
    expect(counts()).toEqual(before.map((n) => n + 1)); // one listener per event, once
    // Another server under a name already in use is a config error naming the field.
    const other = createHttpsServer({ key: credentials!.key, cert: credentials!.cert });
    expect(() => instrumentServer(monitor!, other)).toThrow(InferSignalConfigError);
    expect(() => instrumentServer(monitor!, other)).toThrow(/options\.name/);

    await new Promise<void>((resolve) => first.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => first.close(() => resolve()));
    expect(counts()).toEqual(before);
    // The name is free again.
    expect(instrumentServer(monitor, other).name).toBe('https');
  });
});

describe('instrumentServer options', () => {
  it('rejects bad options at the call, naming the field', async () => {
    monitor = createMonitor({ detectorIntervalMs: 0, traces: false, eventLoop: false });
    const app = express();
    const plain = (await import('node:http')).createServer(app);
    expect(() => instrumentServer(monitor!, plain, { capacity: 0 })).toThrow(/options\.capacity/);
    expect(() => instrumentServer(monitor!, plain, { saturationWarn: 0.9, saturationCritical: 0.5 })).toThrow(
      /options\.saturationCritical/,
    );
    expect(() => instrumentServer(monitor!, plain, { reuseWindow: 1.5 })).toThrow(/options\.reuseWindow/);
    expect(() => instrumentServer(monitor!, plain, { capcity: 4 } as never)).toThrow(/options\.capcity/);
    expect(() => instrumentServer(monitor!, {} as never)).toThrow(/"server"/);
    // Nothing was attached by the failed calls.
    expect(plain.listenerCount('connection')).toBe(1);
    expect(instrumentServer(monitor, plain).name).toBe('http');
    expect(plain.listenerCount('connection')).toBe(2);
  });
});
