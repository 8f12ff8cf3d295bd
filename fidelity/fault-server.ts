/**
 * The fault scenarios' server (device memory, GC pressure), started as a
 * child process by fault-server-process.ts. A plain node:http inference
 * endpoint instrumented with `@infersignal/node` (the OTel SDK, the
 * Prometheus endpoint, core's monitor) and, for device memory,
 * `@infersignal/gpu`'s sampler reading a fake libnvidia-ml.so.1 through
 * koffi. Each `POST /v1/infer` runs through core queue `infer`
 * (concurrency 1): a few ms of CPU, plus what the fault makes of it.
 *
 * Settings (environment): FAULT (`device-memory` | `gc-pressure`),
 * THRESHOLDS (JSON), WORK_MS (CPU per request, default 2); for device
 * memory NVML_LIBRARY (the fake library), FAKE_NVML_CONFIG (the file it
 * reads, written here from the allocator) and DEVICE (JSON, `DevicePlan`).
 * `POST /fault` with a JSON body starts the fault (`FaultCommand`).
 * Alerts are printed as the example server prints them
 * (`[alert] <signal> <from> -> <to>: <message>`), and `{ type: 'ready', url, metricsUrl, pid }`
 * goes to the parent over IPC.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { QueueFullError, type ThresholdsInput } from '@infersignal/core';
import { createGpuSampler, type GpuSampler } from '@infersignal/gpu';
import { start } from '@infersignal/node';
import { type Block, CachingAllocator, DeviceOutOfMemoryError, MiB } from './fault-server-allocator';

export interface DevicePlan {
  totalMiB: number;
  /** Held for the whole run (the model's weights). */
  weightsMiB: number;
  /** One activation block per request, freed when it ends. */
  activationMiB: number;
  /** The sampler's interval (ms). */
  sampleMs: number;
}

export type FaultCommand =
  /** Each request's activation grows this much per second from now (longer inputs): freed blocks are too small for the next. */
  | { kind: 'fragmentation'; creepMiBPerSecond: number }
  /** Each request keeps a block of this size that is never freed (a tensor still referenced). */
  | { kind: 'leak'; leakMiB: number }
  /** Each request keeps a copy of its response on the JS heap (a cache without eviction). */
  | { kind: 'heap-leak'; retainKiB: number };

const fault = process.env.FAULT;
if (fault !== 'device-memory' && fault !== 'gc-pressure') throw new Error(`FAULT must be device-memory or gc-pressure`);
const thresholds = JSON.parse(process.env.THRESHOLDS || '{}') as ThresholdsInput;
const workMs = Number(process.env.WORK_MS || 2);

const telemetry = start({
  serviceName: `fidelity-${fault}`,
  prometheus: { host: '127.0.0.1', port: 0 },
  thresholds,
  onAlert: (event) => console.log(`[alert] ${event.signal} ${event.previousLevel} -> ${event.level}: ${event.message}`),
});
const monitor = telemetry.monitor;
const queue = monitor.queue('infer', { concurrency: 1, capacity: 256 });

let active: FaultCommand | undefined;
let activeSince = 0;
/** When the first request failed for lack of device memory (performance.now()). */
let firstOomAt: number | null = null;

// Device memory: the allocator's reserved bytes are what the fake driver lists for this PID.
let allocator: CachingAllocator | undefined;
let sampler: GpuSampler | undefined;
let plan: DevicePlan | undefined;
const leaked: Block[] = [];
if (fault === 'device-memory') {
  plan = JSON.parse(process.env.DEVICE || '') as DevicePlan;
  const configPath = process.env.FAKE_NVML_CONFIG;
  if (!configPath || !process.env.NVML_LIBRARY)
    throw new Error('device-memory needs NVML_LIBRARY and FAKE_NVML_CONFIG');
  const total = plan.totalMiB * MiB;
  const writeDriverView = (reserved: number): void =>
    writeFileSync(
      configPath,
      `count=1\ndev0.uuid=GPU-fidelity-0\ndev0.total=${total}\ndev0.used=${reserved}\ndev0.free=${total - reserved}\ndev0.proc=${process.pid}:${reserved}\n`,
    );
  writeDriverView(0);
  allocator = new CachingAllocator(total, writeDriverView);
  allocator.alloc(plan.weightsMiB * MiB);
  // One request's worth before sampling starts: the first activation segment is start-up, not drift.
  allocator.free(allocator.alloc(plan.activationMiB * MiB));
  const model = allocator;
  sampler = createGpuSampler(monitor, {
    libraryPath: process.env.NVML_LIBRARY,
    nvidiaSmiPath: false,
    intervalMs: plan.sampleMs,
    source: 'gpu0',
    allocated: () => model.allocated,
  });
  if (sampler.status !== 'nvml') throw new Error(`the GPU sampler did not load the fake NVML: ${sampler.reason}`);
}
const retained: unknown[][] = [];

