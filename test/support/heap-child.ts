/**
 * A process for the heap-headroom test (test/heap-headroom-process.test.ts),
 * started with a small `--max-old-space-size`. It churns through a cache of
 * small objects (a parsed-response cache: what every major GC has to mark),
 * and prints one JSON line per event on stdout:
 * `{ "alert": AlertEvent, "chunks" }` (chunks held then), and in healthy
 * mode `{ "done": heap snapshot, "chunks" }` at the end.
 *
 * A chunk is 8192 objects `{ i, v }`, about 0.5 MiB of heap on Node 20.
 * MODE=leak: nothing is ever
 * evicted, so the process allocates until V8 aborts it (heap out of
 * memory); how much it allocates before that is bounded by the heap, not
 * by time. MODE=healthy: the cache keeps its newest CACHE_CHUNKS and drops
 * the rest, for TOTAL_CHUNKS allocations, then prints its heap snapshot
 * and exits.
 */
import { createMonitor } from '@infersignal/core';

const mode = process.env.MODE;
const cacheChunks = Number(process.env.CACHE_CHUNKS ?? 48);
const totalChunks = Number(process.env.TOTAL_CHUNKS ?? 300);
const OBJECTS_PER_CHUNK = 8192;

const monitor = createMonitor({
  detectorIntervalMs: 0,
  eventLoop: false,
  traces: false,
  onAlert: (alert) => console.log(JSON.stringify({ alert, chunks: cache.length })),
});

const cache: unknown[][] = [];
let allocated = 0;

function chunk(): unknown[] {
  const objects: unknown[] = [];
  for (let i = 0; i < OBJECTS_PER_CHUNK; i++) objects.push({ i, v: i * 0.5 });
  return objects;
}

// One chunk per macrotask, so GC observer callbacks and alerts run in between, as in a server.
function step(): void {
  cache.push(chunk());
  allocated++;
  if (mode === 'healthy' && cache.length > cacheChunks) cache.shift();
  if (mode === 'healthy' && allocated >= totalChunks) {
    console.log(JSON.stringify({ done: monitor.snapshot().heap, chunks: cache.length }));
    void monitor.close();
    return;
  }
  setImmediate(step);
}
step();
