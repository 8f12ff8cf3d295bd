/**
 * Command line around `startServer()`:
 *
 *   pnpm --filter @infersignal/example-llama-completions start
 *
 * Environment: PORT (3000; 0 picks a free one), HOST (127.0.0.1), MODEL_PATH (default: a generated
 * model), SEQUENCES (2), CONTEXT_SIZE (256), THREADS (1), MAX_WAITING (8 per sequence),
 * REQUEST_TIMEOUT_MS (30000), ALERTS=0 (do not print alerts).
 */
import { startServer, type RunningServer } from './server';

function intEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new RangeError(`${name} must be an integer, got ${JSON.stringify(raw)}`);
  return value;
}

let server: RunningServer | undefined;
let stopping = false;

async function shutdown(reason: string, code = 0): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log(`${reason}: shutting down`);
  setTimeout(() => process.exit(code), 5000).unref();
  await server?.close().catch((error: unknown) => console.error('[close]', error));
  process.exit(code);
}

process.once('SIGINT', () => void shutdown('SIGINT'));
process.once('SIGTERM', () => void shutdown('SIGTERM'));

try {
  server = await startServer({
    host: process.env.HOST || undefined,
    port: intEnv('PORT'),
    modelPath: process.env.MODEL_PATH || undefined,
    sequences: intEnv('SEQUENCES'),
    contextSize: intEnv('CONTEXT_SIZE'),
    threads: intEnv('THREADS'),
    maxWaiting: intEnv('MAX_WAITING'),
    requestTimeoutMs: intEnv('REQUEST_TIMEOUT_MS'),
    onAlert:
      process.env.ALERTS === '0'
        ? undefined
        : (event) => console.log(`[alert] ${event.signal} ${event.previousLevel} -> ${event.level}: ${event.message}`),
  });
  const { url, metricsUrl, model } = server;
  const info = model.loadInfo;
  console.log(`InferSignal llama-completions example on ${url} (metrics: ${metricsUrl})`);
  console.log(
    `  model ${info.path} (${info.fileBytes} bytes), ${info.sequences} sequences × ${info.contextSize} tokens, loaded in ${((info.modelSeconds + info.contextSeconds) * 1000).toFixed(0)} ms`,
  );
  console.log(
    `  curl -N ${url}/v1/completions -H 'content-type: application/json' -d '{"prompt":"Once upon a time","max_tokens":32,"stream":true}'`,
  );
  console.log(`  curl -s ${metricsUrl} | grep -E 'time_to_first_token|kv_cache|queue_wait'`);
} catch (error) {
  console.error(`llama-completions example failed to start: ${error instanceof Error ? error.message : String(error)}`);
  await shutdown('start-up failed', 1);
}
