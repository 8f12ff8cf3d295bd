/**
 * The Fastify major a project runs: 5 (the `fastify` dev dependency) in
 * `unit`, 4 in `fastify4`, whose `fastify` import resolves to the
 * `fastify4` alias (vitest.config.mts). Guards that alias: without it, the
 * Fastify 4 leg would run Fastify 5 again and prove nothing.
 */
import Fastify from 'fastify';
import { expect, inject, it } from 'vitest';
import { createMonitor } from '@infersignal/core';
import { inferSignal } from '@infersignal/fastify';
import { until } from '../../../test/support/async';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set by the `fastify4` project. */
    fastifyMajor?: number;
  }
}

it('runs the Fastify major its project names, and the plugin registers on it', async () => {
  const app = Fastify();
  const monitor = createMonitor({ detectorIntervalMs: 0, traces: false, eventLoop: false });
  try {
    expect(Number(app.version.split('.')[0])).toBe(inject('fastifyMajor') ?? 5);
    await app.register(inferSignal, { monitor, model: 'tiny' });
    app.get('/v1/models/:id', async (request) => ({
      route: request.inferSignal?.route,
      model: request.inferSignal?.model,
    }));
    const reply = await app.inject({ url: '/v1/models/m1' });
    expect(reply.json()).toEqual({ route: '/v1/models/:id', model: 'tiny' });
    await until(() => monitor.snapshot().queues.http.completed === 1, 2000, 'the request counted');
  } finally {
    await app.close();
    await monitor.close();
  }
});
