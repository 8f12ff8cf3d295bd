/**
 * A process that leaks its JS heap at a steady rate until V8 aborts it, for
 * the heap-exhaustion precursor's real-process check
 * (test/heap-leak-process.test.ts, `pnpm heap-leak-cells`). Started with
 * `--max-old-space-size`. It runs a monitor as a server would (the
 * detector ticking every second, nothing else), churns GARBAGE_MIBS of
 * short-lived objects, and after HEALTHY_MS starts keeping LEAK_MIBS of
 * small objects (`{ i, v }`, 64.7 bytes each with their array slot on
 * Node 20, 22 and 24: what every major GC has to mark), by the wall clock:
 * a late timer allocates what it owes, so a busy machine does not slow the
 * leak. Prints JSON lines with epoch milliseconds: `{ "start", "leakFrom" }`
 * once, then `{ "alert": { signal, level, value, message }, "at" }`. With
 * LIVE_S set it leaks nothing and stops after that many seconds, printing
 * `{ "done": heap snapshot }`: the healthy variant, which holds a cache of
 * CACHE_MIBS and replaces a 64th of it every 100 ms (old objects that die,
 * so major GCs come and the heap is a sawtooth over a steady live set).
 */
import { writeSync } from 'node:fs';
import { createMonitor } from '@infersignal/core';

const MiB = 1024 * 1024;
const BYTES_PER_OBJECT = 64.7;
const leakMiBs = Number(process.env.LEAK_MIBS ?? 2);
const garbageMiBs = Number(process.env.GARBAGE_MIBS ?? 10);
const healthyMs = Number(process.env.HEALTHY_MS ?? 2000);
const liveSeconds = process.env.LIVE_S === undefined ? undefined : Number(process.env.LIVE_S);
const cacheMiBs = Number(process.env.CACHE_MIBS ?? 0);
const STEP_MS = 10;
const CACHE_CHUNKS = 64;
/** Garbage objects per array (~1 MiB). */
const GARBAGE_CHUNK = 16_384;

// A pipe on Linux is written synchronously; writeSync makes sure of it, so the last alert before the abort is out.
const say = (line: unknown): void => {
  writeSync(1, `${JSON.stringify(line)}\n`);
};

const monitor = createMonitor({
  eventLoop: false,
  traces: false,
  onAlert: (a) =>
    say({ alert: { signal: a.signal, level: a.level, value: a.value, message: a.message }, at: Date.now() }),
});

const start = Date.now();
const leakFrom = start + healthyMs;
say({ start, leakFrom, pid: process.pid });
const kept: { i: number; v: number }[][] = [];
const objects = (mib: number): { i: number; v: number }[] => {
  const chunk: { i: number; v: number }[] = [];
  const n = Math.round((mib * MiB) / BYTES_PER_OBJECT);
  for (let i = 0; i < n; i++) chunk.push({ i, v: i * 0.5 });
  return chunk;
};
const cache: { i: number; v: number }[][] = [];
for (let c = 0; c < CACHE_CHUNKS && cacheMiBs > 0; c++) cache.push(objects(cacheMiBs / CACHE_CHUNKS));
let steps = 0;
let owed = 0;
let last = start;
let sink: unknown;

function step(): void {
  const now = Date.now();
  const seconds = (now - last) / 1000;
  last = now;
  // In arrays of GARBAGE_CHUNK objects, each dropped for the next: a late step (a starved process) owes seconds of
  // garbage, and one array holding all of it would be a live spike no service has, enough to abort a small heap.
  const garbageObjects = Math.round((garbageMiBs * MiB * seconds) / BYTES_PER_OBJECT);
  for (let made = 0; made < garbageObjects; ) {
    const garbage: { i: number; v: number }[] = [];
    for (let i = 0; i < GARBAGE_CHUNK && made < garbageObjects; i++, made++) garbage.push({ i, v: i * 0.5 });
    sink = garbage;
  }
  if (cacheMiBs > 0 && ++steps % 10 === 0) cache[(steps / 10) % CACHE_CHUNKS] = objects(cacheMiBs / CACHE_CHUNKS);
  if (now >= leakFrom && liveSeconds === undefined) {
    owed += (leakMiBs * MiB * seconds) / BYTES_PER_OBJECT;
    const chunk: { i: number; v: number }[] = [];
    for (; owed >= 1; owed--) chunk.push({ i: owed, v: owed * 0.5 });
    kept.push(chunk);
  }
  if (liveSeconds !== undefined && now - start >= liveSeconds * 1000) {
    say({ done: monitor.snapshot().heap, kept: kept.length, sink: sink !== undefined });
    void monitor.close();
    return;
  }
  setTimeout(step, STEP_MS);
}
step();
