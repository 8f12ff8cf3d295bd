/**
 * The fresh suite's reader of the three queue gauges it checks for being
 * live (waiting, in flight, occupancy), per queue, in a Prometheus text
 * exposition, and its comparison with the values the server wrote.
 * Names from core's definitions, so a rename moves the reader with it.
 */
import { ATTR, METRICS, prometheusLabel, prometheusName } from '@infersignal/core';

export interface QueueValues {
  waiting: number;
  inFlight: number;
  occupancy: number;
}

/** The Prometheus name of each field's gauge. */
export const QUEUE_GAUGES = {
  waiting: prometheusName(METRICS.queueWaiting),
  inFlight: prometheusName(METRICS.queueInFlight),
  occupancy: prometheusName(METRICS.queueOccupancy),
} as const satisfies Record<keyof QueueValues, string>;
type Field = keyof QueueValues;
const FIELDS = Object.keys(QUEUE_GAUGES) as Field[];
const FIELD_OF = new Map<string, Field>(FIELDS.map((field) => [QUEUE_GAUGES[field], field]));
const QUEUE_LABEL = new RegExp(`[{,]${prometheusLabel(ATTR.queue)}="((?:[^"\\\\]|\\\\.)*)"`);

/** The three queue gauges of an exposition, per queue (a gauge absent from it is absent here). */
export function queueValues(body: string): Record<string, Partial<QueueValues>> {
  const out: Record<string, Partial<QueueValues>> = {};
  for (const line of body.split('\n')) {
    if (line === '' || line[0] === '#') continue;
    const brace = line.indexOf('{');
    if (brace < 0) continue;
    const field = FIELD_OF.get(line.slice(0, brace));
    if (field === undefined) continue;
    const raw = QUEUE_LABEL.exec(line)?.[1];
    if (raw === undefined) continue;
    // The exposition escapes \, " and line feeds in label values.
    const queue = raw.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    // `name{labels} value [timestamp]`
    const value = Number(
      line
        .slice(line.lastIndexOf('}') + 1)
        .trim()
        .split(' ')[0],
    );
    (out[queue] ??= {})[field] = value;
  }
  return out;
}

function same(seen: number | undefined, truth: number): boolean {
  return seen !== undefined && Math.abs(seen - truth) <= 1e-9 * Math.max(1, Math.abs(truth));
}

/** Where `found` differs from `truth` (`infer waiting 40≠52`, `infer occupancy absent≠0.4`), or '' where it does not. */
export function difference(found: Record<string, Partial<QueueValues>>, truth: Record<string, QueueValues>): string {
  const diffs: string[] = [];
  for (const [queue, values] of Object.entries(truth))
    for (const field of FIELDS) {
      const seen = found[queue]?.[field];
      if (!same(seen, values[field])) diffs.push(`${queue} ${field} ${seen ?? 'absent'}≠${values[field]}`);
    }
  return diffs.join(', ');
}

/** Whether `found` has all three gauges of every queue in `truth` (whatever their values). */
export function complete(found: Record<string, Partial<QueueValues>>, truth: Record<string, QueueValues>): boolean {
  return Object.keys(truth).every((queue) => FIELDS.every((field) => found[queue]?.[field] !== undefined));
}
