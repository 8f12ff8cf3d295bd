import { describe, expect, it } from 'vitest';
import { countPublicNames, PUBLIC_NAME_LIMIT } from '../scripts/public-names';

// Reads the built declarations: `pnpm build` first (the README's test command builds before it tests).
describe('public surface', () => {
  const counts = countPublicNames();
  const total = counts.reduce((sum, entry) => sum + entry.names.length, 0);

  it('counts every entry point of every published package', () => {
    const specifiers = counts.map((entry) => entry.specifier);
    expect(specifiers).toContain('@infersignal/core');
    expect(specifiers).toContain('@infersignal/core/signals');
    expect(specifiers).toContain('@infersignal/rules');
    // Every entry point declares something: an empty count would mean the declarations were not read.
    for (const entry of counts) expect(entry.names.length, entry.specifier).toBeGreaterThan(0);
  });

  it(`stays at or under ${PUBLIC_NAME_LIMIT} names in all`, () => {
    const table = counts.map((entry) => `${entry.specifier}: ${entry.names.length}`).join('\n');
    expect(total, `public names per entry point:\n${table}`).toBeLessThanOrEqual(PUBLIC_NAME_LIMIT);
  });

  it('exports every type an exported function or class names in its parameters or result', () => {
    const unnamed = counts.flatMap((entry) => entry.unnamed.map((pair) => `${entry.specifier}: ${pair}`));
    expect(unnamed).toEqual([]);
  });

  it('names each value and type once per entry point', () => {
    for (const entry of counts) expect(new Set(entry.names).size, entry.specifier).toBe(entry.names.length);
  });
});
