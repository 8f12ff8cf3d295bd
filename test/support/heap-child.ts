/**
 * A process for the heap-headroom test (test/heap-headroom-process.test.ts),
 * started with a small `--max-old-space-size`. It churns through a cache of
 * small objects (a parsed-response cache: what every major GC has to mark),
 * and prints one JSON line per event on stdout:
 * `{ "alert": AlertEvent, "chunks" }` (chunks held then), and in healthy
 * mode `{ "done": heap snapshot, "chunks" }` at the end.
 *
 * A chunk is 8192 objects `{ i, v }`, about 0.5 MiB of heap, one every
 * STEP_MS (10), so about 50 MiB/s: a fast server's allocation rate. As
 * fast as the loop can go (hundreds of MiB/s), a leak gets only 5 to 7
 * major GCs before the abort, and V8 keeps so much allocated during
 * marking that a Node 24 heap churning a cache of half its limit read up
 * to 78 % after collections (and died of it once in six runs).
 * MODE=leak: nothing is ever evicted, so the process allocates until V8
 * aborts it (heap out of memory); how much it allocates before that is
 * bounded by the heap, not by time. MODE=healthy: the cache keeps its
 * newest CACHE_CHUNKS and drops the rest, for TOTAL_CHUNKS allocations,
 * then prints its heap snapshot and exits, with the highest live share
 * the monitor read (`peakLiveRatio`).
 */
import { createMonitor } from '@infersignal/core';

const mode = process.env.MODE;
const cacheChunks = Number(process.env.CACHE_CHUNKS ?? 48);
const totalChunks = Number(process.env.TOTAL_CHUNKS ?? 300);
const stepMs = Number(process.env.STEP_MS ?? 10);
const OBJECTS_PER_CHUNK = 8192;

const monitor = createMonitor({
  detectorIntervalMs: 0,
  eventLoop: false,
  traces: false,
  onAlert: (alert) => console.log(JSON.stringify({ alert, chunks: cache.length })),
});

const cache: unknown[][] = [];
let allocated = 0;
let peakLiveRatio = 0;

function chunk(): unknown[] {
  const objects: unknown[] = [];
  for (let i = 0; i < OBJECTS_PER_CHUNK; i++) objects.push({ i, v: i * 0.5 });
  return objects;
}

// One chunk per timer, so GC observer callbacks and alerts run in between, as in a server.
function step(): void {
  cache.push(chunk());
  allocated++;
  if (mode === 'healthy') {
    if (cache.length > cacheChunks) cache.shift();
    const heap = monitor.snapshot().heap!;
    peakLiveRatio = Math.max(peakLiveRatio, heap.liveRatio ?? 0);
    if (allocated >= totalChunks) {
      console.log(JSON.stringify({ done: heap, chunks: cache.length, peakLiveRatio }));
      void monitor.close();
      return;
    }
  }
  setTimeout(step, stepMs);
}
step();
