/**
 * The server's own view, once a second: the readiness route answers with
 * `monitor.snapshot()` (200, or 503 while CRITICAL). The report's value
 * lanes (utilization, P95 queue wait, occupancy) come from here; the level
 * lanes come from the bench's Prometheus scrape, as in a real deployment.
 */
import { performance } from 'node:perf_hooks';
import { seriesName, subjectOf, type ActiveSeries } from './precursors';

interface QueueValues {
  utilization: number;
  waitP95Seconds: number;
  occupancy: number;
  waiting: number;
}

/** One signal above ok, keyed like the report's lanes: `capacity[infer]`, `event_loop`. */
type ActiveSignal = ActiveSeries;

export interface SnapshotSample {
  /** ms since the poller's origin. */
  atMs: number;
  ready: boolean;
  level: string;
  infer: QueueValues | null;
  active: ActiveSignal[];
}

interface SnapshotJson {
  level?: string;
  queues?: Record<string, { utilization?: number; waitQuantileSeconds?: number; occupancy?: number; waiting?: number }>;
  active?: { signal?: string; level?: string; labels?: Record<string, string> }[];
}

export interface SnapshotPoller {
  readonly samples: SnapshotSample[];
  /** Stops polling; resolves once the poll in flight (if any) ended. */
  stop(): Promise<void>;
}

/** Polls `${url}/healthz/ready` every `intervalMs`; `origin` is a performance.now() timestamp. Bounded by `maxSamples`. */
export function pollSnapshots(url: string, origin: number, intervalMs = 1000, maxSamples = 600): SnapshotPoller {
  const samples: SnapshotSample[] = [];
  let stopped = false;
  let inFlight: Promise<void> = Promise.resolve();
  const poll = async (): Promise<void> => {
    const at = performance.now();
    try {
      const response = await fetch(`${url}/healthz/ready`, {
        signal: AbortSignal.timeout(Math.max(200, intervalMs - 100)),
      });
      const body = (await response.json()) as SnapshotJson;
      const q = body.queues?.infer;
      if (samples.length < maxSamples) {
        samples.push({
          atMs: at - origin,
          ready: response.status === 200,
          level: body.level ?? 'unknown',
          infer: q
            ? {
                utilization: q.utilization ?? 0,
                waitP95Seconds: q.waitQuantileSeconds ?? 0,
                occupancy: q.occupancy ?? 0,
                waiting: q.waiting ?? 0,
              }
            : null,
          active: (body.active ?? []).map((a) => ({
            series: seriesName(String(a.signal), a.labels),
            signal: String(a.signal),
            ...subjectOf(a.labels),
            level: a.level === 'critical' ? 2 : a.level === 'warn' ? 1 : 0,
          })),
        });
      }
    } catch {
      // A missed poll is a gap in the lanes, not a reason to stop the demo.
    }
  };
  const timer = setInterval(() => {
    if (!stopped) inFlight = poll();
  }, intervalMs);
  inFlight = poll();
  return {
    samples,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await inFlight;
    },
  };
}

/**
 * Waits until the server is ready (200), no signal is above ok and every
 * queue's utilization estimate is below `maxUtilization`, up to
 * `timeoutMs`; returns whether it got there.
 */
export async function waitForCalm(url: string, timeoutMs: number, maxUtilization = 1): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    try {
      const response = await fetch(`${url}/healthz/ready`, { signal: AbortSignal.timeout(1000) });
      const body = (await response.json()) as SnapshotJson;
      if (
        response.status === 200 &&
        body.level === 'ok' &&
        (body.active?.length ?? 0) === 0 &&
        Object.values(body.queues ?? {}).every((queue) => (queue.utilization ?? 0) < maxUtilization)
      )
        return true;
    } catch {
      /* retry */
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}
