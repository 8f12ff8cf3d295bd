import type { BenchConfig, Stage, TargetKind } from './types';
import type { StagePlan } from './recorder';
import { brand } from '@infersignal/core/signals';

export const DEFAULTS = {
  connections: 10,
  durationMs: 10_000,
  maxConnections: 256,
  maxDurationMs: 10 * 60_000,
  maxRequests: 10_000_000,
  timeoutMs: 10_000,
  scrapeIntervalMs: 1000,
} as const;

const KINDS: readonly TargetKind[] = ['http', 'openai-chat', 'openai-completions', 'grpc'];

/** Config errors name the field, like core's. */
export class BenchConfigError extends Error {
  override readonly name = 'BenchConfigError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`bench: invalid config "${field}": ${message}`);
  }
}
// `instanceof` holds for instances made by the other build (ESM / CommonJS) of this package too.
brand(BenchConfigError, 'bench.BenchConfigError');

function positive(field: string, value: unknown, integer = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new BenchConfigError(
      field,
      `must be a positive ${integer ? 'integer' : 'number'}, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

function inferKind(url: URL): TargetKind {
  if (url.protocol === 'grpc:') return 'grpc';
  if (url.pathname.endsWith('/chat/completions')) return 'openai-chat';
  if (url.pathname.endsWith('/completions')) return 'openai-completions';
  return 'http';
}

export function parseTarget(target: unknown): URL {
  if (typeof target !== 'string' || target === '') throw new BenchConfigError('target', 'must be a URL string');
  try {
    return new URL(target);
  } catch {
    throw new BenchConfigError('target', `not a URL: ${JSON.stringify(target)}`);
  }
}

export function resolveKind(config: BenchConfig, url: URL): TargetKind {
  const kind = config.kind ?? inferKind(url);
  if (!KINDS.includes(kind)) throw new BenchConfigError('kind', `must be one of ${KINDS.join(', ')}`);
  if (kind === 'grpc' && !config.grpc)
    throw new BenchConfigError('grpc', 'a gRPC target needs { protoPath, service, method }');
  return kind;
}

/** The stages a config describes, validated, truncated to the duration cap. */
export function planStages(config: BenchConfig): { plans: StagePlan[]; truncated: boolean } {
  let stages: Stage[];
  if (config.stages !== undefined) {
    if (!Array.isArray(config.stages) || config.stages.length === 0)
      throw new BenchConfigError('stages', 'must be a non-empty array');
    stages = config.stages;
  } else if (config.rate !== undefined)
    stages = [{ rate: config.rate, durationMs: config.durationMs ?? DEFAULTS.durationMs }];
  else
    stages = [
      { concurrency: config.connections ?? DEFAULTS.connections, durationMs: config.durationMs ?? DEFAULTS.durationMs },
    ];
  const maxDuration =
    config.maxDurationMs === undefined ? DEFAULTS.maxDurationMs : positive('maxDurationMs', config.maxDurationMs);
  const plans: StagePlan[] = [];
  let at = 0;
  let truncated = false;
  stages.forEach((stage, i) => {
    const field = config.stages ? `stages[${i}]` : config.rate !== undefined ? 'rate' : 'connections';
    const duration = positive(config.stages ? `${field}.durationMs` : 'durationMs', stage.durationMs);
    if ((stage.rate === undefined) === (stage.concurrency === undefined))
      throw new BenchConfigError(field, 'needs exactly one of rate (open loop) or concurrency (closed loop)');
    const rate = stage.rate === undefined ? null : positive(config.stages ? `${field}.rate` : field, stage.rate);
    const concurrency =
      stage.concurrency === undefined
        ? null
        : positive(config.stages ? `${field}.concurrency` : field, stage.concurrency, true);
    if (at >= maxDuration) {
      truncated = true;
      return;
    }
    const clipped = Math.min(duration, maxDuration - at);
    if (clipped < duration) truncated = true;
    const name = stage.name ?? (rate !== null ? `${rate} rps` : `${concurrency} vus`);
    plans.push({ name, model: rate !== null ? 'open' : 'closed', rate, concurrency, startMs: at, durationMs: clipped });
    at += clipped;
  });
  return { plans, truncated };
}

export function resolveLimits(config: BenchConfig) {
  return {
    timeoutMs: config.timeoutMs === undefined ? DEFAULTS.timeoutMs : positive('timeoutMs', config.timeoutMs),
    maxRequests:
      config.maxRequests === undefined ? DEFAULTS.maxRequests : positive('maxRequests', config.maxRequests, true),
    maxConnections:
      config.maxConnections === undefined
        ? DEFAULTS.maxConnections
        : positive('maxConnections', config.maxConnections, true),
    scrapeIntervalMs:
      config.scrapeIntervalMs === undefined
        ? DEFAULTS.scrapeIntervalMs
        : positive('scrapeIntervalMs', config.scrapeIntervalMs),
    seed: config.seed ?? 1,
    arrival: config.arrival ?? 'constant',
  };
}
