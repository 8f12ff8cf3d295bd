/**
 * Drives the instruments the capacity, runtime and connection rules read,
 * on an instrumented server from `startInstrumentedServer` (started with
 * `detectorIntervalMs: 0` and the thresholds below), so each has a series
 * in a real scrape:
 * - a queue with an explicit concurrency through a rising load, ticked by
 *   hand: utilization, headroom, predicted wait and time to saturation;
 * - the event-loop sampler (period `RUNTIME_THRESHOLDS.eventLoop`) and
 *   garbage until the exporter shows a GC pause; a full GC (V8's own
 *   `gc()`, exposed through its flags), after which the heap-headroom
 *   signal has a live set to export;
 * - an HTTP request to the instrumented API server (keep-alive reuse), a
 *   server with `maxConnections = 1` and a second client (1 rejected), and a
 *   TLS server with one good handshake and one plain-HTTP client
 *   (1 failure, ERR_SSL_HTTP_REQUEST);
 * - the circuit-breaker state gauge, recorded with core's spec exactly as
 *   `@infersignal/breaker`'s createBreaker does (rules does not depend on
 *   the breaker package for one gauge), and so the GPU gauges and the gRPC
 *   call histogram of `@infersignal/gpu` and `@infersignal/grpc`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer, get as httpsGet } from 'node:https';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ATTR, HISTOGRAM_BUCKETS, METRICS, type Monitor, type ThresholdsInput } from '@infersignal/core';
import { instrumentServer, type ServerInstrumentation } from '@infersignal/http';
import type { MetricNames } from '../../src/names';

/** What the exercises need of an instrumented server (helpers/instrumented.ts makes one). */
export interface ExercisedServer {
  readonly monitor: Monitor;
  /** The Prometheus names its scrape uses. */
  readonly names: MetricNames;
  /** `http://127.0.0.1:PORT` of the API. */
  readonly url: string;
  readonly metricsUrl: string;
}

/** Short windows so a few hundred milliseconds give every capacity and event-loop figure. */
export const RUNTIME_THRESHOLDS: ThresholdsInput = {
  // λ follows the last tick (half-life 10 ms); ρ's trend (fitted over the last 600 ms) is judged once 300 ms of it exist.
  capacity: { rateHalfLifeSeconds: 0.01, trendWindowSeconds: 0.6 },
  eventLoop: { sampleIntervalMs: 20 },
};

/** Arrivals per 150 ms step, each served in ~10 ms by one server: ρ ≈ 0.07, 0.2, 0.4 (rising; below 1 unless a timer of 10 ms takes 25). */
const RAMP = [1, 3, 6];
const STEP_MS = 150;
const SERVICE_MS = 10;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

/**
 * A self-signed certificate for 127.0.0.1 (P-256: milliseconds to make),
 * by openssl in a temp dir: node:crypto makes keys, not X.509 certificates.
 * Null, with the reason printed, when openssl cannot.
 */
