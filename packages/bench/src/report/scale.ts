/** Linear and log scales with readable ticks, for hand-written SVG axes. */

export interface Scale {
  (value: number): number;
  ticks: number[];
  max: number;
}

/** 1, 2, 5 × 10^k at or above `value`. */
function niceCeil(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value * (1 - 1e-9)) return step * power;
  return 10 * power;
}

/** Maps [0, max] onto [bottom, top] (SVG y grows downwards). */
export function linearScale(max: number, bottom: number, top: number, tickCount = 4): Scale {
  const nice = niceCeil(max);
  const scale = ((v: number) => bottom - (Math.max(0, Math.min(v, nice)) / nice) * (bottom - top)) as Scale;
  scale.max = nice;
  scale.ticks = Array.from({ length: tickCount + 1 }, (_, i) => (nice * i) / tickCount);
  return scale;
}

/**
 * Decades from below `min` to above `max`. Latency spans 20 ms at rest to
 * seconds under overload: on a linear axis the healthy part is a flat line.
 */
export function logScale(min: number, max: number, bottom: number, top: number): Scale {
  const lo = 10 ** Math.floor(Math.log10(Math.max(min, 1e-3)));
  let hi = 10 ** Math.ceil(Math.log10(Math.max(max, lo * 10)));
  if (hi <= lo) hi = lo * 10;
  const span = Math.log10(hi) - Math.log10(lo);
  const scale = ((v: number) => {
    const clamped = Math.max(lo, Math.min(v, hi));
    return bottom - ((Math.log10(clamped) - Math.log10(lo)) / span) * (bottom - top);
  }) as Scale;
  scale.max = hi;
  scale.ticks = [];
  for (let t = lo; t <= hi * 1.0001; t *= 10) scale.ticks.push(t);
  return scale;
}

/** Ticks of the shared time axis: about `target` of them, at 1, 2, 5, 10 … seconds. */
export function timeTicks(domainSeconds: number, target = 10): number[] {
  const raw = domainSeconds / target;
  const step = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600].find((s) => s >= raw) ?? 3600;
  const out: number[] = [];
  for (let t = 0; t <= domainSeconds + 1e-9; t += step) out.push(t);
  return out;
}
