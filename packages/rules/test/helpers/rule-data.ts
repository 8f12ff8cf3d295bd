/**
 * "Every rule expression returns data", asked of a real Prometheus: each
 * comparison is made `bool` (`a > 0.2` → `a > bool 0.2`), so an expression
 * has a result whenever the series it names exist with matching labels,
 * whatever the thresholds; each is polled (recording rules need a few
 * evaluations, rate/deriv a few scrapes) up to a deadline.
 */
import type { RuleFile } from '@infersignal/rules';
import { waitFor } from './binaries';

export interface Rule {
  name: string;
  expr: string;
}

export type Query = (promql: string) => Promise<{ status: string; error?: string; data: { result: unknown[] } }>;

export function asBool(expr: string): string {
  return expr.replace(/(>=|<=|==|!=|>|<)\s*(?!bool\b)(-?\d[\d.]*(?:e[+-]?\d+)?)/g, '$1 bool $2');
}

export function rulesOf(file: RuleFile): Rule[] {
  return file.groups.flatMap((group) =>
    group.rules.map((rule) => ({ name: 'alert' in rule ? rule.alert : rule.record, expr: rule.expr })),
  );
}

/**
 * The parts of `A and on (…) B` asked on their own: each names series that
 * must exist. A detector-level side loses its signal matcher: a level
 * series exists only from that detector's first raise, which the exercise
 * does not cause for every signal; any level series proves the name. A
 * page held back behind another (`(…) unless on (…) ALERTS{…}`) is asked
 * without the hold: ALERTS has that series only while the other page fires.
 */
function dataParts(held: string): string[] {
  const expr = /^\((.*)\) unless on \([^)]*\) ALERTS\{[^}]*\}$/s.exec(held)?.[1] ?? held;
  return expr.split(/\s+and on \([^)]*\)\s+/).map((part) => part.replace(/\{infersignal_signal=~?"[^"]*"\}/, ''));
}

/** The rules whose (bool) expression, each part of it, still has no result after `timeoutMs`; throws on invalid PromQL. */
export async function rulesWithoutData(query: Query, rules: Rule[], timeoutMs = 30_000): Promise<string[]> {
  const empty: string[] = [];
  for (const rule of rules) {
    const result = await query(asBool(rule.expr));
    if (result.status !== 'success') throw new Error(`${rule.name}: ${asBool(rule.expr)}: ${result.error}`);
    for (const part of dataParts(rule.expr)) {
      const found = await waitFor(rule.name, timeoutMs, async () => {
        const result = await query(asBool(part));
        if (result.status !== 'success') throw new Error(`${rule.name}: ${asBool(part)}: ${result.error}`);
        return result.data.result.length > 0 ? true : undefined;
      }).catch((error: Error) => {
        if (error.message.startsWith(`${rule.name}:`)) throw error;
        return false;
      });
      if (!found) empty.push(`${rule.name}: ${asBool(part)}`);
    }
  }
  return empty;
}
