/**
 * `pnpm --filter @infersignal/example-node-sdk start`: the recipe app on
 * PORT (default 8080; 0 picks a free one), metrics at /metrics.
 */
import { startApp } from './app';

const app = await startApp({ port: Number(process.env.PORT ?? 8080) });
console.log(`inference API on ${app.url}/infer, metrics on ${app.url}/metrics`);
process.once('SIGTERM', () => void app.close());
process.once('SIGINT', () => void app.close());
