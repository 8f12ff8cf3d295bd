import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { InferSignalConfigError, type Monitor } from '@infersignal/core';
import { readinessAnswer } from '@infersignal/http';

/**
 * Route handler for a Kubernetes readiness probe: 503 while the monitor's
 * overall level is CRITICAL (so the load balancer stops sending work), 200
 * otherwise; the body is `monitor.snapshot()` as JSON either way. The
 * plugin's `readiness` option registers it; use this for a route of your own.
 */
export function readinessHandler(monitor: Monitor): RouteHandlerMethod {
  if (typeof monitor?.snapshot !== 'function')
    throw new InferSignalConfigError('monitor', 'must be a monitor from createMonitor()');
  return function inferSignalReadiness(_request: FastifyRequest, reply: FastifyReply) {
    const { status, body } = readinessAnswer(monitor, 'fastify');
    return reply
      .code(status)
      .header('content-type', 'application/json; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(body);
  };
}
