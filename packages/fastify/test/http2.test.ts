/**
 * The plugin on Fastify's HTTP/2 server (`http2: true`, cleartext h2c),
 * driven by Node's own HTTP/2 client: the raw reply is an
 * `Http2ServerResponse`, not a `ServerResponse`, and the lifecycle must
 * tell a finished response from a cut-off stream there too.
 */
import { connect, constants, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ATTR, METRICS, createMonitor, type Monitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/fastify';
import { collect, createMeterProvider } from '../../../test/support/otel';
import { until } from '../../../test/support/async';
import { OPT_IN_NAMES } from '../../core/src/opt-in';

let app: { close(): Promise<unknown> } | undefined;
let monitor: Monitor | undefined;
let client: ClientHttp2Session | undefined;

afterEach(async () => {
  client?.destroy();
  await app?.close();
  await monitor?.close();
  app = monitor = client = undefined;
});

/** One HTTP/2 request on `session`: its response headers and body. */
function get(session: ClientHttp2Session, path: string): Promise<{ headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path });
    let headers: IncomingHttpHeaders = {};
    let body = '';
    stream.setEncoding('utf8');
    stream.on('response', (h) => (headers = h));
    stream.on('data', (chunk: string) => (body += chunk));
    stream.on('end', () => resolve({ headers, body }));
    stream.on('error', reject);
    stream.end();
  });
}

describe('Fastify over HTTP/2', () => {
  it('counts finished responses completed, an SSE stream with its tokens, and a cancelled stream cancelled', async () => {
    const { provider, reader } = createMeterProvider();
    monitor = createMonitor({
      optInMetrics: OPT_IN_NAMES,
      meterProvider: provider,
      detectorIntervalMs: 0,
      traces: false,
      eventLoop: false,
    });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const server = Fastify({ http2: true });
      app = server;
      await server.register(inferSignal, { monitor });
      let held = 0;
      server.get('/v1/infer', async () => ({ ok: true }));
      server.get('/v1/sse', async (request) => {
        const sse = request.inferSignal!.sse();
        for (let i = 0; i < 3; i++) sse.send({ token: i });
        sse.end();
      });
      server.get('/v1/hold', () => {
        held++;
        return new Promise(() => {});
      });
      client = connect(await server.listen({ port: 0, host: '127.0.0.1' }));

      expect(JSON.parse((await get(client, '/v1/infer')).body)).toEqual({ ok: true });
      const sse = await get(client, '/v1/sse');
      expect(sse.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      expect(sse.body.split('\n\n').filter(Boolean)).toHaveLength(3);
      const hold = client.request({ ':path': '/v1/hold' });
      hold.on('error', () => {});
      hold.end();
      await until(() => held === 1, 5000, 'the held request at its handler');
      hold.close(constants.NGHTTP2_CANCEL);
      await until(() => monitor!.snapshot().queues.http.completed === 3, 5000, 'three requests counted');

      const queue = monitor.snapshot().queues.http;
      expect(queue.waiting + queue.inFlight).toBe(0);
      const out = await collect(reader);
      expect(out.sum(METRICS.requests.name, { [ATTR.outcome]: 'completed' })).toBe(2);
      expect(out.sum(METRICS.requests.name, { [ATTR.outcome]: 'cancelled' })).toBe(1);
      expect(out.sum(METRICS.streams.name, { [ATTR.outcome]: 'completed' })).toBe(1);
      expect(out.sum(METRICS.streamTokens.name)).toBe(3);
      // Started at their heads (auto-start): the two answered requests waited and ran; the held one never started.
      expect(out.count(METRICS.queueWait.name)).toBe(2);
      expect(out.count(METRICS.inferenceDuration.name)).toBe(2);
      // HTTP/2 forbids connection-specific headers: Node drops them with a warning, once a process.
      expect(sse.headers.connection).toBeUndefined();
      expect(warnings.map((w) => w.message).filter((m) => /connection header/i.test(m))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
