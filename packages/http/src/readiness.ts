import type { Monitor } from '@infersignal/core';

/** What a readiness probe answers: the status and the JSON body. */
export interface ReadinessAnswer {
  status: 200 | 503;
  body: string;
}

/**
 * A Kubernetes readiness probe's answer: 503 while the monitor's overall
 * level is CRITICAL (so the load balancer stops sending work), 200
 * otherwise; the body is `monitor.snapshot()` as JSON either way. The HTTP
 * adapters write it with their framework; `source` names them in
 * `monitor.internalError`.
 */
export function readinessAnswer(monitor: Monitor, source: string): ReadinessAnswer {
  try {
    const snapshot = monitor.snapshot();
    return { status: snapshot.level === 'critical' ? 503 : 200, body: JSON.stringify(snapshot) };
  } catch (error) {
    // A broken snapshot must not fail the probe by itself; the level alone decides.
    monitor.internalError(`${source}.readiness`, error);
    const level = safeLevel(monitor);
    return { status: level === 'critical' ? 503 : 200, body: JSON.stringify({ level }) };
  }
}

function safeLevel(monitor: Monitor): string {
  try {
    return monitor.level();
  } catch {
    return 'unknown';
  }
}
