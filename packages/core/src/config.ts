/**
 * The threshold schema: defaults, validation and merging. The same
 * validated object drives the in-process detectors, the generated
 * Prometheus rules, the dashboard and the docs.
 */
import { InferSignalConfigError } from './config-error';
import { thresholdDefaults, thresholdGroups, type SignalDefinition, type ThresholdGroup } from './definition';
import { connectionsSignal, type ConnectionThresholds } from './definitions/connections';
import { deviceMemorySignal, type DeviceMemoryThresholds } from './definitions/device-memory';
import {
  eventLoopThresholds,
  heapThresholds,
  type EventLoopThresholds,
  type HeapThresholds,
} from './definitions/runtime';
import { modelLoadSignal, type ModelLoadThresholds } from './definitions/model-load';
import { streamSignal, type StreamThresholds } from './definitions/stream';
import { describeValue } from './describe';
import { checkField, type FieldSpec } from './validate';

export type {
  ConnectionThresholds,
  DeviceMemoryThresholds,
  EventLoopThresholds,
  HeapThresholds,
  ModelLoadThresholds,
  StreamThresholds,
};

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
  connections: thresholdDefaults(connectionsSignal.thresholds) as unknown as ConnectionThresholds,
  eventLoop: thresholdDefaults(eventLoopThresholds) as unknown as EventLoopThresholds,
  heap: thresholdDefaults(heapThresholds) as unknown as HeapThresholds,
  modelLoad: thresholdDefaults(modelLoadSignal.thresholds) as unknown as ModelLoadThresholds,
  stream: thresholdDefaults(streamSignal.thresholds) as unknown as StreamThresholds,
  deviceMemory: thresholdDefaults(deviceMemorySignal.thresholds) as unknown as DeviceMemoryThresholds,
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

export { InferSignalConfigError };

type Rule = 'positive' | 'nonNegative' | 'ratio' | 'fraction' | 'integer' | 'factor' | 'boolean';

/** Each group's rules: a kind per field, or the threshold group of the signal definition that owns it. */
const RULES: { [K in keyof Thresholds]: { [F in keyof Thresholds[K]]: Rule | 'map' } | ThresholdGroup } = {
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
  eventLoop: eventLoopThresholds,
  connections: connectionsSignal.thresholds,
  heap: heapThresholds,
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
  modelLoad: modelLoadSignal.thresholds,
  stream: streamSignal.thresholds,
  deviceMemory: deviceMemorySignal.thresholds,
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
  'anomaly.window': 10_000,
  'glitch.minSamples': 4096,
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

function isGroup(rules: object): rules is ThresholdGroup {
  return 'fields' in rules && 'group' in rules;
}

/** The checks of one group: a kind per field (a group config.ts still keeps), or a definition's fields. */
function groupFields(rules: object): [Record<string, FieldSpec | 'map'>, Record<string, unknown> | undefined] {
  if (!isGroup(rules)) return [{}, undefined];
  const specs: Record<string, FieldSpec | 'map'> = {};
  for (const [key, field] of Object.entries(rules.fields)) specs[key] = field.accepts;
  return [specs, thresholdDefaults(rules)];
}

/**
 * Merges `input` over the defaults and validates every field. Unknown keys,
 * wrong types and out-of-range values throw an InferSignalConfigError that
 * names the field (e.g. `thresholds.queue.occupancyWarn`). `signals`: signal
 * definitions besides core's own whose threshold groups are accepted and
 * validated too (`createMonitor({ signals })`, the generators' `signals`).
 */
export function resolveThresholds(
  input: unknown = {},
  prefix = 'thresholds',
  signals: readonly SignalDefinition[] = [],
): Thresholds {
  if (input === undefined || input === null) input = {};
  if (!isPlainObject(input)) throw new InferSignalConfigError(prefix, `must be an object, got ${describeValue(input)}`);
  const groups: Record<string, object> = { ...RULES };
  for (const group of signals.flatMap(thresholdGroups)) {
    if (RULES[group.group as keyof Thresholds] === group) continue;
    if (group.group in groups)
      throw new InferSignalConfigError('signals', `threshold group "${group.group}" is defined twice`);
    groups[group.group] = group;
  }
  const out = {} as Record<string, Record<string, unknown>>;
  for (const key of Object.keys(input)) {
    if (!(key in groups))
      throw new InferSignalConfigError(
        `${prefix}.${key}`,
        `unknown key (expected one of ${Object.keys(groups).join(', ')})`,
      );
  }
  for (const [group, groupRules] of Object.entries(groups)) {
    const groupInput = (input as Record<string, unknown>)[group] ?? {};
    const path = `${prefix}.${group}`;
    if (!isPlainObject(groupInput))
      throw new InferSignalConfigError(path, `must be an object, got ${describeValue(groupInput)}`);
    const [specs, definedDefaults] = groupFields(groupRules);
    const rules = isGroup(groupRules) ? specs : (groupRules as Record<string, Rule | 'map'>);
    for (const key of Object.keys(groupInput)) {
      if (!(key in rules))
        throw new InferSignalConfigError(
          `${path}.${key}`,
          `unknown key (expected one of ${Object.keys(rules).join(', ')})`,
        );
    }
    const defaults =
      definedDefaults ?? (DEFAULT_THRESHOLDS[group as keyof Thresholds] as unknown as Record<string, unknown>);
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
      } else if (typeof rule === 'string') {
        resolved[key] = checkValue(`${path}.${key}`, value, rule as Rule);
      } else {
        resolved[key] = checkField(`${path}.${key}`, value, rule);
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
  if (t.capacity.utilizationWarn >= t.capacity.utilizationCritical) {
    throw new InferSignalConfigError(
      `${prefix}.capacity.utilizationWarn`,
      `must be below capacity.utilizationCritical (${t.capacity.utilizationCritical}), got ${t.capacity.utilizationWarn}`,
    );
  }
  for (const group of Object.values(groups))
    if (isGroup(group)) group.check?.(out[group.group] as Record<string, unknown>, prefix);
  return t;
}
