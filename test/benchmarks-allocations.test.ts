/**
 * The allocations tool's sampler (benchmarks/lib/allocations.ts), on this
 * process: a function here allocates a known number of arrays of known
 * size, each kept until the next replaces it (young garbage, like a
 * request's objects), and the profile must charge about that many bytes
 * to it by name, and to this file as its origin.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { allocatedBy, allocationSampler } from '../benchmarks/lib/allocations';

const ARRAYS = 20_000;
const DOUBLES = 100;
/** Where each array goes: kept, so V8 cannot remove the allocation, and replaced, so it dies young. */
const sink: number[][] = new Array(16);

function allocateArraysOfDoubles(): void {
  for (let i = 0; i < ARRAYS; i++) sink[i % sink.length] = new Array<number>(DOUBLES).fill(i + 0.5);
}

describe('allocation sampler', () => {
  it('charges young garbage to the function that allocated it, by name and by origin', async () => {
    const sampler = allocationSampler(64);
    sampler.start();
    allocateArraysOfDoubles();
    const { byFunction, byOrigin } = await sampler.stop();

    const file = fileURLToPath(import.meta.url);
    const own = [...byFunction].filter(([name]) => name.startsWith('allocateArraysOfDoubles ') && name.includes(file));
    expect(own).toHaveLength(1);
    // An array of 100 doubles is 800 bytes of elements, plus the headers of the array and its backing store.
    const perArray = own[0]![1] / ARRAYS;
    expect(perArray).toBeGreaterThan(DOUBLES * 8 * 0.95);
    expect(perArray).toBeLessThan(DOUBLES * 8 * 1.25);
    // The same bytes under the file's origin; both maps share one total.
    expect(byOrigin.get(file) ?? 0).toBeGreaterThanOrEqual(own[0]![1]);
    const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    expect(total(byOrigin)).toBe(total(byFunction));
  });

  it('names frames with no script by their V8 name, and origins by package', () => {
    const frame = (functionName: string, url: string, selfSize: number, children = [] as never[]) => ({
      callFrame: { functionName, url, lineNumber: 9 },
      selfSize,
      children,
    });
    const pnpm = 'file:///w/node_modules/.pnpm/fastify@5.12.8/node_modules/fastify/lib';
    const head = frame('(root)', '', 0, [
      frame('hookRunner', `${pnpm}/hooks.js`, 300),
      frame('(V8 API)', '', 40),
      frame('track', 'file:///w/packages/http/dist/index.js', 200),
    ] as never[]);
    const { byOrigin, byFunction } = allocatedBy(head);
    expect(Object.fromEntries(byOrigin)).toEqual({ fastify: 300, 'V8 (V8 API)': 40, '@infersignal/http': 200 });
    expect(
      byFunction.get('hookRunner file:///w/node_modules/.pnpm/fastify@5.12.8/node_modules/fastify/lib/hooks.js:10'),
    ).toBe(300);
  });
});
