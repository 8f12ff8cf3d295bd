/**
 * Parent side of the server child (server-child.ts): fork one server per
 * (framework, variant), measure windows of load against it, read back the
 * server's own CPU time per window.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ROOT } from './report';
import { CHILD_ENV } from './env';

export const FRAMEWORKS = ['fastify', 'express'] as const;
export type Framework = (typeof FRAMEWORKS)[number];
export const VARIANTS = ['bare', 'hook', 'infersignal-api', 'infersignal-producer', 'infersignal-traces', 'otel-http'] as const;
export type Variant = (typeof VARIANTS)[number];

export const VARIANT_LABEL: Record<Variant, string> = {
  bare: 'bare',
  hook: 'hand-written hook (1 histogram + 1 counter, OTel SDK)',
  'infersignal-api': 'InferSignal, metrics, API export',
  'infersignal-producer': 'InferSignal, metrics, producer export',
  'infersignal-traces': 'InferSignal, metrics + traces',
  'otel-http': '@opentelemetry/instrumentation-http (metrics + traces)',
};

export type ChildMessage =
  | { type: 'ready'; port: number; metricsUrl: string | null }
  | { type: 'window'; cpuUs: number; requests: number; spans: number }
  | { type: 'error'; message: string };


const CHILD = fileURLToPath(new URL('./server-child.ts', import.meta.url));

export interface ServerWindow {
  /** Server CPU (user + system) over the window, µs. */
  cpuUs: number;
  /** Requests the handler served in the window. */
  requests: number;
  /** Spans exported in the window (traces variants). */
  spans: number;
}

export interface ServerHandle {
  readonly framework: Framework;
  readonly variant: Variant;
  readonly url: string;
  readonly metricsUrl: string | null;
  /** Runs `load` while the server measures its own CPU; Prometheus is scraped every second meanwhile. */
  window<T>(load: () => Promise<T>): Promise<{ result: T; server: ServerWindow; scrapes: number }>;
  close(): void;
}

function next(child: ChildProcess, type: ChildMessage['type']): Promise<ChildMessage> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: ChildMessage) => {
      if (message.type === 'error') {
        cleanup();
        reject(new Error(`server child: ${message.message}`));
      } else if (message.type === type) {
        cleanup();
        resolve(message);
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`server child exited (${code}) before '${type}'`));
    };
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

/**
 * Scrapes the endpoint as the window starts and every second after, as
 * Prometheus would: with half-second windows that is one scrape per window,
 * 30× more often than a 15 s scrape interval.
 */
function scraper(url: string | null): { stop(): Promise<number> } {
  if (!url) return { stop: async () => 0 };
  let scrapes = 0;
  let inflight: Promise<void> = Promise.resolve();
  const scrape = () => {
    inflight = fetch(url).then(async (res) => {
      await res.text();
      if (res.ok) scrapes++;
    }, () => {});
  };
  scrape();
  const timer = setInterval(scrape, 1000);
  return {
    stop: async () => {
      clearInterval(timer);
      await inflight;
      return scrapes;
    },
  };
}

export async function startServer(framework: Framework, variant: Variant): Promise<ServerHandle> {
  const child = fork(CHILD, [framework, variant], { cwd: ROOT, env: CHILD_ENV, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = (await next(child, 'ready')) as Extract<ChildMessage, { type: 'ready' }>;
  return {
    framework,
    variant,
    url: `http://127.0.0.1:${ready.port}/v1/infer`,
    metricsUrl: ready.metricsUrl,
    async window(load) {
      const begun = next(child, 'window');
      child.send({ type: 'begin' });
      const scrape = scraper(ready.metricsUrl);
      const result = await load();
      const scrapes = await scrape.stop();
      child.send({ type: 'end' });
      const server = (await begun) as Extract<ChildMessage, { type: 'window' }>;
      return { result, server: { cpuUs: server.cpuUs, requests: server.requests, spans: server.spans }, scrapes };
    },
    close() {
      if (child.connected) child.send({ type: 'exit' });
      setTimeout(() => child.kill(), 2000).unref();
    },
  };
}
