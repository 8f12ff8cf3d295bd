/**
 * examples/fastify-onnx's server for the fresh suite, from the checkout
 * named in argv[2] (this one or BENCH_BASELINE's), started the way its
 * src/main.ts starts it (127.0.0.1, ports chosen by the OS, alerts not
 * printed), plus the one thing the suite needs that main.ts cannot give a
 * preload: the monitor, for the queue values of the instant a block begins.
 * It calls the example's own `startServer()` (its `RunningServer.monitor`
 * is public), so the server, its queues and its telemetry are the example's.
 *
 * On SIGUSR2, once some request waits in a queue (within 2 s), it writes
 * `{ type: 'block', at, queues }` to stdout (a pipe:
 * the write is synchronous, so it is out before the block starts), then
 * busy-loops the main thread for BLOCK_MS, then writes `{ type: 'unblock', at }`.
 * Nothing on the main thread runs in between: the queue values cannot change,
 * so they are the true current values for the whole block.
 *
 * No `@infersignal/*` import here: the checkout's example resolves its own.
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const tree = process.argv[2];
const blockMs = Number(process.argv[3] ?? 1000);
if (!tree || !(blockMs > 0)) throw new Error('usage: fresh-child.ts <checkout> <block ms>');

interface QueueValues {
  waiting: number;
  inFlight: number;
  occupancy: number;
}
interface ExampleServer {
  url: string;
  metricsUrl: string | null;
  inferCapacity: number;
  runSeconds: number;
  monitor: { snapshot(): { queues: Record<string, QueueValues> } };
  close(): Promise<void>;
}
type StartServer = (options: Record<string, unknown>) => Promise<ExampleServer>;

/** Epoch milliseconds with sub-millisecond precision, comparable with the suite's clock. */
const now = (): number => performance.timeOrigin + performance.now();
const say = (message: unknown): void => void process.stdout.write(`${JSON.stringify(message)}\n`);

const { startServer } = (await import(
  pathToFileURL(join(tree, 'examples', 'fastify-onnx', 'src', 'server.ts')).href
)) as { startServer: StartServer };
const server = await startServer({ host: '127.0.0.1', port: 0, metricsPort: 0 });

/** Waits this long at most for a request to wait in some queue before blocking anyway. */
const QUEUED_WITHIN_MS = 2000;

function queueValues(): Record<string, QueueValues> {
  const queues: Record<string, QueueValues> = {};
  for (const [name, q] of Object.entries(server.monitor.snapshot().queues))
    queues[name] = { waiting: q.waiting, inFlight: q.inFlight, occupancy: q.occupancy };
  return queues;
}

function block(): void {
  const at = now();
  say({ type: 'block', at, queues: queueValues() });
  const until = performance.now() + blockMs;
  while (performance.now() < until) {
    // The main thread stuck in synchronous work (a long model run, a JSON.parse of a huge body).
  }
  say({ type: 'unblock', at: now() });
}

process.on('SIGUSR2', () => {
  // Block while requests wait, so that the values checked are not the zeros an idle moment would show
  // (a scrape that read nothing live could match those as well). Checked every 5 ms, for QUEUED_WITHIN_MS at most.
  const deadline = performance.now() + QUEUED_WITHIN_MS;
  const attempt = (): void => {
    const waiting = Object.values(queueValues()).some((q) => q.waiting > 0);
    if (waiting || performance.now() >= deadline) block();
    else setTimeout(attempt, 5);
  };
  attempt();
});

let closing = false;
const close = (): void => {
  if (closing) return;
  closing = true;
  setTimeout(() => process.exit(0), 3000).unref();
  void server.close().finally(() => process.exit(0));
};
process.once('SIGTERM', close);
process.once('SIGINT', close);
// The suite went away: do not outlive it.
process.stdin.on('end', close);
process.stdin.resume();

say({
  type: 'ready',
  url: server.url,
  metricsUrl: server.metricsUrl,
  inferCapacity: server.inferCapacity,
  runSeconds: server.runSeconds,
  pid: process.pid,
});
