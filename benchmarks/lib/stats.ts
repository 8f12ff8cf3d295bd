/** Medians, spreads and ratios of interleaved rounds. */

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface Spread {
  median: number;
  min: number;
  max: number;
  /** First and third quartiles (interpolated). */
  q1: number;
  q3: number;
  n: number;
}

function quantile(sorted: readonly number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  return sorted[lo]! + (sorted[Math.ceil(at)]! - sorted[lo]!) * (at - lo);
}

export function spread(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    median: median(values),
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    q1: quantile(sorted, 0.25),
    q3: quantile(sorted, 0.75),
    n: values.length,
  };
}

/** From this many rounds on, the bracket shows the interquartile range: the full range of 20 short windows mostly shows the noisiest one. */
const IQR_FROM = 8;

function bracket(s: Spread, digits: number): string {
  return s.n >= IQR_FROM
    ? `IQR ${s.q1.toFixed(digits)}–${s.q3.toFixed(digits)}`
    : `${s.min.toFixed(digits)}–${s.max.toFixed(digits)}`;
}

/**
 * Per-round ratios: variant / baseline measured in the same round, so
 * machine noise that hits a whole round (hypervisor steal, a neighbour's
 * build) cancels instead of landing on one side.
 */
export function roundRatios(variant: readonly number[], baseline: readonly number[]): Spread {
  const ratios = variant.map((v, i) => v / baseline[i]!);
  return spread(ratios);
}

/** `1.23× (1.18–1.31)`, or `1.23× (IQR 1.20–1.26)` over many rounds. */
export function fmtRatio(s: Spread, digits = 2): string {
  return `${s.median.toFixed(digits)}× (${bracket(s, digits)})`;
}

/** `12.3 (11.9–13.0)` in the given unit. */
export function fmtSpread(s: Spread, digits = 1, unit = ''): string {
  const u = unit ? ` ${unit}` : '';
  return `${s.median.toFixed(digits)}${u} (${bracket(s, digits)})`;
}

/** Nanoseconds, µs or ms with 3 significant-ish digits. */
export function fmtNs(ns: number): string {
  if (ns < 1000) return `${ns.toFixed(0)} ns`;
  if (ns < 1e6) return `${(ns / 1000).toFixed(ns < 1e4 ? 2 : 1)} µs`;
  return `${(ns / 1e6).toFixed(2)} ms`;
}

export function fmtBytes(bytes: number): string {
  const abs = Math.abs(bytes);
  if (abs < 1024) return `${bytes.toFixed(0)} B`;
  if (abs < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
}

/** Rotates the order of tasks each round (A B C, B C A, C A B …) so none always runs first. */
export function rotate<T>(items: readonly T[], round: number): T[] {
  const k = round % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

/** mulberry32: a small seeded generator, so what a suite draws (an order, a resample) can be reproduced. */
export function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
