import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderAlertTable, renderMetricsDoc } from '../scripts/metrics-doc';
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
});
