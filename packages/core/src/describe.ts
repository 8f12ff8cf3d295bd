/** How a configuration error shows the value it was given. */

const MAX_SHOWN = 60;

/**
 * A value as one short line: NaN and ±Infinity by name (JSON would say
 * null), strings quoted, objects as compact JSON cut at 60 characters.
 */
export function describeValue(value: unknown): string {
  switch (typeof value) {
    case 'number':
      return Object.is(value, -0) ? '0' : String(value);
    case 'string': {
      const text = JSON.stringify(value);
      return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 4)}…"` : text;
    }
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'a function';
    case 'bigint':
      return `${value}n`;
    case 'symbol':
      return value.toString();
    case 'boolean':
      return String(value);
  }
  if (value === null) return 'null';
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    // A cycle or a throwing toJSON: name the kind only.
  }
  if (text === undefined) return Array.isArray(value) ? 'an array' : 'an object';
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 1)}…` : text;
}
