/**
 * A token-streaming gRPC server instrumented with @infersignal/grpc. It
 * drives itself with built-in clients (set TRAFFIC=0 to drive it yourself
 * with any gRPC client and packages/grpc/proto/inference.proto) and prints
 * the monitor's snapshot every 2 s.
 *
 *   pnpm --filter @infersignal/example-grpc-stream start
 *
 * Environment: PORT (default 50051; 0 picks a free one), DURATION_MS (stop
 * after that long; default: until Ctrl-C), TRAFFIC (concurrent streams of
 * the built-in clients, default 24; 0 disables them).
 */
import { createMonitor } from '@infersignal/core';
import type { Snapshot } from '@infersignal/core';
import { INFERENCE_PROTO_PATH, INFERENCE_SERVICE } from '@infersignal/grpc';
import { startServer } from './server';
import { startTraffic } from './traffic';

const port = Number(process.env.PORT ?? 50051);
const durationMs = Number(process.env.DURATION_MS ?? 0);
const concurrency = Number(process.env.TRAFFIC ?? 24);

const monitor = createMonitor({
  serviceName: 'grpc-stream-example',
  onAlert: (event) => console.log(`ALERT ${event.level.toUpperCase()} ${event.signal}: ${event.message}`),
});

const { port: bound, server } = await startServer(monitor, port);
console.log(`gRPC ${INFERENCE_SERVICE} listening on 127.0.0.1:${bound} (proto: ${INFERENCE_PROTO_PATH})`);

const traffic = concurrency > 0 ? startTraffic(bound, concurrency) : undefined;

function line(snapshot: Snapshot): string {
  const queue = snapshot.queues.grpc;
  const streams = Object.entries(snapshot.streams)
    .map(([model, s]) => `${model} ${(s.interruptedRatio * 100).toFixed(2)}% of ${s.samples} (${s.level})`)
    .join(', ');
  const client = traffic
    ? ` | clients ok=${traffic.stats.ok} cancelled=${traffic.stats.cancelled} deadline=${traffic.stats.deadline} shed=${traffic.stats.shed}`
    : '';
  return (
    `[${new Date(snapshot.at).toISOString().slice(11, 19)}] level=${snapshot.level}` +
    (queue
      ? ` | queue ${queue.level} inFlight=${queue.inFlight} occupancy=${queue.occupancy.toFixed(2)} done=${queue.completed}`
      : '') +
    ` | interrupted: ${streams || 'no streams yet'}` +
    client
  );
}

const printer = setInterval(() => console.log(line(monitor.snapshot())), 2000);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearInterval(printer);
  traffic?.stop();
  console.log(line(monitor.snapshot()));
  await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
  await monitor.close();
}

process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
if (durationMs > 0) setTimeout(() => void stop(), durationMs).unref();
