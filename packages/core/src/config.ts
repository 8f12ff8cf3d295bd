/**
 * The threshold schema: defaults, validation and merging. The same
 * validated object drives the in-process detectors, the generated
 * Prometheus rules, the dashboard and the docs.
 */
import { brand } from './brand';
import { describeValue } from './describe';
import { checkField, type FieldSpec } from './validate';

export interface QueueThresholds {
  /** Occupancy ((waiting + in flight) / capacity) at which the level is WARN. */
  occupancyWarn: number;
  /** Occupancy above which the level is CRITICAL. */
  occupancyCritical: number;
  /** Quantile of recent queue waits compared with the wait thresholds, in (0, 1). */
  waitQuantile: number;
  /** Queue wait (s) at that quantile for WARN. */
  waitWarnSeconds: number;
  /** Queue wait (s) at that quantile for CRITICAL. */
  waitCriticalSeconds: number;
  /** Sliding window (s) over which the wait quantile is computed. */
  waitWindowSeconds: number;
  /**
   * How long (s) a wait level must hold before it is reported (Prometheus `for:`). Not applied to the age,
   * which is itself a time held: the oldest request has waited that long.
   */
  forSeconds: number;
  /**
   * How long (s) a wait WARN stays reported after the wait fell back (Prometheus `keep_firing_for`), so
   * a queue near saturation that drains for a moment does not resolve its warning and raise it again.
   * CRITICAL, which sheds, still lowers at once. 0: off.
   */
  keepFiringSeconds: number;
  /** Retry-After (s) suggested to shed clients. */
  retryAfterSeconds: number;
  /**
   * Least time (s) admission keeps shedding once it began; it ends after that only when every level
   * that raised it has cleared by its hysteresis, so a queue at the bound does not flip between
   * shedding and serving.
   */
  shedHoldSeconds: number;
  /** Age (s) of the oldest request still waiting for WARN (judged on the request path and the tick). */
  ageWarnSeconds: number;
  /** Age (s) of the oldest request still waiting for CRITICAL. Announced, not shed on: occupancy and wait shed. */
  ageCriticalSeconds: number;
  /**
   * An LLM queue's token backlog, as the time (s) it takes to drain at the output rate the queue has been
   * serving at: output tokens owed to the running requests plus those the waiting ones asked for (each
   * max_tokens scaled by the share of it recent completed requests used), over output tokens per second
   * while requests ran (capacity.rateWindowSeconds). Judged while requests wait, on the tick. WARN above this.
   */
  tokenDrainWarnSeconds: number;
  /** Token backlog drain time (s) for CRITICAL. Announced, not shed on. */
  tokenDrainCriticalSeconds: number;
}

export interface ModelLoadThresholds {
  /** A load slower than spikeFactor × baseline is a spike. */
  spikeFactor: number;
  /**
   * Loads the healthy baseline is learnt from (their median), the recent loads it may fall to, and the
   * consecutive spikes at one level after which that level is re-learnt as the new baseline.
   */
  baselineSamples: number;
  /** Fixed baseline (s) per model; when set, it replaces the learnt baseline. */
  baselineSeconds: Record<string, number>;
  /**
   * A load shorter than this (s) is never a spike, whatever its ratio: sub-second loads are dominated by CPU
   * scheduling, not storage, and no readiness deadline is at stake. 0 turns the floor off.
   */
  minSpikeSeconds: number;
}

export interface StreamThresholds {
  /** Interrupted share (cancelled, error, unavailable, deadline_exceeded) above which the level is WARN. */
  interruptedRatio: number;
  /** Interrupted share above which the level is CRITICAL. */
  interruptedRatioCritical: number;
  /** Streams that must have ended in the window before the share is judged. */
  minSamples: number;
  /** Number of most recent streams in the sliding window. */
  windowSize: number;
}

export interface DeviceMemoryThresholds {
  /** Fragmentation (1 − allocated / reserved) above which the level is WARN. */
  fragmentation: number;
  /** How long (s) fragmentation must stay high before it is reported. */
  fragmentationForSeconds: number;
  /** Samples in the drift (leak-trend) window. */
  driftWindowSamples: number;
  /** Minimum growth over the window, relative to reserved, of the reserved − allocated gap or of allocated itself. */
  driftMinGrowth: number;
  /** Minimum R² of the linear fit for the growth to count as a trend rather than noise. */
  driftMinR2: number;
}

export interface GlitchThresholds {
  /** Window (s) for ΔL = max − P99 of inference duration. */
  windowSeconds: number;
  /** ΔL (s) above which a P99 glitch is reported. */
  deltaSeconds: number;
  /** Minimum samples in the window before ΔL is judged. */
  minSamples: number;
}

