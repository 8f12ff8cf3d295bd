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

/** A goal's ratios (one per round, or per set of processes), their median, and its 90 % bootstrap interval. */
export interface Judged {
  ratios: number[];
  median: number;
  low: number;
  high: number;
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

/**
 * The median of `ratios` (one per round, or per set) and the 5th and 95th
 * percentiles of the medians of `resamples` resamples of them: a 90 %
 * interval for the median, seeded by the count so the same ratios give the
 * same interval.
 */
export function judge(ratios: readonly number[], resamples = 2000): Judged {
  const random = seeded(ratios.length);
  const medians: number[] = [];
  const draw = new Array<number>(ratios.length);
  for (let r = 0; r < resamples; r++) {
    for (let i = 0; i < ratios.length; i++) draw[i] = ratios[Math.floor(random() * ratios.length)]!;
    medians.push(spread(draw).median);
  }
  medians.sort((a, b) => a - b);
  const at = (q: number) => medians[Math.min(medians.length - 1, Math.floor(q * medians.length))]!;
  return { ratios: [...ratios], median: spread(ratios).median, low: at(0.05), high: at(0.95) };
}

/** Fewer ratios than this, and a bootstrap interval is too narrow to trust: verdictOf() says `undecided`. */
export const MIN_JUDGED = 6;

/** `met`, `NOT met` or `undecided`, by where `limit` falls against the interval (undecided below MIN_JUDGED ratios). */
export function verdictOf(judged: Judged, limit: number): 'met' | 'NOT met' | 'undecided' {
  if (judged.ratios.length < MIN_JUDGED) return 'undecided';
  return judged.high <= limit ? 'met' : judged.low > limit ? 'NOT met' : 'undecided';
}
