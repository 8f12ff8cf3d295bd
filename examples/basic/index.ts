/**
 * The smallest InferSignal setup: a plain node:http "inference" server
 * (concurrency 2, ~20 ms per request) instrumented with core's queue, and
 * a client in the same process that ramps the offered load past capacity.
 * Every second it prints each signal's level; alerts print as they fire.
 *
 *   pnpm --filter @infersignal/example-basic start
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMonitor, QueueFullError } from '@infersignal/core';

const monitor = createMonitor({
  serviceName: 'basic-example',
  thresholds: { queue: { waitWindowSeconds: 5 } },
  onAlert: (event) => console.log(`  ALERT ${event.level.toUpperCase().padEnd(8)} ${event.message}`),
});
const queue = monitor.queue('infer', { concurrency: 2, capacity: 24 });

const server = createServer((_req, res) => {
  const admission = queue.admit();
  if (!admission.admit) {
    queue.reject('tiny-mlp');
    res.writeHead(503, { 'retry-after': String(admission.retryAfterSeconds) }).end();
    return;
  }
  queue
    .run(() => new Promise<string>((resolve) => setTimeout(() => resolve('{"label":7}'), 20)), { model: 'tiny-mlp' })
    .then((body) => res.writeHead(200, { 'content-type': 'application/json' }).end(body))
    .catch((error) => res.writeHead(error instanceof QueueFullError ? 503 : 500).end());
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
console.log(`instrumented server on ${url} (capacity ≈ 100 req/s)`);

// Open-loop ramp: 40 → 80 → 120 → 160 req/s, 4 s each.
const stages = [40, 80, 120, 160];
let sent = 0;
let ok = 0;
let shed = 0;
const printer = setInterval(() => {
  const s = monitor.snapshot();
  const q = s.queues.infer;
  console.log(
    `level=${s.level.padEnd(8)} waiting=${String(q.waiting).padStart(2)} inFlight=${q.inFlight} occupancy=${q.occupancy.toFixed(2)} p95wait=${(q.waitQuantileSeconds * 1000).toFixed(0).padStart(4)}ms  sent=${sent} ok=${ok} shed=${shed}`,
  );
}, 1000);
for (const rate of stages) {
  console.log(`-- offering ${rate} req/s`);
  const end = Date.now() + 4000;
  while (Date.now() < end) {
    sent++;
    fetch(url)
      .then((r) => (r.status === 200 ? ok++ : shed++))
      .catch(() => shed++);
    await new Promise((r) => setTimeout(r, 1000 / rate));
  }
}
await new Promise((r) => setTimeout(r, 1500));
clearInterval(printer);
console.log(`done: sent=${sent} ok=${ok} shed=${shed}; final snapshot level=${monitor.snapshot().level}`);
await monitor.close();
server.close();
