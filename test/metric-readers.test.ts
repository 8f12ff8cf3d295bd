/**
 * Every series InferSignal exports by default has a reader: a generated
 * rule, the generated dashboard, or a runbook step (scripts/metric-readers.ts
 * finds them in what the generators return and in docs/runbook.md). What a
 * default `start()` exports is its golden scrape (packages/node/test/golden,
 * kept true by golden.test.ts), plus the GC histogram the golden leaves out.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METRICS, prometheusName, type InstrumentSpec } from '@infersignal/core';
import { OPT_IN_METRICS } from '../packages/core/src/opt-in';
import { metricReaders } from '../scripts/metric-readers';

const GOLDEN = new URL('../packages/node/test/golden/producer.prom', import.meta.url);
/** Exported from the first GC, which the golden scenario cannot time (golden.test.ts). */
const UNTIMED = [prometheusName(METRICS.gcDuration)];

const byPrometheusName = new Map(
  Object.entries(METRICS as Record<string, InstrumentSpec>).map(([key, spec]) => [prometheusName(spec), { key, spec }]),
);

function defaultFamilies(): string[] {
  const names = [...readFileSync(GOLDEN, 'utf8').matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
  return [...names.filter((name) => name !== 'target_info'), ...UNTIMED];
}

describe('readers of the default series', () => {
  const readers = metricReaders(Object.values(METRICS as Record<string, InstrumentSpec>));

  it('every family of the default scrape is a core instrument that a rule, the dashboard or the runbook reads', () => {
    const families = defaultFamilies();
    expect(families.length).toBeGreaterThan(25);
    const unread: string[] = [];
    for (const family of families) {
      const instrument = byPrometheusName.get(family);
      expect(instrument, `${family} is not a core instrument`).toBeDefined();
      const r = readers.get(instrument!.spec.name)!;
      if (r.rules.length + r.dashboard.length + r.runbook.length === 0) unread.push(family);
    }
    expect(unread).toEqual([]);
  });

  it('opt-in instruments are left out of the default scrape, and none of them has a reader', () => {
    const families = new Set(defaultFamilies());
    const optIn = Object.keys(OPT_IN_METRICS);
    expect(optIn.length).toBeGreaterThan(0);
    for (const name of optIn) {
      const spec = Object.values(METRICS as Record<string, InstrumentSpec>).find((s) => s.name === name)!;
      expect(families.has(prometheusName(spec)), `${name} is opt-in but exported by default`).toBe(false);
      const r = readers.get(name)!;
      expect([...r.rules, ...r.dashboard], `${name} is read by a rule or a panel: export it by default`).toEqual([]);
    }
  });

  it('finds a reader by its series name only, never by a longer name that begins with it', () => {
    // `infersignal_queue_wait_duration_seconds` is read; `infersignal_queue_waiting` is a different series.
    const waiting = readers.get(METRICS.queueWaiting.name)!;
    expect(waiting.rules).toEqual([]);
    expect(readers.get(METRICS.queueWait.name)!.rules.length).toBeGreaterThan(0);
  });
});