export interface AnomalyThresholds {
  /** Detector ticks in the z-score window. */
  window: number;
  /** z at which a tick's queue wait quantile is an anomaly (higher is worse). */
  zScore: number;
  /**
   * Floor as a share of `queue.waitWarnSeconds`: the wait quantile must be
   * above it as well (0.5 × 200 ms: a P95 under 100 ms is never an anomaly).
   */
  floorRatio: number;
  /** How long (s) the anomaly must hold, tick after tick, before it is reported. */
  forSeconds: number;
  /** A reported anomaly clears below zScore × (1 − hysteresis) or the floor × (1 − hysteresis). */
  hysteresis: number;
  /** How long (s) a reported anomaly stays after it cleared (as `queue.keepFiringSeconds`). 0: off. */
  keepFiringSeconds: number;
  /** Count a drop in wait as an anomaly too (off: only a rise alerts). */
  bothDirections: boolean;
}

export interface CapacityThresholds {
  /** Utilization ρ = λ·S / c above which the capacity level is WARN (the early warning). */
  utilizationWarn: number;
  /** Utilization at or above which it is CRITICAL. */
  utilizationCritical: number;
  /** WARN when ρ's trend reaches 1 within this many seconds. */
  saturationWarnSeconds: number;
  /** Window (s) of the windowed arrival and completion rates. */
  rateWindowSeconds: number;
  /** Half-life (s) of the arrival-rate EWMA. */
  rateHalfLifeSeconds: number;
  /** Window (s) of service times for S. */
  serviceWindowSeconds: number;
  /** Window (s) of the least-squares trend of ρ. */
  trendWindowSeconds: number;
  /** How long (s) a raised capacity level must hold before it is reported. */
  forSeconds: number;
  /** How long (s) a capacity WARN stays after ρ and the trend fell back (as `queue.keepFiringSeconds`). 0: off. */
  keepFiringSeconds: number;
  /** Let the capacity level raise the queue's backpressure level (and shedding). */
  backpressure: boolean;
}

export interface EventLoopThresholds {
  /** Event-loop delay P99 (s) for WARN. */
  delayWarnSeconds: number;
  /** Event-loop delay P99 (s) for CRITICAL. */
  delayCriticalSeconds: number;
  /** Sampling period (ms) of the event-loop monitor. */
  sampleIntervalMs: number;
  /** Let the event-loop level raise the queues' backpressure level (from the second blocked sample period in a row). */
  backpressure: boolean;
}

export interface HeapThresholds {
  /** Live share (old-generation bytes in use after a major GC / the old-generation limit) above which the level is WARN. */
  liveWarn: number;
  /** Live share above which the level is CRITICAL. */
  liveCritical: number;
  /** Consecutive major GCs the live share must stay above a bound before that level is reported. */
  majorGcs: number;
  /** Projected seconds until the live set reaches the share at which V8 may abort (the leak precursor) for WARN. */
  exhaustionWarnSeconds: number;
  /** Projected seconds to heap exhaustion for CRITICAL. */
  exhaustionCriticalSeconds: number;
  /** Window (s) of major-GC readings the live set's growth trend is fitted over. */
  trendWindowSeconds: number;
}

export interface ConnectionThresholds {
  /** Open connections / capacity above which the `connections` signal is WARN. */
  saturationWarn: number;
  /** Open connections / capacity above which it is CRITICAL. */
  saturationCritical: number;
}

/**
 * When a replica counts as saturated to a router or an autoscaler: saturation = max(waiting requests /
 * queueDepthThreshold, KV-cache utilization / kvCacheUtilThreshold), 1 at saturation. The defaults are the
 * Gateway API Inference Extension endpoint picker's; the generated picker config and KEDA trigger use these.
 */
export interface SaturationThresholds {
  /** Requests waiting at which a replica is saturated. */
  queueDepthThreshold: number;
  /** KV-cache utilization (0–1) at which a replica is saturated. */
  kvCacheUtilThreshold: number;
  /** Time-to-first-token P95 (s) the autoscaler keeps the replicas under. */
  timeToFirstTokenSeconds: number;
}

export interface Thresholds {
  queue: QueueThresholds;
  connections: ConnectionThresholds;
  capacity: CapacityThresholds;
  eventLoop: EventLoopThresholds;
  heap: HeapThresholds;
  modelLoad: ModelLoadThresholds;
  stream: StreamThresholds;
  deviceMemory: DeviceMemoryThresholds;
  glitch: GlitchThresholds;
  anomaly: AnomalyThresholds;
  saturation: SaturationThresholds;
}

