import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderAlertTable, renderMetricsDoc } from '../scripts/metrics-doc';
import { IN_PROCESS_ONLY, NOTES, renderThresholdTable, thresholdFeeds } from '../scripts/threshold-feeds';
import { resolveThresholds } from '../packages/core/src/index';
import { defineSignal } from '../packages/core/src/definition';
import { METRICS } from '@infersignal/core';
import { SIGNALS } from '@infersignal/core/signals';

describe('docs', () => {
  it('docs/metrics.md is generated from the signal definitions and names.ts and up to date (run `pnpm docs:metrics`)', () => {
    const committed = readFileSync(new URL('../docs/metrics.md', import.meta.url), 'utf8');
    expect(committed).toBe(renderMetricsDoc());
    for (const spec of Object.values(METRICS)) expect(committed).toContain(`\`${spec.name}\``);
  });

  it("docs/rules.md's alert table is generated from the signal definitions and up to date (run `pnpm docs:metrics`)", () => {
    const committed = readFileSync(new URL('../docs/rules.md', import.meta.url), 'utf8');
    const table = renderAlertTable();
    expect(committed).toContain(table);
    const alerts = SIGNALS.flatMap((signal) => signal.alerts ?? []);
    expect(table.split('\n').filter((line) => line.startsWith('| [InferSignal'))).toHaveLength(alerts.length);
  });

  describe("docs/rules.md's threshold table is generated from the code (run `pnpm docs:metrics`)", () => {
    const table = renderThresholdTable();
    const rows = table.split('\n').filter((line) => line.startsWith('| `'));

    it('is the committed one', () => {
      expect(readFileSync(new URL('../docs/rules.md', import.meta.url), 'utf8')).toContain(table);
    });

    it('names every threshold field once: a row of what it feeds, or the in-process list', () => {
      const thresholds = resolveThresholds({}) as unknown as Record<string, Record<string, unknown>>;
      const fields = Object.entries(thresholds).flatMap(([group, values]) =>
        Object.keys(values).map((field) => `${group}.${field}`),
      );
      expect(fields.length).toBeGreaterThan(50);
      const inProcess = table.split('\n').find((line) => line.startsWith('| in process only |')) ?? '';
      for (const field of fields) {
        const named =
          rows.filter((row) => row.startsWith(`| \`${field}\``)).length + (inProcess.includes(`\`${field}\``) ? 1 : 0);
        expect(named, field).toBe(1);
      }
      expect(rows.length + Object.keys(IN_PROCESS_ONLY).length).toBe(fields.length);
      expect(Object.keys(NOTES).every((key) => fields.includes(key))).toBe(true);
    });

    it('finds what a field feeds by changing it: values, holds, recorded series, panels and manifests', () => {
      const feeds = thresholdFeeds();
      const alerts = (key: string) =>
        Object.fromEntries([...(feeds.get(key)?.alerts ?? [])].map(([a, p]) => [a, [...p].sort()]));
      // A value in the expression and the text; the in-process level's bound only in the text.
      expect(alerts('heap.liveWarn')).toEqual({ HeapLiveHigh: ['description', 'expression'] });
      expect(alerts('queue.waitWarnSeconds')).toEqual({ QueueWaitHigh: ['description'] });
      expect(alerts('capacity.keepFiringSeconds')).toEqual({
        CapacityUtilizationHigh: ['`keep_firing_for:`'],
        CapacityUtilizationCritical: ['`keep_firing_for:`'],
        TimeToSaturationLow: ['`keep_firing_for:`'],
      });
      expect(feeds.get('queue.waitQuantile')?.recorded).toBe(true);
      expect([...(feeds.get('saturation.queueDepthThreshold')?.manifests ?? [])]).toContain('keda-scaledobject.yaml');
      expect([...(feeds.get('heap.liveWarn')?.panels ?? [])]).toEqual(['Live heap after major GC / limit']);
      expect(feeds.get('glitch.deltaSeconds')?.alerts.size).toBe(0);
    });

    it('fails on a threshold that feeds nothing documented', () => {
      const extra = defineSignal({
        name: 'docs_extra',
        thresholds: {
          group: 'docsExtra',
          fields: { unused: { default: 1, accepts: { type: 'number', min: 0, max: 10 } } },
        },
      });
      expect(() => renderThresholdTable([...SIGNALS, extra])).toThrow(
        /docsExtra\.unused: no doc comment[\s\S]*docsExtra\.unused: feeds no rule, panel or manifest/,
      );
    });
  });
});
