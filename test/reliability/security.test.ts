/**
 * Security: the scrape endpoint binds to loopback by default; no header,
 * query-string, path, prompt or completion content reaches any exported
 * byte (Prometheus text, OTLP metric and trace payloads as received by a
 * collector, span attributes); label values are sanitised and length-capped.
 */
import { networkInterfaces } from 'node:os';
import { connect } from 'node:net';
import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { inferSignal as expressSignal, readinessRouter } from '@infersignal/express';
import { inferSignal as fastifySignal } from '@infersignal/fastify';
import { start } from '@infersignal/node';
import { decodeMetricsRequest, decodeTraceRequest } from '../../packages/node/test/helpers/otlp-decode';
import { figure, httpRequest, receiver, until } from './helpers';
import { express, listenExpress, listenFastify, newExpress, newFastify } from './servers';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const SECRET = 'sk-live-7Qz9XkR2mW4pL8vN';

/** Every string value (attribute values, names …) anywhere in a decoded OTLP request. */
function strings(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) strings(v, out);
  return out;
}

function externalIPv4(): string | undefined {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return undefined;
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.setTimeout(1000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

describe('security', () => {
  it('the Prometheus endpoint binds to 127.0.0.1 by default and is not reachable on other interfaces', async () => {
    const s = start({
      serviceName: 'sec-bind',
      prometheus: { port: 0 },
      registerGlobals: false,
      detectorIntervalMs: 0,
      eventLoop: false,
      logger: { warn() {} },
    });
    cleanup.push(() => s.shutdown());
    const address = (await s.prometheus!.ready)!;
    expect(address.host).toBe('127.0.0.1');
    expect(await canConnect('127.0.0.1', address.port)).toBe(true);
    const external = externalIPv4();
    if (external === undefined)
      console.log(
        '[reliability] security: no non-loopback IPv4 interface on this machine; only the bound host is checked',
      );
    else expect(await canConnect(external, address.port)).toBe(false);
    // The readiness route is a route of the app's own server: InferSignal opens no other port.
    figure('security bind', { host: address.host, externalInterface: external ?? 'none', reachableExternally: 'no' });
  });

  it('a secret in headers, query string, path, body and completion appears in no exported byte; labels are sanitised and capped', async () => {
    const collector = await receiver();
    cleanup.push(() => collector.close());
    const spans = new InMemorySpanExporter();
    const s = start({
      serviceName: 'sec',
      prometheus: { port: 0 },
      otlp: { endpoint: collector.url, intervalMs: 200, timeoutMs: 200 },
      traces: 'all', // every request's span is searched, not only the outliers'
      spanProcessors: [new SimpleSpanProcessor(spans)],
      registerGlobals: false,
      detectorIntervalMs: 0,
      eventLoop: false,
      logger: { warn() {} },
    });
    cleanup.push(() => s.shutdown());

    // Default adapter options: nothing from the request is chosen as a label.
    const ex = newExpress();
    ex.use(readinessRouter(s.monitor));
    ex.use(express.json());
    ex.use('/v1', expressSignal(s.monitor, { queue: 'express' }));
    ex.post('/v1/chat/:tenant', (req, _res) => {
      const signal = req.inferSignal!;
      const sse = signal.sse();
      signal.start();
      sse.send({ completion: `echo ${req.body.prompt} ${SECRET}` });
      sse.send(`token ${SECRET}`, { event: SECRET, id: SECRET });
      sse.end();
    });
    ex.get('/v1/models/:id', (req, res) => void res.json({ id: req.params.id }));
    const exServer = await listenExpress(ex);
    cleanup.push(() => exServer.close());
    const fa = newFastify();
    await fa.register(fastifySignal, { monitor: s.monitor, queue: 'fastify', readiness: true });
    fa.post('/v1/chat/:tenant', async (request) => ({
      completion: `echo ${(request.body as { prompt: string }).prompt}`,
    }));
    fa.get('/v1/models/:id', async (request) => ({ id: (request.params as { id: string }).id }));
    const faServer = await listenFastify(fa);
    cleanup.push(() => faServer.close());

    const agent = new Agent({ keepAlive: true });
    cleanup.push(() => agent.destroy());
    const headers = {
      authorization: `Bearer ${SECRET}`,
      'x-api-key': SECRET,
      cookie: `session=${SECRET}`,
      'user-agent': SECRET,
      'content-type': 'application/json',
      'x-model': SECRET,
    };
    const body = JSON.stringify({ model: SECRET, prompt: `Tell me about ${SECRET}`, api_key: SECRET });
    let answered = 0;
    for (const url of [exServer.url, faServer.url]) {
      for (let i = 0; i < 20; i++) {
        const chat = await httpRequest(`${url}/v1/chat/${SECRET}?api_key=${SECRET}&prompt=${SECRET}`, {
          agent,
          method: 'POST',
          headers,
          body,
        });
        const model = await httpRequest(`${url}/v1/models/${SECRET}?token=${SECRET}`, { agent, headers });
        const missing = await httpRequest(`${url}/v1/${SECRET}/nothing`, { agent, headers });
        expect(chat.status).toBe(200);
        expect(chat.body).toContain(SECRET); // the secret really went through the app
        expect(model.status).toBe(200);
        expect(missing.status).toBe(404);
        answered += 3;
      }
    }
    // A loader's error message can carry a path or a presigned URL: only its type may reach the span.
    await s.monitor
      .modelLoad('m', 'load', () => Promise.reject(new Error(`cannot read https://bucket/model.onnx?sig=${SECRET}`)))
      .catch(() => undefined);
    s.monitor.tick();

    // A label flood of hostile values: control characters, ANSI escapes, 10 000 characters.
    const hostile = `\u0000evil\nmodel\r\u001b[31m{label="x"} 1\u007f${'y'.repeat(10_000)}`;
    const q = s.monitor.queue('hostile');
    const ticket = q.enqueue(hostile);
    ticket.start();
    ticket.end('completed');

    // Push everything out: metrics and spans to the collector, a scrape, the readiness bodies.
    const before = collector.requests.length;
    await s.meterProvider.forceFlush();
    await s.tracerProvider!.forceFlush();
    await until(
      () => collector.requests.filter((r) => r.path === '/v1/metrics').length > 0 && collector.requests.length > before,
      5000,
      'OTLP exports',
    );
    const scrape = await (await fetch((await s.prometheus!.ready)!.url)).text();
    const readiness = [
      (await httpRequest(`${exServer.url}/healthz/ready`)).body,
      (await httpRequest(`${faServer.url}/healthz/ready`)).body,
    ];

    const otlpBytes = collector.requests.map((r) => r.body);
    const metricBodies = collector.requests.filter((r) => r.path === '/v1/metrics');
    const traceBodies = collector.requests.filter((r) => r.path === '/v1/traces');
    expect(metricBodies.length).toBeGreaterThanOrEqual(1);
    expect(traceBodies.length).toBeGreaterThanOrEqual(1);
    const finished = spans.getFinishedSpans();
    expect(finished.length).toBeGreaterThanOrEqual(2 * 20 * 2);
    const spanText = JSON.stringify(
      finished.map((sp) => ({
        name: sp.name,
        attributes: sp.attributes,
        events: sp.events,
        status: sp.status,
        resource: sp.resource.attributes,
      })),
    );

    const needle = Buffer.from(SECRET);
    const leaks = {
      scrape: scrape.includes(SECRET),
      otlpPayloads: otlpBytes.filter((b) => b.includes(needle)).length,
      spans: spanText.includes(SECRET),
      readiness: readiness.some((b) => b.includes(SECRET)),
    };
    expect(leaks).toEqual({ scrape: false, otlpPayloads: 0, spans: false, readiness: false });

    // Sanitised and capped: every label/attribute value ≤ 128 characters, no control character.
    const exportedStrings = [
      ...metricBodies.flatMap((r) => strings(decodeMetricsRequest(r.body))),
      ...traceBodies.flatMap((r) => strings(decodeTraceRequest(r.body))),
    ];
    const hostileLabel = exportedStrings.filter((v) => v.startsWith('evilmodel'));
    expect(hostileLabel.length).toBeGreaterThanOrEqual(1);
    for (const v of hostileLabel) {
      expect(v.length).toBe(128);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this pattern removes.
      expect(/[\u0000-\u001f\u007f]/.test(v)).toBe(false);
    }
    const promLabels = [...scrape.matchAll(/gen_ai_request_model="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]);
    const promHostile = promLabels.filter((v) => v.startsWith('evilmodel'));
    expect(promHostile.length).toBeGreaterThanOrEqual(1);
    // The exposition stays well-formed: the injected `{label="x"} 1` is inside a quoted, escaped value.
    for (const line of scrape.split('\n'))
      if (line && !line.startsWith('#'))
        expect(line, line.slice(0, 200)).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? -?[0-9.e+-]+|NaN|[+-]Inf$/);
    for (const v of promHostile) expect(v.replace(/\\(.)/g, '$1').length).toBeLessThanOrEqual(128);

    // Positive control: the grep finds the secret when the app opts it into a label itself.
    const control = newExpress();
    control.use(expressSignal(s.monitor, { queue: 'control', model: (req) => req.get('x-model') }));
    control.get('/c', (_req, res) => void res.end('ok'));
    const controlServer = await listenExpress(control);
    cleanup.push(() => controlServer.close());
    await httpRequest(`${controlServer.url}/c`, { headers: { 'x-model': SECRET } });
    const controlScrape = await (await fetch((await s.prometheus!.ready)!.url)).text();
    expect(controlScrape.includes(SECRET)).toBe(true);

    figure('security secret grep', {
      requests: answered,
      scrapeBytes: scrape.length,
      otlpPayloads: otlpBytes.length,
      otlpBytes: otlpBytes.reduce((n, b) => n + b.length, 0),
      spans: finished.length,
      secretHits: 0,
      hostileLabelLength: hostileLabel[0].length,
      controlFound: 'yes',
    });
  });
});
