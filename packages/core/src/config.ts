/**
 * The threshold schema: defaults, validation and merging. The same
 * validated object drives the in-process detectors, the generated
 * Prometheus rules, the dashboard and the docs.
 */
import { InferSignalConfigError } from './config-error';
import { thresholdDefaults, thresholdGroups, type SignalDefinition, type ThresholdGroup } from './definition';
import { connectionsSignal } from './definitions/connections';
import { deviceMemorySignal } from './definitions/device-memory';
import { eventLoopThresholds, heapThresholds } from './definitions/runtime';
import { modelLoadSignal } from './definitions/model-load';
import { streamSignal } from './definitions/stream';
import { describeValue } from './describe';
import type {
  ConnectionThresholds,
  DeviceMemoryThresholds,
  EventLoopThresholds,
  HeapThresholds,
  ModelLoadThresholds,
  StreamThresholds,
  Thresholds,
} from './thresholds';
import { checkField, type FieldSpec } from './validate';

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
    pendingWaitWarnSeconds: 10,
    pendingWaitCriticalSeconds: 60,
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
    pendingWaitWarnSeconds: 'positive',
    pendingWaitCriticalSeconds: 'positive',
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
  if (t.queue.pendingWaitWarnSeconds >= t.queue.pendingWaitCriticalSeconds) {
    throw new InferSignalConfigError(
      `${prefix}.queue.pendingWaitWarnSeconds`,
      `must be below queue.pendingWaitCriticalSeconds (${t.queue.pendingWaitCriticalSeconds}), got ${t.queue.pendingWaitWarnSeconds}`,
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
