/**
 * The one options dialect of every adapter and runtime wrapper, and its
 * validation: the same keys for the same things, an InferSignalConfigError
 * naming the dotted field (`options.queue.capacity`), unknown keys refused.
 */
import { InferSignalConfigError } from './errors';
import { checkAtLeast, describeValue, fieldOrDefault, rejectValue } from './validate';
import type { Monitor, QueueOptions, QueueTracker } from './types';

/** A queue described by its settings: made (or found) with `monitor.queue(name, settings)`. */
interface QueueSpec extends QueueOptions {
  /** Queue name; each adapter has its default (`http`, `grpc`, `onnx:<model>` …). */
  name?: string;
}

/**
 * The queue requests go through: a name, a tracker the application made
 * (e.g. one queue shared by several adapters), or a spec.
 */
export type QueueOption = string | QueueTracker | QueueSpec;

/**
 * The model label of a request: one name for every request, or a function
 * of what the adapter sees (its arguments are the adapter's: the request,
 * or the gRPC method and metadata). A function that returns undefined or
 * throws gives the adapter's default; a throw is counted as an internal error.
 * Labels are capped by the monitor (`_other` past `maxModels`).
 */
type ModelOption<Args extends unknown[]> = string | ((...args: Args) => string | undefined);

/** The base every adapter's options extend (the runtime wrappers take `queue` only: they name their model). */
export interface AdapterOptions<Args extends unknown[] = unknown[]> {
  queue?: QueueOption;
  model?: ModelOption<Args>;
  /** Answer at CRITICAL backpressure without running the handler (503 / RESOURCE_EXHAUSTED + retry hint). Default false. */
  shed?: boolean;
  /** Count the start of inference automatically (the response head, the handler call). Default true. */
  autoStart?: boolean;
}

