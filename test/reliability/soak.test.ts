/**
 * Case 14 (short version): 50 000 requests through the instrumented
 * in-process path; the heap after GC stays within 2 MiB of the heap after
 * 10 000. The 1 000 000-request version is `test/reliability/soak.ts`.
 */
import { describe, expect, it } from 'vitest';
import { MiB, figure } from './helpers';
import { soak } from './soak-path';

const SOAK_BOUND_BYTES = 2 * MiB;

describe('case 14: memory soak (short)', () => {
  it('50 000 requests: heap after GC within 2 MiB of the heap after 10 000; every request scraped', async () => {
    const result = await soak(50_000);
    const growth = result.heapAtEnd - result.heapAt10k;
    figure('14 soak 50k', {
      requests: result.requests,
      heapAt10kMiB: result.heapAt10k / MiB,
      heapAtEndMiB: result.heapAtEnd / MiB,
      growthMiB: growth / MiB,
      maxCheckpointGrowthMiB: Math.max(...result.checkpoints.map(([, h]) => h - result.heapAt10k)) / MiB,
      spansExported: result.spansExported,
      seconds: result.seconds,
    });
    expect(result.scrapedRequests).toBe(50_000);
    expect(result.spansExported).toBeGreaterThan(0);
    expect(growth).toBeLessThan(SOAK_BOUND_BYTES);
  });
});
