/**
 * A small inference API on the recipe's telemetry: `/infer` runs a
 * fixed-time "inference" through an InferSignal queue (concurrency 1),
 * `/metrics` is the app's Prometheus exporter, and the server's connections
 * are tracked. `listen(0)` takes a port the OS picks.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Monitor, ThresholdsInput } from '@infersignal/core';
import { instrumentServer } from '@infersignal/http';
import { startTelemetry, type Telemetry } from './telemetry';

export interface AppOptions {
  serviceName?: string;
  port?: number;
  host?: string;
  /** Milliseconds one inference takes. */
  serviceTimeMs?: number;
  /** Capacity of the `default` queue. */
  capacity?: number;
  /** Connections the API server is sized for. */
  connectionCapacity?: number;
  detectorIntervalMs?: number;
  thresholds?: ThresholdsInput;
  /** Core's export path (the instrumentation's default: producer). */
  exportMode?: 'api' | 'producer';
}

export interface App {
  readonly monitor: Monitor;
  readonly server: Server;
  /** `http://host:port` of the API; `/metrics` is on it too. */
  readonly url: string;
  close(): Promise<void>;
}

/** Starts the telemetry (the recipe), then the API on it. */
export async function startApp(options: AppOptions = {}): Promise<App> {
  const telemetry = startTelemetry(options.serviceName ?? 'inference-server', {
    detectorIntervalMs: options.detectorIntervalMs,
    thresholds: options.thresholds,
    ...(options.exportMode ? { exportMode: options.exportMode } : {}),
  });
  return serveApp(telemetry, options);
}

/** The API on telemetry that is already started. */
export async function serveApp(telemetry: Telemetry, options: AppOptions = {}): Promise<App> {
  const queue = telemetry.monitor.queue('default', { capacity: options.capacity ?? 64, concurrency: 1 });
  const serviceTimeMs = options.serviceTimeMs ?? 20;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path === '/metrics') return telemetry.metricsHandler(req, res);
    if (path === '/infer') {
      queue
        .run(() => new Promise((resolve) => setTimeout(resolve, serviceTimeMs)), { model: 'llama' })
        .then(
          () => res.end('ok'),
          () => {
            res.statusCode = 503;
            res.end('busy');
          },
        );
      return;
    }
    res.statusCode = 404;
    res.end();
  });
  instrumentServer(telemetry.monitor, server, { capacity: options.connectionCapacity ?? 64, name: 'api' });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  return {
    monitor: telemetry.monitor,
    server,
    url: `http://${address.address}:${address.port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await telemetry.monitor.close();
      await telemetry.sdk.shutdown();
    },
  };
}