/** The keys of AdapterOptions, for an adapter's list of known keys. */
export const ADAPTER_OPTION_KEYS: readonly string[] = ['queue', 'model', 'shed', 'autoStart'];
const QUEUE_SPEC_KEYS: ReadonlySet<string> = new Set(['name', 'capacity', 'concurrency', 'maxWaiting']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks that `options` is an object whose keys are all in `keys`
 * (`prefix` is its dotted path, `options` for an adapter's argument).
 */
export function checkOptionKeys(options: unknown, keys: Iterable<string>, prefix = 'options'): void {
  if (!isPlainObject(options)) rejectValue(prefix, options, 'an object');
  const known = keys instanceof Set ? (keys as ReadonlySet<string>) : new Set(keys);
  for (const key of Object.keys(options)) {
    if (!known.has(key))
      throw new InferSignalConfigError(
        `${prefix}.${key}`,
        `unknown option, got ${describeValue(options[key])} (expected one of ${[...known].join(', ')})`,
      );
  }
}

/** An integer >= `min`, or `fallback` when undefined. */
export function integerOption(field: string, value: unknown, fallback: number, min = 1): number {
  return fieldOrDefault(field, value, { type: 'integer', min }, fallback);
}

/** A boolean, or `fallback` when undefined. */
export function booleanOption(field: string, value: unknown, fallback: boolean): boolean {
  return fieldOrDefault(field, value, { type: 'boolean' }, fallback);
}

/** A non-empty string, or `fallback` when undefined. */
export function nameOption(field: string, value: unknown, fallback: string): string;
export function nameOption(field: string, value: unknown, fallback?: string): string | undefined;
export function nameOption(field: string, value: unknown, fallback?: string): string | undefined {
  return fieldOrDefault(field, value, { type: 'string', maxLength: 128 }, fallback);
}

/**
 * Validates queue settings (`capacity`, `concurrency`, `maxWaiting`) and
 * resolves the capacity default: concurrency + maxWaiting when maxWaiting
 * is given, else 64 (or the concurrency, when larger). `concurrency` stays
 * undefined when not given (the capacity model then estimates it). A
 * capacity below what the queue holds (concurrency, plus maxWaiting when
 * given) is refused: occupancy would pass 1 and the queue shed at normal load.
 */
export function queueSettings(options: unknown, prefix: string, queue?: string): QueueOptions & { capacity: number } {
  try {
    return checkQueueSettings(options, prefix);
  } catch (error) {
    // The queue's name in the message: `monitor.queue()` is called with several names.
    if (queue === undefined || !(error instanceof InferSignalConfigError)) throw error;
    throw new InferSignalConfigError(error.field, `queue "${queue}": ${error.detail}`);
  }
}

function checkQueueSettings(options: unknown, prefix: string): QueueOptions & { capacity: number } {
  checkOptionKeys(options, ['capacity', 'concurrency', 'maxWaiting', 'tokens'], prefix);
  const o = options as QueueOptions;
  const concurrency =
    o.concurrency === undefined ? undefined : integerOption(`${prefix}.concurrency`, o.concurrency, 1);
  const maxWaiting = o.maxWaiting === undefined ? undefined : integerOption(`${prefix}.maxWaiting`, o.maxWaiting, 0, 0);
  const capacity = integerOption(
    `${prefix}.capacity`,
    o.capacity,
    maxWaiting !== undefined ? (concurrency ?? 1) + maxWaiting : Math.max(64, concurrency ?? 0),
  );
  if (maxWaiting !== undefined)
    checkAtLeast(
      `${prefix}.capacity`,
      capacity,
      `${prefix}.concurrency + ${prefix}.maxWaiting`,
      (concurrency ?? 1) + maxWaiting,
    );
  else if (concurrency !== undefined)
    checkAtLeast(`${prefix}.capacity`, capacity, `${prefix}.concurrency`, concurrency);
  if (o.tokens === undefined) return { capacity, concurrency, maxWaiting };
  return { capacity, concurrency, maxWaiting, tokens: booleanOption(`${prefix}.tokens`, o.tokens, false) };
}

function isTracker(value: unknown): value is QueueTracker {
  return typeof value === 'object' && value !== null && typeof (value as { enqueue?: unknown }).enqueue === 'function';
}

/**
 * Checks a `queue` option without making the queue (a wrapper checks its
 * options before a model load it would otherwise waste): a tracker, a
 * non-empty name, or a spec with valid settings.
 */
export function checkQueueOption(value: unknown, field = 'options.queue'): void {
  if (value === undefined || isTracker(value)) return;
  if (typeof value === 'string') {
    nameOption(field, value);
    return;
  }
  if (!isPlainObject(value))
    rejectValue(field, value, 'a queue name, a QueueTracker or { name, capacity, concurrency, maxWaiting }');
  checkOptionKeys(value, QUEUE_SPEC_KEYS, field);
  const { name, ...settings } = value as QueueSpec;
  nameOption(`${field}.name`, name);
  queueSettings(settings, field);
}

/**
 * The tracker of a `queue` option (`field` is its dotted path): a tracker
 * as is; a name or a spec through `monitor.queue()`, named `defaultName`
 * unless the spec names it. A spec whose settings differ from an existing
 * queue of that name is refused (the queue would not be what was asked for).
 */
export function resolveQueue(
  monitor: Monitor,
  value: QueueOption | undefined,
  defaultName: string,
  field = 'options.queue',
  defaults: QueueOptions = {},
): QueueTracker {
  if (isTracker(value)) return value;
  // Validated here so the error names this option's field, not monitor.queue()'s.
  checkQueueOption(value, field);
  if (value === undefined || typeof value === 'string') return monitor.queue(value ?? defaultName, { ...defaults });
  const { name: specName, ...settings } = value;
  const tracker = monitor.queue(specName ?? defaultName, { ...defaults, ...settings });
  for (const key of ['capacity', 'concurrency'] as const) {
    if (settings[key] !== undefined && tracker[key] !== settings[key])
      throw new InferSignalConfigError(
        `${field}.${key}`,
        `queue "${tracker.name}" already exists with ${key} ${tracker[key]}; pass that tracker, or another name`,
      );
  }
  return tracker;
}

/** Checks a `model` option: a non-empty name or a function. */
export function checkModelOption(field: string, value: unknown): void {
  if (value === undefined || typeof value === 'function') return;
  nameOption(field, value);
}
