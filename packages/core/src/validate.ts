/**
 * The one validator of every option: the API (`createMonitor`, `monitor.queue`),
 * the adapters (through core's options dialect), `start()` and the rules CLI
 * all check a value against a field spec here, so each door answers a bad
 * value with the same one line: the dotted field, what was given (NaN as
 * NaN, a string quoted) and what is accepted.
 */
import { InferSignalConfigError } from './config-error';
import { describeValue } from './describe';

export { describeValue };

/** What a field accepts. */
export type FieldSpec =
  | { type: 'boolean' }
  | { type: 'integer'; min?: number; max?: number }
  /** `unit` names what the number counts (`milliseconds`) in the message. */
  | { type: 'number'; min?: number; max?: number; above?: number; below?: number; unit?: string }
  /** A TCP port; `allowZero` for a listener where 0 asks the OS for a free port. */
  | { type: 'port'; allowZero?: boolean }
  | { type: 'string'; maxLength?: number }
  | { type: 'enum'; values: readonly string[] };

/** Throws the one-line error: `field` must be `accepted`, got `value`. */
export function rejectValue(field: string, value: unknown, accepted: string): never {
  throw new InferSignalConfigError(field, `must be ${accepted}, got ${describeValue(value)}`, accepted);
}

/** What `spec` accepts, in words (the "must be …" of the message). */
export function acceptedText(spec: FieldSpec): string {
  switch (spec.type) {
    case 'boolean':
      return 'true or false';
    case 'port':
      return spec.allowZero
        ? 'an integer port within [0, 65535] (0: a free port)'
        : 'an integer port within [1, 65535]';
    case 'string':
      return `a non-empty string${spec.maxLength === undefined ? '' : ` of at most ${spec.maxLength} characters`}`;
    case 'enum':
      return `one of ${spec.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'integer':
      if (spec.max !== undefined) return `an integer within [${spec.min ?? 0}, ${spec.max}]`;
      return spec.min === undefined ? 'an integer' : `an integer >= ${spec.min}`;
    case 'number': {
      const number = spec.unit === undefined ? 'a number' : `a number of ${spec.unit}`;
      const low = spec.above !== undefined ? `> ${spec.above}` : spec.min !== undefined ? `>= ${spec.min}` : undefined;
      const high = spec.below !== undefined ? `< ${spec.below}` : spec.max !== undefined ? `<= ${spec.max}` : undefined;
      if (low && high) {
        const open = spec.above !== undefined ? '(' : '[';
        const close = spec.below !== undefined ? ')' : ']';
        return `${number} within ${open}${spec.above ?? spec.min}, ${spec.below ?? spec.max}${close}`;
      }
      return low || high ? `${number} ${low ?? high}` : `a finite ${number.slice(2)}`;
    }
  }
}

/** Whether `spec` accepts `value` (for a door that warns instead of throwing: the environment). */
function fieldAccepts(spec: FieldSpec, value: unknown): boolean {
  switch (spec.type) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'port':
      return (
        typeof value === 'number' && Number.isInteger(value) && value >= (spec.allowZero ? 0 : 1) && value <= 65535
      );
    case 'string':
      return (
        typeof value === 'string' && value !== '' && (spec.maxLength === undefined || value.length <= spec.maxLength)
      );
    case 'enum':
      return typeof value === 'string' && spec.values.includes(value);
    case 'integer':
      return (
        typeof value === 'number' &&
        Number.isInteger(value) &&
        (spec.min === undefined || value >= spec.min) &&
        (spec.max === undefined || value <= spec.max)
      );
    case 'number':
      return (
        typeof value === 'number' &&
        Number.isFinite(value) &&
        (spec.min === undefined || value >= spec.min) &&
        (spec.max === undefined || value <= spec.max) &&
        (spec.above === undefined || value > spec.above) &&
        (spec.below === undefined || value < spec.below)
      );
  }
}

/** `value` when `spec` accepts it; otherwise throws naming `field`. */
export function checkField<T>(field: string, value: unknown, spec: FieldSpec): T {
  if (!fieldAccepts(spec, value)) rejectValue(field, value, acceptedText(spec));
  return value as T;
}

/** As `checkField`, with `fallback` for undefined. */
export function fieldOrDefault<T>(field: string, value: unknown, spec: FieldSpec, fallback: T): T {
  return value === undefined ? fallback : checkField<T>(field, value, spec);
}

/**
 * A relation between two fields: `value` (of `field`) must be at least
 * `other` (the value of `otherField`).
 */
export function checkAtLeast(field: string, value: number, otherField: string, other: number): void {
  if (!(value >= other)) rejectValue(field, value, `>= ${otherField} (${other})`);
}
