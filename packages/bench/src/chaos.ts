import type { IncomingMessage, ServerResponse } from 'node:http';
import { seededRandom } from './rng';
import { brand } from '@infersignal/core/signals';

/** Chaos defaults: 15 % of calls fail, latency drawn from 200–1200 ms. */
export const CHAOS_DEFAULTS = Object.freeze({ errorRate: 0.15, latencyMs: [200, 1200] as readonly [number, number] });

export interface ChaosOptions {
  /** Share of calls that fail, in [0, 1]. */
  errorRate?: number;
  /** Added latency, uniform in [min, max] ms. */
  latencyMs?: readonly [number, number];
  /** Share of calls that get the latency (default 1 when latencyMs is set). */
  latencyRate?: number;
  /** `random` (default): independent draws. `even`: exactly errorRate of calls fail, evenly spaced (calibration uses it). */
  distribution?: 'random' | 'even';
  /** HTTP status of an injected failure (default 500). */
  statusCode?: number;
  seed?: number;
  /** Activate even when NODE_ENV=production. */
  force?: boolean;
  /** Turn it off without removing it (default true when errorRate or latencyMs is set). */
  enabled?: boolean;
}

/** What an injected failure throws from `wrap()`. */
export class ChaosError extends Error {
  override readonly name = 'ChaosError';
  readonly injected = true;
  constructor(readonly statusCode: number) {
    super('infersignal chaos: injected failure');
  }
}
// `instanceof` holds for instances made by the other build (ESM / CommonJS) of this package too.
brand(ChaosError, 'bench.ChaosError');

interface ChaosDecision {
  fail: boolean;
  delayMs: number;
}

interface ChaosStats {
  calls: number;
  failures: number;
  delayed: number;
}

/** Minimal shapes of a Fastify request/reply, so this file needs no Fastify types. */
interface ReplyLike {
  code(statusCode: number): ReplyLike;
  header(name: string, value: string): ReplyLike;
  send(payload?: unknown): unknown;
}

export interface Chaos {
  readonly enabled: boolean;
  /** Current failure share; calibration changes it while running. */
  errorRate: number;
  readonly stats: ChaosStats;
  /** One draw: fail or not, and how long to delay. */
  decide(): ChaosDecision;
  /** Wraps an async function: delays it and, on a failure draw, rejects with ChaosError instead of calling it. */
  wrap<A extends unknown[], R>(fn: (...args: A) => Promise<R> | R): (...args: A) => Promise<R>;
  /** Connect/Express middleware: delays, and answers injected failures with `statusCode`. */
  middleware(): (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;
  /** Wraps a plain node:http request listener. */
  handler(
    listener: (req: IncomingMessage, res: ServerResponse) => void,
  ): (req: IncomingMessage, res: ServerResponse) => void;
  /** Fastify `onRequest` hook. */
  fastifyHook(): (request: unknown, reply: ReplyLike) => Promise<void>;
}

function check(field: string, ok: boolean, message: string): void {
  if (!ok) throw new Error(`bench: invalid chaos option "${field}": ${message}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Fault injection for an example server: failures and latency, seeded and
 * reproducible. Disabled unless configured, and it refuses to start in
 * production (NODE_ENV=production) unless `force: true`: a chaos wrapper
 * left in a deployment would be an outage.
 */
export function chaos(options: ChaosOptions = {}): Chaos {
  const errorRate = options.errorRate ?? 0;
  check(
    'errorRate',
    typeof errorRate === 'number' && errorRate >= 0 && errorRate <= 1,
    `must be within [0, 1], got ${errorRate}`,
  );
  const latency = options.latencyMs;
  if (latency !== undefined) {
    check(
      'latencyMs',
      Array.isArray(latency) && latency.length === 2 && latency[0] >= 0 && latency[1] >= latency[0],
      `must be [min, max] with 0 <= min <= max, got ${JSON.stringify(latency)}`,
    );
  }
  const latencyRate = options.latencyRate ?? (latency ? 1 : 0);
  check('latencyRate', latencyRate >= 0 && latencyRate <= 1, `must be within [0, 1], got ${latencyRate}`);
  const statusCode = options.statusCode ?? 500;
  check(
    'statusCode',
    Number.isInteger(statusCode) && statusCode >= 400 && statusCode < 600,
    `must be an HTTP error status, got ${statusCode}`,
  );
  const distribution = options.distribution ?? 'random';
  check('distribution', distribution === 'random' || distribution === 'even', `must be random or even`);
  const configured = errorRate > 0 || (latency !== undefined && latencyRate > 0) || options.errorRate !== undefined;
  const enabled = options.enabled ?? configured;
  if (enabled && process.env.NODE_ENV === 'production' && options.force !== true) {
    throw new Error(
      'bench: chaos injection refuses to activate with NODE_ENV=production; pass force: true if you really mean it',
    );
  }
  const random = seededRandom(options.seed ?? 1);
  const stats: ChaosStats = { calls: 0, failures: 0, delayed: 0 };
  const decision: ChaosDecision = { fail: false, delayMs: 0 };
  let rate = errorRate;
  let owed = 0;

  const decide = (): ChaosDecision => {
    decision.fail = false;
    decision.delayMs = 0;
    if (!enabled) return decision;
    stats.calls++;
    if (distribution === 'even') {
      // Error diffusion: the running share of failures never exceeds the rate.
      owed += rate;
      if (owed >= 1 - 1e-9) {
        owed -= 1;
        decision.fail = true;
      }
    } else decision.fail = rate > 0 && random() < rate;
    if (latency && latencyRate > 0 && (latencyRate >= 1 || random() < latencyRate)) {
      decision.delayMs = latency[0] + random() * (latency[1] - latency[0]);
      if (decision.delayMs > 0) stats.delayed++;
    }
    if (decision.fail) stats.failures++;
    return decision;
  };

  const injectHttp = (res: ServerResponse): void => {
    res.statusCode = statusCode;
    res.setHeader('content-type', 'application/json');
    res.end('{"error":"chaos: injected failure"}');
  };

  return {
    enabled,
    get errorRate() {
      return rate;
    },
    set errorRate(value: number) {
      check('errorRate', typeof value === 'number' && value >= 0 && value <= 1, `must be within [0, 1], got ${value}`);
      rate = value;
      owed = 0;
    },
    stats,
    decide,
    wrap<A extends unknown[], R>(fn: (...args: A) => Promise<R> | R) {
      if (!enabled) return async (...args: A) => fn(...args);
      return async (...args: A) => {
        const { fail, delayMs } = decide();
        if (delayMs > 0) await sleep(delayMs);
        if (fail) throw new ChaosError(statusCode);
        return fn(...args);
      };
    },
    middleware() {
      return (_req, res, next) => {
        if (!enabled) return next();
        const { fail, delayMs } = decide();
        const go = () => (fail ? injectHttp(res) : next());
        if (delayMs > 0) setTimeout(go, delayMs);
        else go();
      };
    },
    handler(listener) {
      if (!enabled) return listener;
      return (req, res) => {
        const { fail, delayMs } = decide();
        const go = () => (fail ? injectHttp(res) : listener(req, res));
        if (delayMs > 0) setTimeout(go, delayMs);
        else go();
      };
    },
    fastifyHook() {
      return async (_request, reply) => {
        if (!enabled) return;
        const { fail, delayMs } = decide();
        if (delayMs > 0) await sleep(delayMs);
        if (fail) {
          reply.code(statusCode).header('content-type', 'application/json').send({ error: 'chaos: injected failure' });
        }
      };
    },
  };
}
