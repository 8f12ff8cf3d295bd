/**
 * One Fastify server of the idle suite (idle.ts), `fork()`ed with its
 * variant as the only argument. It answers `GET /v1/infer` with a tiny JSON
 * body and serves its metrics (if it has any) on `metricsUrl`, then reports
 * `{ type: 'ready', port, metricsUrl }` over IPC and waits to be killed. The
 * parent measures it from outside (/proc), so the child does no measuring
 * work of its own: whatever it costs at rest is its telemetry's.
 *
 * Variants (what a user gets from each tool's documented setup):
 *   bare         Fastify alone, no metrics
 *   prom-client  prom-client's collectDefaultMetrics() and an /metrics route
 *   otel         NodeSDK with instrumentation-http, instrumentation-runtime-node
 *                and the Prometheus exporter (the SDK's stock tracing on, its
 *                export off: nothing leaves loopback)
 *   infersignal  start() with its defaults (Prometheus on its own port) and the
 *                Fastify plugin with one queue
 *
 * Telemetry is set up before Fastify is imported: instrumentation-http must
 * patch `http` first.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';

export const IDLE_VARIANTS = ['bare', 'prom-client', 'otel', 'infersignal'] as const;
export type IdleVariant = (typeof IDLE_VARIANTS)[number];

const BODY = { id: 0, model: 'tiny', output: 'hello' };

async function loopbackServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const { createServer } = await import('node:http');
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}/metrics`;
}

async function main(variant: IdleVariant): Promise<void> {
  let metricsUrl = '';
  let register: ((app: import('fastify').FastifyInstance) => Promise<void>) | undefined;

  if (variant === 'otel') {
    // Stock tracing stays on, as NodeSDK sets it up; its exporter would dial a collector that is not there.
    process.env.OTEL_TRACES_EXPORTER = 'none';
    process.env.OTEL_LOGS_EXPORTER = 'none';
    const { NodeSDK } = await import('@opentelemetry/sdk-node');
    const { HttpInstrumentation } = await import('@opentelemetry/instrumentation-http');
    const { RuntimeNodeInstrumentation } = await import('@opentelemetry/instrumentation-runtime-node');
    const { PrometheusExporter } = await import('@opentelemetry/exporter-prometheus');
    const exporter = new PrometheusExporter({ preventServerStart: true });
    const sdk = new NodeSDK({
      serviceName: 'bench',
      metricReader: exporter,
      instrumentations: [new HttpInstrumentation(), new RuntimeNodeInstrumentation()],
    });
    sdk.start();
    metricsUrl = await loopbackServer((req, res) => exporter.getMetricsRequestHandler(req, res));
  } else if (variant === 'infersignal') {
    const { start } = await import('@infersignal/node');
    const signal = start({ serviceName: 'bench', prometheus: { host: '127.0.0.1', port: 0 }, otlp: false });
    const address = await signal.prometheus!.ready;
    if (!address) throw new Error('Prometheus endpoint did not start');
    metricsUrl = address.url;
    const { inferSignal } = await import('@infersignal/fastify');
    register = async (app) => {
      await app.register(inferSignal, { monitor: signal.monitor, queue: 'infer' });
    };
  } else if (variant === 'prom-client') {
    const client = await import('prom-client');
    client.collectDefaultMetrics();
    register = async (app) => {
      app.get('/metrics', async (_request, reply) => {
        reply.type(client.register.contentType);
        return client.register.metrics();
      });
    };
  }

  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: false });
  if (register) await register(app);
  app.get('/v1/infer', async () => BODY);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  if (variant === 'prom-client') metricsUrl = `http://127.0.0.1:${port}/metrics`;
  process.send!({ type: 'ready', port, metricsUrl });
}

// Run as the forked child only: the suite imports this module for its variant list.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const variant = process.argv[2] as IdleVariant;
  if (!IDLE_VARIANTS.includes(variant)) throw new Error(`idle-child: unknown variant ${variant}`);
  // The parent's exit ends this one: a server left behind would skew the next run's rest.
  process.on('disconnect', () => process.exit(0));
  main(variant).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
