/**
 * The threshold schema: defaults, validation and merging. The same
 * validated object drives the in-process detectors, the generated
 * Prometheus rules, the dashboard and the docs.
 */
import { InferSignalConfigError } from './config-error';
import { thresholdDefaults, thresholdGroups, type SignalDefinition, type ThresholdGroup } from './definition';
import { capacitySignal } from './definitions/capacity';
import { connectionsSignal } from './definitions/connections';
import { deviceMemorySignal } from './definitions/device-memory';
import { eventLoopThresholds, heapThresholds } from './definitions/runtime';
import { modelLoadSignal } from './definitions/model-load';
import { anomalyThresholds, glitchThresholds, queueThresholds } from './definitions/queue';
import { saturationSignal } from './definitions/saturation';
import { streamSignal } from './definitions/stream';
import { describeValue } from './describe';
import type {
  AnomalyThresholds,
  CapacityThresholds,
  ConnectionThresholds,
  DeviceMemoryThresholds,
  EventLoopThresholds,
  GlitchThresholds,
  HeapThresholds,
  ModelLoadThresholds,
  QueueThresholds,
  SaturationThresholds,
  StreamThresholds,
  Thresholds,
} from './thresholds';
import { checkField, type FieldSpec } from './validate';

export const DEFAULT_THRESHOLDS: Readonly<Thresholds> = Object.freeze({
  queue: thresholdDefaults(queueThresholds) as unknown as QueueThresholds,

  capacity: thresholdDefaults(capacitySignal.thresholds) as unknown as CapacityThresholds,

  connections: thresholdDefaults(connectionsSignal.thresholds) as unknown as ConnectionThresholds,
  eventLoop: thresholdDefaults(eventLoopThresholds) as unknown as EventLoopThresholds,
  heap: thresholdDefaults(heapThresholds) as unknown as HeapThresholds,
  modelLoad: thresholdDefaults(modelLoadSignal.thresholds) as unknown as ModelLoadThresholds,
  stream: thresholdDefaults(streamSignal.thresholds) as unknown as StreamThresholds,
  deviceMemory: thresholdDefaults(deviceMemorySignal.thresholds) as unknown as DeviceMemoryThresholds,
  glitch: thresholdDefaults(glitchThresholds) as unknown as GlitchThresholds,
  anomaly: thresholdDefaults(anomalyThresholds) as unknown as AnomalyThresholds,
  saturation: thresholdDefaults(saturationSignal.thresholds) as unknown as SaturationThresholds,
});

/** Each group's threshold group, from the signal definition that owns it. */
const RULES: { [K in keyof Thresholds]: ThresholdGroup } = {
  capacity: capacitySignal.thresholds,

  eventLoop: eventLoopThresholds,
  connections: connectionsSignal.thresholds,
  heap: heapThresholds,
  queue: queueThresholds,

  modelLoad: modelLoadSignal.thresholds,
  stream: streamSignal.thresholds,
  deviceMemory: deviceMemorySignal.thresholds,
  glitch: glitchThresholds,
  anomaly: anomalyThresholds,
  saturation: saturationSignal.thresholds,
};

/** A map field's entries: positive numbers (e.g. a baseline per model). */
const POSITIVE: FieldSpec = { type: 'number', above: 0 };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A group's field specs and defaults. */
function groupFields(group: ThresholdGroup): [Record<string, FieldSpec | 'map'>, Record<string, unknown>] {
  const specs: Record<string, FieldSpec | 'map'> = {};
  for (const [key, field] of Object.entries(group.fields)) specs[key] = field.accepts;
  return [specs, thresholdDefaults(group)];
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
  const groups: Record<string, ThresholdGroup> = { ...RULES };
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
    const [rules, defaults] = groupFields(groupRules);
    for (const key of Object.keys(groupInput)) {
      if (!(key in rules))
        throw new InferSignalConfigError(
          `${path}.${key}`,
          `unknown key (expected one of ${Object.keys(rules).join(', ')})`,
        );
    }
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
          map[name] = checkField(`${path}.${key}.${name}`, seconds, POSITIVE) as number;
        resolved[key] = map;
      } else {
        resolved[key] = checkField(`${path}.${key}`, value, rule);
      }
    }
    out[group] = resolved;
  }
  const t = out as unknown as Thresholds;
  for (const group of Object.values(groups)) group.check?.(out[group.group] as Record<string, unknown>, prefix);
  return t;
}
