/**
 * Every series InferSignal exports by default has a reader: a generated
 * rule, the generated dashboard, a generated Kubernetes manifest, or a
 * runbook step (scripts/metric-readers.ts finds them in what the generators
 * return and in docs/runbook.md). What a default `start()` exports is its
 * golden scrape (packages/node/test/golden, kept true by golden.test.ts),
 * plus the GC histogram the golden leaves out; a feature's instruments (GPU,
 * gRPC, breakers, connections, llama.cpp) are exported by default wherever
 * the app uses the feature, so they are held to the same rule.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HISTOGRAM_BUCKETS, METRICS, prometheusName, resolveThresholds, type InstrumentSpec } from '@infersignal/core';
import { queueSignal } from '../packages/core/src/definitions/queue';
import { OPT_IN_BY_CONVENTION, OPT_IN_METRICS } from '../packages/core/src/opt-in';
import { SIGNALS } from '../packages/core/src/signals';
import { metricReaders, type Readers } from '../scripts/metric-readers';
import { DOCUMENTED, instruments } from '../scripts/metrics-doc';

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

const isRead = (r: Readers) => r.rules.length + r.dashboard.length + r.kubernetes.length + r.runbook.length > 0;

describe('readers of the default series', () => {
  const readers = metricReaders(Object.values(METRICS as Record<string, InstrumentSpec>));

  it('every family of the default scrape is a core instrument that a rule, the dashboard or the runbook reads', () => {
    const families = defaultFamilies();
    expect(families.length).toBeGreaterThan(25);
    const unread: string[] = [];
    for (const family of families) {
      const instrument = byPrometheusName.get(family);
      expect(instrument, `${family} is not a core instrument`).toBeDefined();
      if (!isRead(readers.get(instrument!.spec.name)!)) unread.push(family);
    }
    expect(unread).toEqual([]);
  });

  it('every instrument of every documented definition is read, or opt-in', () => {
    const all = instruments(DOCUMENTED);
    const everyReader = metricReaders(all);
    expect(all.length).toBeGreaterThan(60);
    const unread = all
      .filter((spec) => !Object.hasOwn(OPT_IN_METRICS, spec.name) && !Object.hasOwn(OPT_IN_BY_CONVENTION, spec.name))
      .filter((spec) => !isRead(everyReader.get(spec.name)!))
      .map((spec) => spec.name);
    expect(unread, 'read it (a rule, a panel, a manifest, a runbook step) or list it in core/src/opt-in.ts').toEqual(
      [],
    );
  });

  it('counts a generated Kubernetes manifest as a reader', () => {
    // The KEDA trigger and the endpoint picker read the KV-cache utilization; no rule or panel does.
    const kv = readers.get(METRICS.kvCacheUtilization.name)!;
    expect(kv.kubernetes).toEqual(expect.arrayContaining(['keda-scaledobject.yaml', 'inference-pool.yaml']));
    expect(kv.rules).toEqual([]);
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

describe('histogram boundaries', () => {
  it('each histogram has its boundaries in its own definition, and the exporters use that set', () => {
    const histograms = DOCUMENTED.flatMap((signal) =>
      Object.values(signal.metrics ?? {})
        .filter((spec) => spec.type === 'histogram')
        .map((spec) => ({ spec, set: signal.buckets?.[spec.name] })),
    );
    expect(histograms.length).toBeGreaterThan(8);
    for (const { spec, set } of histograms) {
      expect(set, `${spec.name}: no buckets in its definition`).toBeDefined();
      expect(HISTOGRAM_BUCKETS[spec.name], spec.name).toBe(set);
    }
  });
});

describe('queue-wait buckets against what reads them', () => {
  const thresholds = resolveThresholds({}, 'thresholds', SIGNALS) as unknown as {
    queue: { waitWarnSeconds: number; waitCriticalSeconds: number };
    saturation: { timeToFirstTokenSeconds: number };
  };
  const queueWait = HISTOGRAM_BUCKETS[METRICS.queueWait.name]!;

  it('has a boundary at each default bound a rule, the HPA or KEDA compares a quantile with', () => {
    // A boundary at the bound makes `quantile > bound` exact: the quantile leaves the bucket below it
    // exactly when more than its share of the observations lie above the bound.
    const bounds = [
      thresholds.queue.waitWarnSeconds, // InferSignalQueueWaitHigh's value, the HPA's per-pod P95 target
      thresholds.queue.waitCriticalSeconds,
      queueSignal.ruleOptions!.tailSeconds!.default, // InferSignalQueueWaitTailHigh
    ];
    expect(bounds).toEqual([0.2, 0.5, 0.3]);
    for (const bound of bounds) expect(queueWait, `${bound} s`).toContain(bound);
    expect(HISTOGRAM_BUCKETS[METRICS.timeToFirstToken.name]).toContain(thresholds.saturation.timeToFirstTokenSeconds);
  });

  it('reads the P95 of waits spread around the HPA target within a tenth, as Prometheus interpolates', () => {
    // The HPA scales in proportion to the per-pod P95 over its target (waitWarnSeconds): waits of
    // 50–200 ms up to 0.1–1 s (five times the target) must read close to true.
    for (const [low, high] of [
      [0.05, 0.2],
      [0.05, 0.8],
      [0.1, 1],
    ] as const) {
      const waits = Array.from({ length: 1000 }, (_, i) => low + ((high - low) * (i + 0.5)) / 1000);
      const exact = waits[Math.ceil(0.95 * waits.length) - 1]!;
      const read = histogramQuantile(0.95, queueWait, waits);
      expect(Math.abs(read - exact) / exact, `${low}–${high} s: read ${read}, exact ${exact}`).toBeLessThan(0.1);
    }
  });
});

/** Prometheus' histogram_quantile over cumulative buckets of `values` at `boundaries`. */
function histogramQuantile(q: number, boundaries: readonly number[], values: number[]): number {
  const counts = boundaries.map((le) => values.filter((v) => v <= le).length);
  const rank = q * values.length;
  const i = counts.findIndex((c) => c >= rank);
  const lower = i === 0 ? 0 : boundaries[i - 1]!;
  const below = i === 0 ? 0 : counts[i - 1]!;
  return lower + ((boundaries[i]! - lower) * (rank - below)) / (counts[i]! - below);
}
