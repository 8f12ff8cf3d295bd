/**
 * Prometheus durations (`5m`, `30s`, `1m30s`) to and from seconds, and the
 * human form of a threshold used in alert text (`200ms`, `65%`).
 */
import { rejectValue } from '@infersignal/core/signals';

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
const DURATION = /^(?:\d+(?:ms|s|m|h|d|w|y))+$/;
const PART = /(\d+)(ms|s|m|h|d|w|y)/g;

/** Seconds of a Prometheus duration; throws naming `field` when it is not one. */
export function parseDuration(value: string, field: string): number {
  if (typeof value !== 'string' || !DURATION.test(value))
    rejectValue(field, value, 'a Prometheus duration such as 30s, 5m or 1h30m');
  let seconds = 0;
  for (const [, amount, unit] of value.matchAll(PART)) seconds += Number(amount) * UNIT_SECONDS[unit];
  return seconds;
}

/** Prometheus duration of a number of seconds, largest units first (300 → `5m`, 0.25 → `250ms`). */
export function formatDuration(seconds: number): string {
  let ms = Math.round(seconds * 1000);
  if (ms <= 0) return '0s';
  let out = '';
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
    ['ms', 1],
  ] as const) {
    if (ms >= size) {
      out += `${Math.floor(ms / size)}${unit}`;
      ms %= size;
    }
  }
  return out;
}

/** A threshold in seconds as people read it: `200ms`, `1.5s`. */
export function humanSeconds(seconds: number): string {
  return seconds < 1 ? `${round(seconds * 1000)}ms` : `${round(seconds)}s`;
}

/** A ratio as a percentage: 0.005 → `0.5%`. */
export function humanPercent(ratio: number): string {
  return `${round(ratio * 100)}%`;
}

/** A quantile as a percentile name: 0.95 → `P95`, 0.999 → `P99.9`. */
export function percentileName(quantile: number): string {
  return `P${round(quantile * 100)}`;
}

/** Suffix for names built from a quantile: 0.95 → `p95`, 0.999 → `p99_9`. */
export function quantileSuffix(quantile: number): string {
  return `p${String(round(quantile * 100)).replace('.', '_')}`;
}

function round(value: number): number {
  return Number(value.toPrecision(6));
}
