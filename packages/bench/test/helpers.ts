import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { createMonitor, type Monitor } from '@infersignal/core';

export interface TestServer {
  url: string;
  server: http.Server;
  close(): Promise<void>;
}

export async function listen(handler: http.RequestListener): Promise<TestServer> {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function drain(req: http.IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    req.on('data', () => {});
    req.on('end', resolve);
    req.on('error', () => resolve());
  });
}

export interface QueueServer extends TestServer {
  monitor: Monitor;
  metricsUrl: string;
  shed: number;
  served: number;
  close(): Promise<void>;
}

/**
 * A server of known capacity: core's queue with concurrency 2 and 20 ms of
 * work per request (100 req/s at most). It sheds with 503 when the queue's
 * admission check says CRITICAL, and serves its metrics through the real
 * Prometheus exporter on /metrics.
 */
export async function startQueueServer(options: { workMs?: number; concurrency?: number; detectorIntervalMs?: number } = {}): Promise<QueueServer> {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [exporter] });
  const monitor = createMonitor({ meterProvider, detectorIntervalMs: options.detectorIntervalMs ?? 100, serviceName: 'bench-test' });
  const tracker = monitor.queue('infer', { concurrency: options.concurrency ?? 2, capacity: 1000 });
  const workMs = options.workMs ?? 20;
  const state = { shed: 0, served: 0 };
  const base = await listen(async (req, res) => {
    if (req.url === '/metrics') {
      exporter.getMetricsRequestHandler(req, res);
      return;
    }
    await drain(req);
    const admission = tracker.admit();
    if (!admission.admit) {
      state.shed++;
      tracker.reject();
      res.writeHead(503, { 'retry-after': String(admission.retryAfterSeconds), 'content-type': 'application/json' });
      res.end('{"error":"overloaded"}');
      return;
    }
    try {
      await tracker.run(() => sleep(workMs));
      state.served++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"output":[0.1,0.2]}');
    } catch {
      res.writeHead(500);
      res.end();
    }
  });
  return {
    ...base,
    monitor,
    metricsUrl: `${base.url}/metrics`,
    get shed() {
      return state.shed;
    },
    get served() {
      return state.served;
    },
    async close() {
      await base.close();
      await monitor.close();
      await meterProvider.shutdown();
    },
  };
}
