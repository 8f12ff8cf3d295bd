import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { InferSignalConfigError, type Monitor } from '@infersignal/core';
import { describeValue } from '@infersignal/core/signals';
import { readinessAnswer } from '@infersignal/http';

/**
 * GET/HEAD handler for a Kubernetes readiness probe: 503 while the monitor's
 * overall level is CRITICAL (so the load balancer stops sending work), 200
 * otherwise; the body is `monitor.snapshot()` as JSON either way.
 */
function readinessHandler(monitor: Monitor): RequestHandler {
  if (typeof monitor?.snapshot !== 'function')
    throw new InferSignalConfigError('monitor', 'must be a monitor from createMonitor()');
  return function inferSignalReadiness(req: Request, res: Response): void {
    const { status, body } = readinessAnswer(monitor, 'express');
    res.statusCode = status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}

/**
 * Router-like middleware answering GET/HEAD `path` with readinessHandler and
 * passing everything else on. It does not import express, so the same
 * function works in Express 4 and 5: `app.use(readinessRouter(monitor))`.
 */
export function readinessRouter(
  monitor: Monitor,
  /** `path`: the path answered (default `/healthz/ready`). */
  options: { path?: string } = {},
): RequestHandler {
  const path = options.path ?? '/healthz/ready';
  if (typeof path !== 'string' || !path.startsWith('/'))
    throw new InferSignalConfigError('options.path', `must be a path starting with "/", got ${describeValue(path)}`);
  const handler = readinessHandler(monitor);
  return function inferSignalReadinessRouter(req: Request, res: Response, next: NextFunction): void {
    if ((req.method === 'GET' || req.method === 'HEAD') && req.path === path) handler(req, res, next);
    else next();
  };
}
