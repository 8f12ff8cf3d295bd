export const OVERFLOW_LABEL = '_other';
const MAX_LABEL_LENGTH = 128;

/** Makes an arbitrary value a safe label: a string, control characters removed, length-capped. */
function sanitizeLabel(value: unknown, fallback = 'unknown'): string {
  if (value === undefined || value === null || value === '') return fallback;
  let text = typeof value === 'string' ? value : String(value);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this pattern removes.
  if (/[\u0000-\u001f\u007f]/.test(text)) text = text.replace(/[\u0000-\u001f\u007f]/g, '');
  return text.length > MAX_LABEL_LENGTH ? text.slice(0, MAX_LABEL_LENGTH) : text;
}

/**
 * Capped table of label values → per-value state. The first `max`
 * distinct values get their own slot; later ones share the `_other`
 * slot, so a flood of model names or raw URLs cannot grow memory or the
 * number of exported series without bound.
 */
export class LabelTable<T> {
  private readonly slots = new Map<string, T>();
  private overflowSlot: T | undefined;
  overflowed = 0;

  constructor(
    readonly max: number,
    private readonly create: (label: string) => T,
  ) {}

  get size(): number {
    return this.slots.size;
  }

  /** The label a value is recorded under (its own, or `_other` past the cap). */
  label(value: unknown): string {
    // Fast path, taken on every request of a known label: a stored key is already sanitized.
    if (typeof value === 'string' && this.slots.has(value)) return value;
    const text = sanitizeLabel(value);
    if (this.slots.has(text) || this.slots.size < this.max) return text;
    return OVERFLOW_LABEL;
  }

  /** Registers the value if there is room and returns the label it is recorded under. */
  intern(value: unknown): string {
    if (typeof value === 'string' && this.slots.has(value)) return value;
    const text = sanitizeLabel(value);
    if (this.slots.has(text)) return text;
    if (this.slots.size < this.max) {
      this.slots.set(text, this.create(text));
      return text;
    }
    this.overflowed++;
    return OVERFLOW_LABEL;
  }

  /**
   * The slot of a value already in the table under its own label, else
   * undefined: one Map lookup, for a caller whose labels come from another
   * table (a value found here was given its label there first).
   */
  known(value: unknown): T | undefined {
    return typeof value === 'string' && value !== OVERFLOW_LABEL ? this.slots.get(value) : undefined;
  }

  get(value: unknown): T {
    if (typeof value === 'string') {
      const known = this.slots.get(value);
      if (known !== undefined) return known;
    }
    const text = sanitizeLabel(value);
    const existing = this.slots.get(text);
    if (existing !== undefined) return existing;
    if (this.slots.size < this.max) {
      const slot = this.create(text);
      this.slots.set(text, slot);
      return slot;
    }
    this.overflowed++;
    if (this.overflowSlot === undefined) this.overflowSlot = this.create(OVERFLOW_LABEL);
    return this.overflowSlot;
  }

  *entries(): IterableIterator<[string, T]> {
    yield* this.slots.entries();
    if (this.overflowSlot !== undefined) yield [OVERFLOW_LABEL, this.overflowSlot];
  }

  values(): T[] {
    const out = [...this.slots.values()];
    if (this.overflowSlot !== undefined) out.push(this.overflowSlot);
    return out;
  }
}
