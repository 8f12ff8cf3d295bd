/** Number formatting shared by the chart and the tables. */

export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  if (ms >= 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

/** Seconds since the run start, as a marker label shows them. */
export function formatAt(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 || i === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`;
}

function formatPercent(ratio: number): string {
  return `${(ratio * 100).toFixed(ratio < 0.1 ? 1 : 0)} %`;
}

export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return '-';
  if (Number.isInteger(n)) return String(n);
  if (Math.abs(n) >= 1000) return n.toFixed(0);
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(2).replace(/\.?0+$/, '') || '0';
}

export type ValueUnit = 'seconds' | 'ratio' | 'bytes' | 'count' | 'number';

export function formatValue(value: number, unit: ValueUnit): string {
  switch (unit) {
    case 'seconds':
      return formatMs(value * 1000);
    case 'ratio':
      return formatPercent(value);
    case 'bytes':
      return formatBytes(value);
    default:
      return formatNumber(value);
  }
}
