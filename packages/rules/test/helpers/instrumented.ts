/**
 * A tiny instrumented inference server for the tests: InferSignal through
 * `@infersignal/node`'s `start()` (real OTel MeterProvider and Prometheus
 * exporter with the Collector-style names) on a free loopback port, and an
 * HTTP API whose `/infer` runs a fixed-time "inference" through core's
 * queue with concurrency 1, so a few concurrent clients overload it. The
 * API server is instrumented with `instrumentServer` (connection capacity
 * `connectionCapacity`), so the connection gauges exist too.
 */
import { createServer, type Server } from 'node:http';
import type { ThresholdsInput } from '@infersignal/core';
import { instrumentServer } from '@infersignal/http';
import { start, type InferSignal } from '@infersignal/node';

export interface InstrumentedServer {
  readonly signal: InferSignal;
  /** `http://127.0.0.1:PORT` of the API. */
  readonly url: string;
  /** `host:port` of the Prometheus exporter. */
  readonly metricsTarget: string;
  readonly metricsUrl: string;
  close(): Promise<void>;
}

export interface InstrumentedServerOptions {
  serviceTimeMs: number;
  /** Queue capacity of the `default` queue. */
  capacity: number;
  /** Detector tick period (default 250 ms; 0: the test calls monitor.tick()). */
  detectorIntervalMs?: number;
  /** Merged over the helper's own thresholds, group by group. */
  thresholds?: ThresholdsInput;
  /** Connections the API server is sized for (instrumentServer's capacity, default 64). */
  connectionCapacity?: number;
}

export async function startInstrumentedServer(options: InstrumentedServerOptions): Promise<InstrumentedServer> {
  const signal = start({
    serviceName: 'inference-server',
    prometheus: { host: '127.0.0.1', port: 0 },
    otlp: false,
    traces: false,
    registerGlobals: false,
    detectorIntervalMs: options.detectorIntervalMs ?? 250,
    logger: { warn: () => {} },
    // The first load sets no baseline: a fixed one makes the test's 20 ms load a spike.
    thresholds: {
      ...options.thresholds,
      modelLoad: { ...options.thresholds?.modelLoad, baselineSeconds: { llama: 0.001 } },
    },
  });
  const address = await signal.prometheus?.ready;
  if (!address) throw new Error('the Prometheus exporter did not start');
  const queue = signal.monitor.queue('default', { capacity: options.capacity, concurrency: 1 });
  const server: Server = createServer((req, res) => {
    if (req.url === '/infer') {
      queue
        .run(() => new Promise((resolve) => setTimeout(resolve, options.serviceTimeMs)), { model: 'llama' })
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
  instrumentServer(signal.monitor, server, { capacity: options.connectionCapacity ?? 64, name: 'api' });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    signal,
    url: `http://127.0.0.1:${port}`,
    metricsTarget: `${address.host}:${address.port}`,
    metricsUrl: address.url,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await signal.shutdown();
    },
  };
}

/** Exercises every signal once, so each instrument has a series in the scrape. */
export async function exerciseEverySignal(signal: InferSignal): Promise<void> {
  const monitor = signal.monitor;
  await monitor.queue('default').run(() => new Promise((resolve) => setTimeout(resolve, 5)), { model: 'llama' });
  await monitor.modelLoad('llama', 'load', () => new Promise((resolve) => setTimeout(resolve, 20)));
  const stream = monitor.stream('llama');
  stream.firstToken();
  stream.token(4);
  stream.end('completed');
  monitor.stream('llama').end('cancelled');
  let allocated = 600;
  const memory = monitor.deviceMemory({
    allocated: () => (allocated -= 10),
    reserved: () => 1000,
    intervalMs: 0,
    source: 'test',
  });
  memory.sample();
  memory.sample();
  memory.sample();
  monitor.internalError('rules-test', new Error('deliberate'));
  monitor.tick();
}
