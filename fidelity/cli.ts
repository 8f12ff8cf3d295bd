/** What the two fidelity mains (main.mts, fleet-main.mts) read from their environment and write alike. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** A positive integer from the environment, or undefined when unset. */
export function intEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${raw}`);
  return value;
}

/** A comma-separated list from the environment (empty when unset). */
export function listEnv(name: string): string[] {
  return (process.env[name] ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

/** Aborted on SIGINT or SIGTERM: a run stops its load and servers and still writes what it has. */
export function abortOnSignals(): AbortSignal {
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  process.once('SIGTERM', () => abort.abort());
  return abort.signal;
}

/** Writes a run's result as JSON under .tmp/fidelity/ and says where. */
export function saveResult(kind: string, result: { startedAt: string }): string {
  mkdirSync(`${ROOT}.tmp/fidelity`, { recursive: true });
  const json = `${ROOT}.tmp/fidelity/${kind}-${result.startedAt.replace(/[:.]/g, '-')}.json`;
  writeFileSync(json, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`JSON result: ${json}`);
  return json;
}
