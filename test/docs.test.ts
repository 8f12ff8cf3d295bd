import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderMetricsDoc } from '../scripts/metrics-doc';
import { METRICS } from '@infersignal/core';

describe('docs', () => {
  it('docs/metrics.md is generated from names.ts and up to date (run `pnpm docs:metrics`)', () => {
    const committed = readFileSync(new URL('../docs/metrics.md', import.meta.url), 'utf8');
    expect(committed).toBe(renderMetricsDoc());
    for (const spec of Object.values(METRICS)) expect(committed).toContain(`\`${spec.name}\``);
  });
});
