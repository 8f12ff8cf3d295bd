/**
 * Command line around `startServer()`:
 *
 *   pnpm --filter @infersignal/example-fastify-onnx start
 *
 * Settings from the environment: PORT (3000), HOST (127.0.0.1),
 * METRICS_PORT (9464), MODEL_PATH (the committed matmul-chain.onnx), ROWS (512), TOKEN_ROWS (64), QUEUE_SECONDS (1.5),
 * STREAM_CONCURRENCY (4), STORAGE_MS (0), SHED (1), THREADS (1), THRESHOLDS (JSON of core
 * thresholds), ALERTS (1: print alerts).
 *
 * Started by the demo as a child process with an IPC channel: it sends
 * `{ type: 'ready', url, metricsUrl, … }` (or `{ type: 'error', message }`)
 * and exits when the parent goes away, so a killed demo leaves no server behind.
 */
import type { ThresholdsInput } from '@infersignal/core';
import { startServer, type RunningServer, type ServerOptions } from './server';

function intEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new RangeError(`${name} must be an integer, got ${JSON.stringify(raw)}`);
  return value;
}

function numberEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new RangeError(`${name} must be a number, got ${JSON.stringify(raw)}`);
  return value;
}

function thresholdsEnv(): ThresholdsInput | undefined {
  const raw = process.env.THRESHOLDS;
  if (!raw) return undefined;
  try {
    return JSON.parse(raw) as ThresholdsInput;
  } catch (error) {
    throw new SyntaxError(`THRESHOLDS must be JSON: ${(error as Error).message}`);
  }
}

const send = (message: unknown): void => {
  if (process.send && process.connected) process.send(message);
};

let server: RunningServer | undefined;
let stopping = false;

async function shutdown(reason: string, code = 0): Promise<void> {
  if (stopping) return;
  stopping = true;
  if (!process.send) console.log(`${reason}: shutting down`);
  // Bounded: a stuck close must not keep the process (and its port) alive.
  setTimeout(() => process.exit(code), 5000).unref();
  await server?.close().catch((error: unknown) => console.error('[close]', error));
  process.exit(code);
}

process.once('SIGINT', () => void shutdown('SIGINT'));
process.once('SIGTERM', () => void shutdown('SIGTERM'));
// The parent (the demo) went away: do not outlive it.
process.once('disconnect', () => void shutdown('parent gone'));

try {
  const options: ServerOptions = {
    host: process.env.HOST || undefined,
    port: intEnv('PORT'),
    metricsPort: intEnv('METRICS_PORT'),
    modelPath: process.env.MODEL_PATH || undefined,
    rows: intEnv('ROWS'),
    tokenRows: intEnv('TOKEN_ROWS'),
    queueSeconds: numberEnv('QUEUE_SECONDS'),
    streamConcurrency: intEnv('STREAM_CONCURRENCY'),
    threads: intEnv('THREADS'),
    storageMs: intEnv('STORAGE_MS'),
    shed: process.env.SHED === undefined ? undefined : process.env.SHED !== '0',
    thresholds: thresholdsEnv(),
    onAlert:
      process.env.ALERTS === '0'
        ? undefined
        : (event) => console.log(`[alert] ${event.signal} ${event.previousLevel} -> ${event.level}: ${event.message}`),
  };
  server = await startServer(options);
  const { url, metricsUrl } = server;
  send({
    type: 'ready',
    url,
    metricsUrl,
    inferCapacity: server.inferCapacity,
    runSeconds: server.runSeconds,
    pid: process.pid,
  });
  console.log(`InferSignal fastify-onnx example on ${url} (metrics: ${metricsUrl ?? 'unavailable'})`);
  console.log(
    `  model run ${(server.runSeconds * 1000).toFixed(2)} ms per /v1/infer batch; infer queue capacity ${server.inferCapacity}`,
  );
  if (!process.send) {
    console.log(`  curl -s -X POST ${url}/v1/infer -H 'content-type: application/json' -d '{"input":[0.5,-0.25,1]}'`);
    console.log(
      `  curl -N -X POST ${url}/v1/completions -H 'content-type: application/json' -d '{"prompt":"hello","max_tokens":8,"stream":true}'`,
    );
    console.log(`  curl -s ${url}/healthz/ready`);
    console.log(`  curl -s -X POST ${url}/admin/reload -H 'content-type: application/json' -d '{"slowMs":1500}'`);
    if (metricsUrl) console.log(`  curl -s ${metricsUrl} | grep infersignal_signal_level`);
  }
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  console.error(`fastify-onnx example failed to start: ${message}`);
  send({ type: 'error', message });
  process.exitCode = 1;
  await shutdown('start-up failed', 1);
}
