/**
 * Case 14, long version: 1 000 000 requests (or argv[2]) through the
 * instrumented in-process path, heap after GC printed every 100 000, and
 * an exit code of 1 when the heap after GC ends more than 4 MiB above the
 * heap after 10 000 requests (or a scrape lost a request).
 *
 *   node --import tsx test/reliability/soak.ts            # 1 000 000 requests
 *   node --import tsx test/reliability/soak.ts 200000     # shorter
 *
 * Run from the repository root (tsx resolves @infersignal/* through tsconfig paths).
 */
import { MiB } from './helpers';
import { soak } from './soak-path';

const requests = Number(process.argv[2] ?? 1_000_000);
const BOUND = 4 * MiB;
const mib = (bytes: number): string => (bytes / MiB).toFixed(2);

const result = await soak(requests, 100_000, (n, heap) =>
  console.log(`${n.toString().padStart(9)} requests  heap after GC ${mib(heap)} MiB`),
);
const growth = result.heapAtEnd - result.heapAt10k;
console.log(
  JSON.stringify({
    requests: result.requests,
    seconds: Number(result.seconds.toFixed(1)),
    requestsPerSecond: Math.round(result.requests / result.seconds),
    heapAt10kMiB: Number(mib(result.heapAt10k)),
    heapAtEndMiB: Number(mib(result.heapAtEnd)),
    growthMiB: Number(mib(growth)),
    boundMiB: BOUND / MiB,
    scrapedRequests: result.scrapedRequests,
    spansExported: result.spansExported,
  }),
);
if (growth > BOUND || result.scrapedRequests !== requests) {
  console.error(
    `soak FAILED: heap grew ${mib(growth)} MiB (bound ${mib(BOUND)} MiB), scraped ${result.scrapedRequests} of ${requests} requests`,
  );
  process.exitCode = 1;
}
