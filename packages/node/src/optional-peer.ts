/**
 * Optional peer dependencies: the OTLP exporters (and gRPC's grpc-js under
 * them) weigh more than the rest of the SDK together, and most apps never
 * turn OTLP on. They are looked up when OTLP is configured (synchronously,
 * so `start()` can name the missing package at once) and loaded by a dynamic
 * `import()` the exporter wrappers wait for.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The OTLP exporter packages, by signal and protocol. */
export const OTLP_PACKAGES = {
  metrics: {
    'http/protobuf': '@opentelemetry/exporter-metrics-otlp-proto',
    grpc: '@opentelemetry/exporter-metrics-otlp-grpc',
  },
  traces: {
    'http/protobuf': '@opentelemetry/exporter-trace-otlp-proto',
    grpc: '@opentelemetry/exporter-trace-otlp-grpc',
  },
} as const;

/** True when `name` can be imported from this package (checked without loading it). */
export function isInstalled(name: string, resolve: (id: string) => string = require.resolve): boolean {
  try {
    resolve(name);
    return true;
  } catch {
    return false;
  }
}

/** The one line a missing optional peer is reported with. */
export function missingPeerMessage(name: string, what: string): string {
  return `${what} needs ${name}, which is not installed: npm install ${name}`;
}
