import type http from 'node:http';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { createMonitor, type Monitor } from '@infersignal/core';
import { sleep } from '../../../test/support/async';
import { serve, type Running } from '../../../test/support/http';

export type TestServer = Running;

/** A loopback server whose idle keep-alive outlasts a load run (the load generators reuse connections). */
export const listen = (handler: http.RequestListener): Promise<TestServer> =>
  serve(handler, { keepAliveTimeoutMs: 30_000 });

export { sleep };

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
 * Prometheus exporter on /metrics. `shed: false` admits every request: a
 * run that must not fail, whatever pauses a loaded machine puts in it.
 */
export async function startQueueServer(
  options: { workMs?: number; concurrency?: number; detectorIntervalMs?: number; shed?: boolean } = {},
): Promise<QueueServer> {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [exporter] });
  const monitor = createMonitor({
    meterProvider,
    detectorIntervalMs: options.detectorIntervalMs ?? 100,
    serviceName: 'bench-test',
    // The queue is this server's bottleneck, and its 503s say so: a loaded machine pausing the process shows as
    // event-loop delay, which would otherwise shed on its own.
    thresholds: { eventLoop: { backpressure: false } },
  });
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
    if (!admission.admit && options.shed !== false) {
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