/** Major GC pauses (start ms on this process's clock, duration ms), the last 400: the scenario's evidence of GC pressure. */
const majorGcs: [number, number][] = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries())
    if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
      majorGcs.push([entry.startTime, entry.duration]);
      if (majorGcs.length > 400) majorGcs.shift();
    }
}).observe({ entryTypes: ['gc'] });

function burn(ms: number): number {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) for (let i = 0; i < 1000; i++) x += Math.sqrt(i);
  return x;
}

function activationBytes(): number {
  const base = plan!.activationMiB * MiB;
  if (active?.kind !== 'fragmentation') return base;
  return base + active.creepMiBPerSecond * MiB * ((performance.now() - activeSince) / 1000);
}

/** One request's work; throws DeviceOutOfMemoryError when the device model cannot place it. */
function infer(): { ok: true; reservedMiB?: number } {
  if (allocator) {
    const activation = allocator.alloc(activationBytes());
    try {
      burn(workMs);
      if (active?.kind === 'leak') leaked.push(allocator.alloc(active.leakMiB * MiB));
    } finally {
      allocator.free(activation);
    }
    return { ok: true, reservedMiB: Math.round(allocator.reserved / MiB) };
  }
  burn(workMs);
  if (active?.kind === 'heap-leak') {
    // Small objects, as a cache of parsed responses holds them: each is marked by every major GC.
    const copy: unknown[] = [];
    for (let i = 0; i < (active.retainKiB * 1024) / 32; i++) copy.push({ i, v: i * 0.5 });
    retained.push(copy);
  }
  return { ok: true };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const server = createServer((req, res) => {
  void (async () => {
    const body = await readBody(req);
    if (req.method === 'POST' && req.url === '/v1/infer') {
      try {
        send(res, 200, await queue.run(infer));
      } catch (error) {
        if (error instanceof QueueFullError) return send(res, 503, { error: 'overloaded' });
        if (error instanceof DeviceOutOfMemoryError) {
          firstOomAt ??= performance.now();
          return send(res, 500, { error: error.message });
        }
        send(res, 500, { error: String(error) });
      }
    } else if (req.method === 'POST' && req.url === '/fault') {
      active = JSON.parse(body) as FaultCommand;
      activeSince = performance.now();
      send(res, 200, { started: active });
    } else if (req.url === '/state') {
      send(res, 200, {
        fault: active ?? null,
        allocatedMiB: allocator ? allocator.allocated / MiB : null,
        reservedMiB: allocator ? allocator.reserved / MiB : null,
        largestFreeMiB: allocator ? allocator.largestFree() / MiB : null,
        oomFailures: allocator?.failures ?? null,
        // ms after the fault's start.
        firstOomMs: firstOomAt === null ? null : firstOomAt - activeSince,
        heapUsedMiB: process.memoryUsage().heapUsed / MiB,
        retained: retained.length,
        // Relative to the fault's start (ms; negative before it, all of them before it when no fault started).
        majorGcs: majorGcs.map(([at, ms]) => [at - (active ? activeSince : performance.now()), ms]),
        snapshot: monitor.snapshot(),
      });
    } else send(res, 404, { error: 'not found' });
  })().catch((error: unknown) => {
    if (!res.headersSent) send(res, 500, { error: String(error) });
  });
});
server.keepAliveTimeout = 30_000;

async function shutdown(code: number): Promise<void> {
  setTimeout(() => process.exit(code), 3000).unref();
  sampler?.close();
  server.closeAllConnections();
  server.close();
  await telemetry.shutdown().catch(() => undefined);
  process.exit(code);
}
process.once('SIGTERM', () => void shutdown(0));
process.once('SIGINT', () => void shutdown(0));
process.once('disconnect', () => void shutdown(0));

server.listen(0, '127.0.0.1', () => {
  void telemetry.prometheus?.ready.then((metrics) => {
    const { port } = server.address() as AddressInfo;
    process.send?.({
      type: 'ready',
      url: `http://127.0.0.1:${port}`,
      metricsUrl: metrics?.url ?? null,
      pid: process.pid,
    });
  });
});