export type ThresholdsInput = { [K in keyof Thresholds]?: Partial<Thresholds[K]> };

export const DEFAULT_THRESHOLDS: Readonly<Thresholds> = Object.freeze({
  queue: {
    occupancyWarn: 0.7,
    occupancyCritical: 0.85,
    waitQuantile: 0.95,
    waitWarnSeconds: 0.2,
    waitCriticalSeconds: 0.5,
    waitWindowSeconds: 30,
    forSeconds: 0,
    keepFiringSeconds: 10,
    retryAfterSeconds: 1,
    shedHoldSeconds: 3,
    ageWarnSeconds: 1,
    ageCriticalSeconds: 5,
    tokenDrainWarnSeconds: 30,
    tokenDrainCriticalSeconds: 120,
  },
  capacity: {
    utilizationWarn: 0.8,
    utilizationCritical: 0.95,
    saturationWarnSeconds: 60,
    rateWindowSeconds: 10,
    rateHalfLifeSeconds: 2,
    serviceWindowSeconds: 30,
    trendWindowSeconds: 30,
    forSeconds: 2,
    keepFiringSeconds: 10,
    backpressure: false,
  },
  connections: { saturationWarn: 0.85, saturationCritical: 0.95 },
  eventLoop: { delayWarnSeconds: 0.1, delayCriticalSeconds: 0.5, sampleIntervalMs: 1000, backpressure: true },
  heap: {
    liveWarn: 0.7,
    liveCritical: 0.75,
    majorGcs: 2,
    exhaustionWarnSeconds: 900,
    exhaustionCriticalSeconds: 120,
    trendWindowSeconds: 600,
  },
  modelLoad: { spikeFactor: 3, baselineSamples: 5, baselineSeconds: {}, minSpikeSeconds: 1 },
  stream: { interruptedRatio: 0.005, interruptedRatioCritical: 0.05, minSamples: 100, windowSize: 1000 },
  deviceMemory: {
    fragmentation: 0.65,
    fragmentationForSeconds: 0,
    driftWindowSamples: 60,
    driftMinGrowth: 0.05,
    driftMinR2: 0.8,
  },
  glitch: { windowSeconds: 10, deltaSeconds: 0.25, minSamples: 20 },
  anomaly: {
    window: 60,
    zScore: 3,
    floorRatio: 0.5,
    forSeconds: 5,
    hysteresis: 0.2,
    keepFiringSeconds: 10,
    bothDirections: false,
  },
  saturation: { queueDepthThreshold: 5, kvCacheUtilThreshold: 0.8, timeToFirstTokenSeconds: 1 },
});

/**
 * Thrown at creation for an invalid configuration; `field` is the dotted
 * path. `instanceof` holds across the ESM and CommonJS builds.
 */
export class InferSignalConfigError extends Error {
  override readonly name = 'InferSignalConfigError';
  constructor(
    readonly field: string,
    /** What is wrong with the field (the message without the field). */
    readonly detail: string,
  ) {
    super(`infersignal: invalid config "${field}": ${detail}`);
  }
}

brand(InferSignalConfigError, 'InferSignalConfigError');

type Rule = 'positive' | 'nonNegative' | 'ratio' | 'fraction' | 'integer' | 'factor' | 'boolean';

