/**
 * Renders the few Prometheus template forms the generated annotations use,
 * so promtool unit tests can state the exact expected annotation. The
 * number formats follow Prometheus's template functions (Go `%.4g`).
 */

/** Go's `%.4g` for the magnitudes alert values take (no exponent form needed here). */
function g4(value: number): string {
  return String(Number(value.toPrecision(4)));
}

function humanizeDuration(seconds: number): string {
  if (seconds === 0) return '0s';
  if (Math.abs(seconds) >= 1) {
    if (seconds < 0) throw new Error('humanizeDuration of a negative value is not needed by these tests');
    // Prometheus: whole days, hours, minutes and seconds from a minute up; 4 significant digits below.
    const whole = Math.trunc(seconds);
    const [d, h, m, s] = [
      Math.trunc(whole / 86_400),
      Math.trunc(whole / 3600) % 24,
      Math.trunc(whole / 60) % 60,
      whole % 60,
    ];
    if (d !== 0) return `${d}d ${h}h ${m}m ${s}s`;
    if (h !== 0) return `${h}h ${m}m ${s}s`;
    if (m !== 0) return `${m}m ${s}s`;
    return `${g4(seconds)}s`;
  }
  let value = seconds;
  let prefix = '';
  for (const p of ['m', 'u', 'n']) {
    if (Math.abs(value) >= 1) break;
    prefix = p;
    value *= 1000;
  }
  return `${g4(value)}${prefix}s`;
}

function humanizePercentage(ratio: number): string {
  return `${g4(ratio * 100)}%`;
}

/**
 * Expands `{{ $labels.x }}`, `{{ $value | fn }}`, `{{ printf "%.Nf" $value }}` and a listed query result;
 * a label the alert lacks is an error (it would render empty).
 */
export function render(
  template: string,
  labels: Record<string, string>,
  value?: number,
  /** The instances a `{{ range $i, $r := … | query … }}` lists, in order (comma-separated when rendered). */
  queried?: string[],
): string {
  const listed = template.replace(
    /\{\{ range \$i, \$r := printf `[^`]*`[^}]*\| query [^}]*\}\}\{\{ if \$i \}\}, \{\{ end \}\}\{\{ \$r\.Labels\.instance \}\}\{\{ end \}\}/g,
    () => {
      if (queried === undefined) throw new Error('annotation lists a query result; pass the expected instances');
      return queried.join(', ');
    },
  );
  const fixed = listed.replace(/\{\{\s*printf\s+"%\.(\d)f"\s+\$value\s*\}\}/g, (_match, digits: string) => {
    if (value === undefined) throw new Error('annotation uses $value; pass the expected value');
    return value.toFixed(Number(digits));
  });
  return fixed.replace(
    /\{\{\s*\$(labels\.(\w+)|value)(?:\s*\|\s*(\w+))?\s*\}\}/g,
    (_match, _what, label: string | undefined, fn: string | undefined) => {
      if (label !== undefined) {
        if (!(label in labels)) throw new Error(`annotation uses label "${label}" the alert does not carry`);
        return labels[label];
      }
      if (value === undefined) throw new Error('annotation uses $value; pass the expected value');
      if (fn === 'humanizeDuration') return humanizeDuration(value);
      if (fn === 'humanizePercentage') return humanizePercentage(value);
      if (fn === undefined) return String(value);
      throw new Error(`template function ${fn} not supported by the test renderer`);
    },
  );
}
