/**
 * One replica of the fleet fidelity suite (fidelity/fleet.ts) and its test:
 * a Fastify 5 inference server instrumented as a new user would do it:
 * `@infersignal/node`'s `start()` with its defaults (thresholds included,
 * Prometheus exporter on a free loopback port), and the `@infersignal/fastify`
 * plugin around `POST /v1/infer` with a core queue (`infer`, one request at a
 * time) that sheds with 503 at CRITICAL, plus its readiness route.
 *
 * The "model" is a timer of `serviceTimeMs`, read per request: the suite
 * doubles it to take half a replica's capacity away, and a timer costs
 * next to no CPU, so two replicas, a load generator, Prometheus and
 * Alertmanager fit on a small machine without starving one another.
 * (It lives under test/ because its `fastify` dependency does.)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
import type { Monitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/fastify';
import { start } from '@infersignal/node';

export interface FleetReplica {
  readonly monitor: Monitor;
  /** `http://127.0.0.1:PORT` of the API. */
  readonly url: string;
  /** `host:port` of the Prometheus exporter: the scrape target, hence the `instance` label of its series. */
  readonly metricsTarget: string;
  readonly metricsUrl: string;
  /** Service time of the next requests (ms). */
  serviceTimeMs: number;
  /** When (Date.now()) the replica first answered 503 (shed or queue full) since it started or `resetShed()`; null until then. */
  readonly firstShedAt: number | null;
  /** How many 503s it answered since it started or `resetShed()`. */
  readonly sheds: number;
  resetShed(): void;
  close(): Promise<void>;
}

export interface FleetReplicaOptions {
  serviceTimeMs: number;
  /** Capacity of the `infer` queue (waiting + in flight). Default 64. */
  capacity?: number;
}

export async function startFleetReplica(options: FleetReplicaOptions): Promise<FleetReplica> {
  const telemetry = start({
    serviceName: 'inference-server',
    prometheus: { host: '127.0.0.1', port: 0 },
    otlp: false,
    traces: false,
    // Two replicas share the suite's process: neither owns the OTel globals.
    registerGlobals: false,
    logger: { warn: () => {} },
  });
  const address = await telemetry.prometheus?.ready;
  if (!address) {
    await telemetry.shutdown();
    throw new Error('the Prometheus exporter did not start');
  }
  const monitor = telemetry.monitor;
  const queue = monitor.queue('infer', { concurrency: 1, capacity: options.capacity ?? 64 });
  let firstShedAt: number | null = null;
  let sheds = 0;
  const app = Fastify({ logger: false, keepAliveTimeout: 30_000 });
  app.addHook('onResponse', (request, reply, done) => {
    // The readiness route answers 503 too, while a level is CRITICAL: only inference requests count.
    if (reply.statusCode === 503 && request.routeOptions.url === '/v1/infer') {
      sheds++;
      firstShedAt ??= Date.now();
    }
    done();
  });
  const replica = {
    monitor,
    url: '',
    metricsTarget: `${address.host}:${address.port}`,
    metricsUrl: address.url,
    serviceTimeMs: options.serviceTimeMs,
    get firstShedAt() {
      return firstShedAt;
    },
    get sheds() {
      return sheds;
    },
    resetShed() {
      firstShedAt = null;
      sheds = 0;
    },
    close: async () => {
      await app.close();
      await telemetry.shutdown();
    },
  };
  await app.register(async (scope) => {
    await scope.register(inferSignal, { monitor, queue, shed: true, readiness: true, model: () => 'timer' });
    scope.post('/v1/infer', async (request) => {
      await request.inferSignal!.run(() => sleep(replica.serviceTimeMs));
      return { ok: true };
    });
  });
  try {
    replica.url = await app.listen({ host: '127.0.0.1', port: 0 });
  } catch (error) {
    await telemetry.shutdown();
    throw error;
  }
  return replica;
}