const RULES: { [K in keyof Thresholds]: { [F in keyof Thresholds[K]]: Rule | 'map' } } = {
  capacity: {
    utilizationWarn: 'ratio',
    utilizationCritical: 'positive',
    saturationWarnSeconds: 'positive',
    rateWindowSeconds: 'positive',
    rateHalfLifeSeconds: 'positive',
    serviceWindowSeconds: 'positive',
    trendWindowSeconds: 'positive',
    forSeconds: 'nonNegative',
    keepFiringSeconds: 'nonNegative',
    backpressure: 'boolean',
  },
  eventLoop: {
    delayWarnSeconds: 'positive',
    delayCriticalSeconds: 'positive',
    sampleIntervalMs: 'positive',
    backpressure: 'boolean',
  },
  connections: { saturationWarn: 'ratio', saturationCritical: 'ratio' },
  heap: {
    liveWarn: 'ratio',
    liveCritical: 'ratio',
    majorGcs: 'integer',
    exhaustionWarnSeconds: 'positive',
    exhaustionCriticalSeconds: 'positive',
    trendWindowSeconds: 'positive',
  },
  queue: {
    occupancyWarn: 'ratio',
    occupancyCritical: 'ratio',
    waitQuantile: 'fraction',
    waitWarnSeconds: 'positive',
    waitCriticalSeconds: 'positive',
    waitWindowSeconds: 'positive',
    forSeconds: 'nonNegative',
    keepFiringSeconds: 'nonNegative',
    retryAfterSeconds: 'positive',
    shedHoldSeconds: 'nonNegative',
    ageWarnSeconds: 'positive',
    ageCriticalSeconds: 'positive',
    tokenDrainWarnSeconds: 'positive',
    tokenDrainCriticalSeconds: 'positive',
  },
  modelLoad: {
    spikeFactor: 'factor',
    baselineSamples: 'integer',
    baselineSeconds: 'map',
    minSpikeSeconds: 'nonNegative',
  },
  stream: {
    interruptedRatio: 'ratio',
    interruptedRatioCritical: 'ratio',
    minSamples: 'integer',
    windowSize: 'integer',
  },
  deviceMemory: {
    fragmentation: 'ratio',
    fragmentationForSeconds: 'nonNegative',
    driftWindowSamples: 'integer',
    driftMinGrowth: 'ratio',
    driftMinR2: 'ratio',
  },
  glitch: { windowSeconds: 'positive', deltaSeconds: 'positive', minSamples: 'integer' },
  anomaly: {
    window: 'integer',
    zScore: 'positive',
    floorRatio: 'nonNegative',
    forSeconds: 'nonNegative',
    hysteresis: 'ratio',
    keepFiringSeconds: 'nonNegative',
    bothDirections: 'boolean',
  },
  saturation: { queueDepthThreshold: 'integer', kvCacheUtilThreshold: 'fraction', timeToFirstTokenSeconds: 'positive' },
};

const INTEGER_MAX: Record<string, number> = {
  'stream.windowSize': 100_000,
  'stream.minSamples': 100_000,
  'deviceMemory.driftWindowSamples': 10_000,
  'modelLoad.baselineSamples': 1000,
  'anomaly.window': 10_000,
  'glitch.minSamples': 4096,
  'heap.majorGcs': 64,
};

/** The field spec of a rule: what a threshold of that kind accepts, checked by core's one validator. */
function specOf(field: string, rule: Rule): FieldSpec {
  switch (rule) {
    case 'boolean':
      return { type: 'boolean' };
    case 'positive':
      return { type: 'number', above: 0 };
    case 'nonNegative':
      return { type: 'number', min: 0 };
    case 'ratio':
      return { type: 'number', min: 0, max: 1 };
    case 'fraction':
      return { type: 'number', above: 0, below: 1 };
    case 'factor':
      return { type: 'number', above: 1 };
    case 'integer':
      // Window sizes allocate typed arrays up front: a cap keeps memory bounded and the error clear.
      return { type: 'integer', min: 1, max: INTEGER_MAX[field.split('.').slice(-2).join('.')] ?? 1_000_000 };
  }
}

function checkValue(field: string, value: unknown, rule: Rule): number | boolean {
  return checkField(field, value, specOf(field, rule));
}

