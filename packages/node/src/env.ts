/**
 * The `OTEL_*` variables, read through the SDK's own helpers
 * (`@opentelemetry/core`'s `get*FromEnv`, `parseKeyPairsIntoRecord`). The
 * specification's rule for a value that cannot be used: warn and ignore it.
 * Each such variable is reported once per `start()`, through its logger
 * (the helpers themselves only tell `diag`, which is silent by default).
 */
import {
  getBooleanFromEnv,
  getNumberFromEnv,
  getStringFromEnv,
  getStringListFromEnv,
  parseKeyPairsIntoRecord,
} from '@opentelemetry/core';
import { InferSignalConfigError } from '@infersignal/core';
import { checkField, type FieldSpec } from '@infersignal/core/signals';

export class OtelEnv {
  private readonly reported = new Set<string>();

  constructor(private readonly warn: (message: string) => void) {}

  /**
   * Reports a set variable whose value (or part of it) is ignored, once, on
   * one line: what was given, what is accepted and, when given, what is used
   * instead (`using`: the documented default).
   */
  ignore(name: string, expected: string, part = false, using?: string): undefined {
    if (this.reported.has(name)) return undefined;
    this.reported.add(name);
    const raw = (getStringFromEnv(name) ?? '').replace(/[\r\n]+/g, ' ');
    const shown = JSON.stringify(raw.length > 80 ? `${raw.slice(0, 79)}…` : raw);
    this.warn(
      `infersignal: ignoring ${part ? 'part of ' : ''}${name}=${shown}: expected ${expected}${using === undefined ? '' : `; using ${using}`}`,
    );
    return undefined;
  }

  string(name: string): string | undefined {
    return getStringFromEnv(name)?.trim();
  }

  /**
   * A number that the field spec accepts (the spec the same option is checked
   * with, so both say what is accepted in the same words); anything else set
   * is ignored with a warning.
   */
  number(name: string, spec: FieldSpec, using?: string): number | undefined {
    if (getStringFromEnv(name) === undefined) return undefined;
    // Not a number: checked as the string it is, so the warning says what the spec accepts.
    const value = getNumberFromEnv(name) ?? getStringFromEnv(name);
    try {
      return checkField<number>(name, value, spec);
    } catch (error) {
      if (!(error instanceof InferSignalConfigError) || error.accepted === undefined) throw error;
      return this.ignore(name, error.accepted, false, using);
    }
  }

  /** `true` / `false` (any case); anything else set is ignored with a warning and reads as false. */
  boolean(name: string): boolean {
    const raw = this.string(name)?.toLowerCase();
    if (raw !== undefined && raw !== 'true' && raw !== 'false') this.ignore(name, '"true" or "false"', false, 'false');
    return getBooleanFromEnv(name);
  }

  /** One of `allowed`; anything else set is ignored with a warning. */
  choice<T extends string>(name: string, allowed: readonly T[], using?: string): T | undefined {
    const raw = this.string(name)?.toLowerCase();
    if (raw === undefined) return undefined;
    return (allowed as readonly string[]).includes(raw)
      ? (raw as T)
      : this.ignore(name, allowed.join(', '), false, using);
  }

  /**
   * A comma-separated list; entries outside `allowed` are ignored with one
   * warning. A list with no known entry is ignored whole (undefined: the
   * variable's documented default, described by `using`), as the
   * specification asks for a value it does not recognise.
   */
  list<T extends string>(name: string, allowed: readonly T[], using?: string): T[] | undefined {
    const entries = getStringListFromEnv(name)?.map((entry) => entry.toLowerCase());
    if (entries === undefined) return undefined;
    const known = entries.filter((entry): entry is T => (allowed as readonly string[]).includes(entry));
    if (known.length === 0 && entries.length > 0)
      return this.ignore(name, `a comma-separated list of ${allowed.join(', ')}`, false, using);
    if (known.length < entries.length)
      this.ignore(name, `a comma-separated list of ${allowed.join(', ')}`, true, `${known.join(',')}`);
    return known;
  }

  /**
   * `OTEL_RESOURCE_ATTRIBUTES` checked as the SDK's environment detector
   * reads it: `key=value` entries, ',' and '=' percent-encoded, keys and
   * values of at most 255 characters. The detector drops a malformed value
   * whole and tells only `diag`; this says so once.
   */
  resourceAttributes(): void {
    const name = 'OTEL_RESOURCE_ATTRIBUTES';
    const raw = getStringFromEnv(name);
    if (raw === undefined) return;
    for (const entry of raw.split(',').filter((part) => part.trim() !== '')) {
      const pair = entry.split('=');
      let ok = pair.length === 2 && pair[0].trim() !== '';
      if (ok) {
        try {
          ok = decodeURIComponent(pair[0].trim()).length <= 255 && decodeURIComponent(pair[1].trim()).length <= 255;
        } catch {
          ok = false;
        }
      }
      if (!ok) {
        this.ignore(
          name,
          `key=value pairs separated by commas (',' and '=' percent-encoded, at most 255 characters each)`,
          false,
          'no attributes from it (the SDK drops the whole value)',
        );
        return;
      }
    }
  }

  /** An http(s) URL; anything else set is ignored with a warning. */
  url(name: string): URL | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    try {
      const url = new URL(raw);
      if (url.protocol === 'http:' || url.protocol === 'https:') return url;
    } catch {
      // reported below
    }
    return this.ignore(name, 'an http(s) URL');
  }

  /** `k1=v1,k2=v2` (W3C baggage form, URL-encoded values); malformed entries are dropped with a warning. */
  headers(name: string): Record<string, string> {
    const raw = this.string(name);
    if (raw === undefined) return {};
    const headers = parseKeyPairsIntoRecord(raw);
    const entries = raw.split(',').filter((entry) => entry.trim() !== '');
    if (Object.keys(headers).length < entries.length) this.ignore(name, 'key=value pairs separated by commas', true);
    return headers;
  }
}
