/**
 * Bytes a process allocates, by origin: V8's sampling heap profiler (the
 * inspector's `HeapProfiler.startSampling`) with the objects both garbage
 * collectors freed kept in the profile, since a request's objects die
 * young and a profile of survivors alone would show almost none of them.
 * Each sample is charged to the function that allocated it (its top
 * frame; V8 reports inlined functions as frames of their own) and summed
 * by function and by scriptOrigin(); frames with no script (V8's builtins and API) by
 * their name. A sample stands for `intervalBytes` on average, drawn at
 * random, so over the tens of megabytes a window allocates a sum is exact
 * to a fraction of a per cent. What a process allocates does not move with
 * the host's load, as its CPU time does.
 */
import { Session } from 'node:inspector';
import { scriptOrigin } from './origin';

/** A node of the profile HeapProfiler.stopSampling returns. */
export interface SampledAllocationNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SampledAllocationNode[];
}

/** Bytes by the function that allocated them (`name url:line`) and by its origin; each map's values sum to the profile's total. */
export function allocatedBy(head: SampledAllocationNode): {
  byOrigin: Map<string, number>;
  byFunction: Map<string, number>;
} {
  const byOrigin = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const pending = [head];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (node.selfSize > 0) {
      const { url, functionName, lineNumber } = node.callFrame;
      const name = functionName || '(anonymous)';
      const origin = url ? scriptOrigin(url) : `V8 ${name}`;
      const fn = url ? `${name} ${url}:${lineNumber + 1}` : origin;
      byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + node.selfSize);
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + node.selfSize);
    }
    pending.push(...node.children);
  }
  return { byOrigin, byFunction };
}

/** Samples this process's allocations between start() and stop(), which resolves with them by function and origin. */
export function allocationSampler(intervalBytes = 256): {
  start(): void;
  stop(): Promise<ReturnType<typeof allocatedBy>>;
} {
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.enable');
  return {
    start() {
      session.post('HeapProfiler.startSampling', {
        samplingInterval: intervalBytes,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      } as { samplingInterval: number });
    },
    stop: () =>
      new Promise((resolve, reject) =>
        session.post('HeapProfiler.stopSampling', (error, result) =>
          error ? reject(error) : resolve(allocatedBy(result.profile.head as SampledAllocationNode)),
        ),
      ),
  };
}