function checkNumber(field: string, value: unknown, rule: Exclude<Rule, 'boolean'>): number {
  return checkField(field, value, specOf(field, rule));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Merges `input` over the defaults and validates every field. Unknown keys,
 * wrong types and out-of-range values throw an InferSignalConfigError that
 * names the field (e.g. `thresholds.queue.occupancyWarn`).
 */
export function resolveThresholds(input: unknown = {}, prefix = 'thresholds'): Thresholds {
  if (input === undefined || input === null) input = {};
  if (!isPlainObject(input)) throw new InferSignalConfigError(prefix, `must be an object, got ${describeValue(input)}`);
  const out = {} as Record<string, Record<string, unknown>>;
  for (const key of Object.keys(input)) {
    if (!(key in RULES))
      throw new InferSignalConfigError(
        `${prefix}.${key}`,
        `unknown key (expected one of ${Object.keys(RULES).join(', ')})`,
      );
  }
  for (const group of Object.keys(RULES) as (keyof Thresholds)[]) {
    const groupInput = (input as Record<string, unknown>)[group] ?? {};
    const path = `${prefix}.${group}`;
    if (!isPlainObject(groupInput))
      throw new InferSignalConfigError(path, `must be an object, got ${describeValue(groupInput)}`);
    const rules = RULES[group] as Record<string, Rule | 'map'>;
    for (const key of Object.keys(groupInput)) {
      if (!(key in rules))
        throw new InferSignalConfigError(
          `${path}.${key}`,
          `unknown key (expected one of ${Object.keys(rules).join(', ')})`,
        );
    }
    const defaults = DEFAULT_THRESHOLDS[group] as unknown as Record<string, unknown>;
    const resolved: Record<string, unknown> = {};
    for (const [key, rule] of Object.entries(rules)) {
      const value = groupInput[key] ?? defaults[key];
      if (rule === 'map') {
        if (!isPlainObject(value))
          throw new InferSignalConfigError(
            `${path}.${key}`,
            `must be an object of numbers, got ${describeValue(value)}`,
          );
        const map: Record<string, number> = {};
        for (const [name, seconds] of Object.entries(value))
          map[name] = checkNumber(`${path}.${key}.${name}`, seconds, 'positive');
        resolved[key] = map;
      } else {
        resolved[key] = checkValue(`${path}.${key}`, value, rule);
      }
    }
    out[group] = resolved;
  }
  const t = out as unknown as Thresholds;
  if (t.queue.occupancyWarn >= t.queue.occupancyCritical) {
    throw new InferSignalConfigError(
      `${prefix}.queue.occupancyWarn`,
      `must be below queue.occupancyCritical (${t.queue.occupancyCritical}), got ${t.queue.occupancyWarn}`,
    );
  }
  if (t.queue.waitWarnSeconds >= t.queue.waitCriticalSeconds) {
    throw new InferSignalConfigError(
      `${prefix}.queue.waitWarnSeconds`,
      `must be below queue.waitCriticalSeconds (${t.queue.waitCriticalSeconds}), got ${t.queue.waitWarnSeconds}`,
    );
  }
  if (t.queue.ageWarnSeconds >= t.queue.ageCriticalSeconds) {
    throw new InferSignalConfigError(
      `${prefix}.queue.ageWarnSeconds`,
      `must be below queue.ageCriticalSeconds (${t.queue.ageCriticalSeconds})`,
    );
  }
  if (t.queue.tokenDrainWarnSeconds >= t.queue.tokenDrainCriticalSeconds) {
    throw new InferSignalConfigError(
      `${prefix}.queue.tokenDrainWarnSeconds`,
      `must be below queue.tokenDrainCriticalSeconds (${t.queue.tokenDrainCriticalSeconds}), got ${t.queue.tokenDrainWarnSeconds}`,
    );
  }
  if (t.stream.interruptedRatio >= t.stream.interruptedRatioCritical) {
    throw new InferSignalConfigError(
      `${prefix}.stream.interruptedRatio`,
      `must be below stream.interruptedRatioCritical (${t.stream.interruptedRatioCritical}), got ${t.stream.interruptedRatio}`,
    );
  }
  if (t.capacity.utilizationWarn >= t.capacity.utilizationCritical) {
    throw new InferSignalConfigError(
      `${prefix}.capacity.utilizationWarn`,
      `must be below capacity.utilizationCritical (${t.capacity.utilizationCritical}), got ${t.capacity.utilizationWarn}`,
    );
  }
  if (t.connections.saturationWarn >= t.connections.saturationCritical) {
    throw new InferSignalConfigError(
      `${prefix}.connections.saturationWarn`,
      `must be below connections.saturationCritical (${t.connections.saturationCritical}), got ${t.connections.saturationWarn}`,
    );
  }
  if (t.eventLoop.delayWarnSeconds >= t.eventLoop.delayCriticalSeconds) {
    throw new InferSignalConfigError(
      `${prefix}.eventLoop.delayWarnSeconds`,
      `must be below eventLoop.delayCriticalSeconds (${t.eventLoop.delayCriticalSeconds}), got ${t.eventLoop.delayWarnSeconds}`,
    );
  }
  if (t.heap.liveWarn >= t.heap.liveCritical) {
    throw new InferSignalConfigError(
      `${prefix}.heap.liveWarn`,
      `must be below heap.liveCritical (${t.heap.liveCritical}), got ${t.heap.liveWarn}`,
    );
  }
  if (t.heap.exhaustionCriticalSeconds >= t.heap.exhaustionWarnSeconds) {
    throw new InferSignalConfigError(
      `${prefix}.heap.exhaustionCriticalSeconds`,
      `must be below heap.exhaustionWarnSeconds (${t.heap.exhaustionWarnSeconds})`,
    );
  }
  if (t.stream.minSamples > t.stream.windowSize) {
    throw new InferSignalConfigError(
      `${prefix}.stream.minSamples`,
      `must not exceed stream.windowSize (${t.stream.windowSize}), got ${t.stream.minSamples}`,
    );
  }
  return t;
}
