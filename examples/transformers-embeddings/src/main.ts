/**
 * Command line around `startServer()`:
 *
 *   pnpm --filter @infersignal/example-transformers-embeddings start
 *
 * Settings from the environment: PORT (3000), HOST (127.0.0.1), METRICS_PORT (9464),
 * MODEL_DIR (the committed tiny models), MODEL_ID (tiny-bert-embed), MAX_WAITING (32), SHED (1).
 */
import { startServer } from './server';

const int = (name: string): number | undefined => (process.env[name] ? Number(process.env[name]) : undefined);

const server = await startServer({
  host: process.env.HOST || undefined,
  port: int('PORT'),
  metricsPort: int('METRICS_PORT'),
  modelDir: process.env.MODEL_DIR || undefined,
  modelId: process.env.MODEL_ID || undefined,
  maxWaiting: int('MAX_WAITING'),
  shed: process.env.SHED === undefined ? undefined : process.env.SHED !== '0',
  onAlert: (event) => console.log(`[alert] ${event.signal} ${event.previousLevel} -> ${event.level}: ${event.message}`),
});
console.log(
  `InferSignal transformers-embeddings example on ${server.url} (metrics: ${server.metricsUrl ?? 'unavailable'})`,
);
console.log(
  `  curl -s ${server.url}/v1/embeddings -H 'content-type: application/json' -d '{"input":["the cat sat","a dog ran"]}'`,
);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void server.close().then(() => process.exit(0)));