function selfSigned(): { key: Buffer; cert: Buffer } | null {
  const dir = mkdtempSync(join(tmpdir(), 'infersignal-rules-tls-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'pipe', timeout: 20_000 },
    );
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  } catch (error) {
    console.warn(
      `[rules] TLS instruments not exercised: openssl could not make a certificate (${error instanceof Error ? error.message : String(error)})`,
    );
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface RuntimeExercise {
  /** False when no certificate could be made (the TLS instruments then have no series). */
  readonly tls: boolean;
  readonly limited: ServerInstrumentation;
  readonly secure: ServerInstrumentation | undefined;
  close(): Promise<void>;
}

/**
 * Ramps until the last tick saw ρ rising (time to saturation exported), at
 * most 5 times: on a loaded machine the 10 ms services and 150 ms steps
 * stretch, and one ramp may not read as rising. Between tries the queue
 * idles past the trend window, so each ramp starts from nothing.
 */
async function rampCapacity(app: ExercisedServer): Promise<void> {
  const monitor = app.monitor;
  const queue = monitor.queue('capacity', { concurrency: 1, capacity: 64 });
  monitor.tick(); // the queue's first tick only starts counting
  for (let attempt = 0; attempt < 5; attempt++) {
    for (const arrivals of RAMP) {
      const stepStart = Date.now();
      await Promise.all(Array.from({ length: arrivals }, () => queue.run(() => sleep(SERVICE_MS), { model: 'llama' })));
      await sleep(Math.max(0, STEP_MS - (Date.now() - stepStart)));
      monitor.tick();
    }
    if (monitor.snapshot().queues.capacity?.timeToSaturationSeconds != null) return;
    for (let idle = 0; idle < 8; idle++) {
      await sleep(STEP_MS);
      monitor.tick();
    }
  }
}

async function produceGarbageUntilGc(app: ExercisedServer): Promise<void> {
  const gc = `${app.names.metric('gcDuration')}_count`;
  let sink: unknown[] = [];
  await until('a GC pause in the scrape', async () => {
    // ~10 MB of short-lived objects: more than V8's young generation, so a scavenge follows.
    for (let i = 0; i < 200_000; i++) sink.push({ i, text: `garbage ${i}` });
    sink = [];
    await sleep(5); // PerformanceObserver delivers gc entries asynchronously
    return (await (await fetch(app.metricsUrl)).text()).includes(gc);
  });
}

/** A major GC now: the heap signal reads the live set after one, and a short test may see none of its own. */
async function collectFullGarbage(app: ExercisedServer): Promise<void> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const live = app.names.metric('heapLiveRatio');
  await until('the live heap after a major GC in the scrape', async () => {
    gc();
    await sleep(5); // delivered asynchronously, as above
    return (await (await fetch(app.metricsUrl)).text()).includes(live);
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
  );
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

export async function exerciseRuntimeSignals(app: ExercisedServer): Promise<RuntimeExercise> {
  const monitor = app.monitor;
  const cleanup: (() => Promise<void> | void)[] = [];
  const close = async () => {
    for (const fn of cleanup.reverse()) await fn();
  };
  try {
    await rampCapacity(app);
    await produceGarbageUntilGc(app);
    await collectFullGarbage(app);

    // One request on the instrumented API server: open connections and keep-alive reuse.
    await (await fetch(`${app.url}/infer`)).text();

    // maxConnections = 1: the second client is closed at accept (net.Server `drop`).
    const limitedServer = createServer((_req, res) => res.end('ok'));
    limitedServer.maxConnections = 1;
    const limited = instrumentServer(monitor, limitedServer, { name: 'limited' });
    const limitedPort = await listen(limitedServer);
    cleanup.push(() => closeServer(limitedServer));
    const first = await openSocket(limitedPort);
    cleanup.push(() => void first.destroy());
    await until('the first connection accepted', () => limited.open === 1);
    const second = connect(limitedPort, '127.0.0.1');
    second.on('error', () => {}); // ECONNRESET is the point
    cleanup.push(() => void second.destroy());
    await until('the second connection rejected', () => limited.rejected === 1);

    // TLS: one good handshake, one client speaking plain HTTP to the TLS port.
    const credentials = selfSigned();
    let secure: ServerInstrumentation | undefined;
    if (credentials) {
      const tlsServer = createHttpsServer({ key: credentials.key, cert: credentials.cert }, (_req, res) =>
        res.end('ok'),
      );
      secure = instrumentServer(monitor, tlsServer, { name: 'https' });
      const tlsPort = await listen(tlsServer);
      cleanup.push(() => closeServer(tlsServer));
      const body = await new Promise<string>((resolve, reject) => {
        httpsGet({ host: '127.0.0.1', port: tlsPort, path: '/', ca: credentials.cert, agent: false }, (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve(text));
        }).on('error', reject);
      });
      if (body !== 'ok') throw new Error(`TLS request answered ${JSON.stringify(body)}`);
      const plain = await openSocket(tlsPort);
      plain.on('error', () => {});
      plain.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      cleanup.push(() => void plain.destroy());
      const handle = secure;
      await until('the plain-HTTP handshake failure', () => handle.handshakeFailures === 1 && handle.handshakes === 1);
    }

    const breaker = METRICS.breakerState;
    monitor.meter
      .createGauge(breaker.name, { unit: breaker.unit, description: breaker.description })
      .record(2, { [ATTR.breakerName]: 'backend' });
    // The GPU gauges and the gRPC call histogram, with core's specs as @infersignal/gpu's sampler and
    // @infersignal/grpc record them (the dashboard's GPU and gRPC rows read them; no device or gRPC here).
    const device = { [ATTR.deviceIndex]: '0', [ATTR.deviceUuid]: 'GPU-0' };
    for (const spec of [
      METRICS.gpuMemoryUsed,
      METRICS.gpuMemoryFree,
      METRICS.gpuMemoryLimit,
      METRICS.gpuMemoryReservedDriver,
      METRICS.gpuMemoryProcess,
      METRICS.gpuUtilization,
    ])
      monitor.meter.createGauge(spec.name, { unit: spec.unit, description: spec.description }).record(1, device);
    const rpc = METRICS.rpcCallDuration;
    monitor.meter
      .createHistogram(rpc.name, {
        unit: rpc.unit,
        description: rpc.description,
        advice: { explicitBucketBoundaries: [...HISTOGRAM_BUCKETS[rpc.name]!] },
      })
      .record(0.01, {
        [ATTR.rpcSystemName]: 'grpc',
        [ATTR.rpcMethod]: 'infer.Model/Predict',
        [ATTR.rpcResponseStatusCode]: 'OK',
      });

    return { tls: credentials !== null, limited, secure, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Exercises every signal once, so each instrument has a series in the scrape. */
export async function exerciseEverySignal(monitor: Monitor): Promise<void> {
  await monitor.queue('default').run(() => new Promise((resolve) => setTimeout(resolve, 5)), { model: 'llama' });
  await monitor.modelLoad('llama', 'load', () => new Promise((resolve) => setTimeout(resolve, 20)));
  const stream = monitor.stream('llama');
  stream.firstToken();
  stream.token(4);
  stream.end('completed');
  monitor.stream('llama').end('cancelled');
  // An LLM queue: its token backlog gauges (prompt tokens waiting, output tokens owed, drain time).
  const llm = monitor.queue('llm', { tokens: true });
  const generation = llm.enqueue('llama');
  generation.setTokens(12, 8);
  generation.start();
  generation.produced(3);
  generation.end();
  let allocated = 600;
  const memory = monitor.deviceMemory({
    allocated: () => (allocated -= 10),
    reserved: () => 1000,
    intervalMs: 0,
    source: 'test',
  });
  memory.sample();
  memory.sample();
  memory.sample();
  monitor.internalError('rules-test', new Error('deliberate'));
  monitor.tick();
  // A signal level is exported from its detector's first raise: fill the queue for one tick (occupancy
  // CRITICAL) and drain it, so the queue's level series exists (at 0) for the rules that join on it.
  const queue = monitor.queue('default');
  const tickets = Array.from({ length: queue.capacity }, () => queue.enqueue('llama'));
  monitor.tick();
  for (const ticket of tickets) ticket.end('cancelled');
  monitor.tick();
}
