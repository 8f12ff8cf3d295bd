// Setup file of the `unit` project, whose test files share worker processes
// (vitest `isolate: false`): a file that leaves an OpenTelemetry global
// registered would change what the next file in that process sees, so it
// fails here instead, naming what it left, and the next file starts clean.
import { afterAll } from 'vitest';
import { context, diag, metrics, propagation, trace } from '@opentelemetry/api';

const API_GLOBAL = Symbol.for('opentelemetry.js.api.1');

afterAll(() => {
  const slot = (globalThis as Record<symbol, Record<string, unknown> | undefined>)[API_GLOBAL] ?? {};
  const left = Object.keys(slot).filter((key) => key !== 'version');
  if (left.length === 0) return;
  metrics.disable();
  trace.disable();
  context.disable();
  propagation.disable();
  diag.disable();
  throw new Error(
    `the file left OpenTelemetry globals registered (${left.join(', ')}): shut down what it started, or start it with registerGlobals: false`,
  );
});
