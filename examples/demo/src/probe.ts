/**
 * How much the server can take, measured rather than assumed, so the ramp
 * lands past capacity on a fast laptop and on a slow CI runner alike.
 */
import { runBench, type BenchResult } from '@infersignal/bench';

/** The /v1/infer body every request of the demo sends (one 512-wide row, tiled into the batch). */
export const INFER_BODY = { input: [0.5, -0.25, 1, 0.125] };

export interface Capacity {
  /** Successful responses per second in the measuring stage. */
  rps: number;
  /** Median latency in the measuring stage (ms). */
  p50Ms: number;
  users: number;
  measureMs: number;
  result: BenchResult;
}

/**
 * Closed loop with a few users: a warm-up stage (JIT, first allocations),
 * then a measuring stage whose throughput is the capacity. A few users keep
 * the model busy without filling the queue, so the probe itself trips no
 * queue alert; utilization does touch 1 (it is the definition of capacity),
 * which is why the demo waits for the signals to settle before its ramp.
 */
export async function probeCapacity(
  url: string,
  options: { warmMs: number; measureMs: number; users?: number; signal?: AbortSignal },
): Promise<Capacity> {
  const users = options.users ?? 8;
  const result = await runBench({
    target: `${url}/v1/infer`,
    body: INFER_BODY,
    stages: [
      { name: 'warm-up', concurrency: users, durationMs: options.warmMs },
      { name: 'probe', concurrency: users, durationMs: options.measureMs },
    ],
    timeoutMs: 5000,
    progress: false,
    signal: options.signal,
  });
  const stage = result.stages[1];
  const failed = stage.responses - stage.ok;
  if (!(stage.throughput > 0) || failed > stage.responses * 0.05) {
    throw new Error(
      `capacity probe failed: ${stage.ok} ok of ${stage.responses} responses (${JSON.stringify(stage.statuses)})`,
    );
  }
  return { rps: stage.throughput, p50Ms: stage.latency.p50, users, measureMs: options.measureMs, result };
}
