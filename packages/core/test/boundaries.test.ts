/**
 * Core's dependency boundary: `@opentelemetry/api` and Node's non-network
 * built-ins only. HTTP, sockets and TLS belong to `@infersignal/http`; SDK
 * packages to the application (or `@infersignal/node`). Checked on the
 * sources, and on the built files when `pnpm build` has run (as in `pnpm test`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const FORBIDDEN_BUILTINS = new Set(['http', 'https', 'http2', 'net', 'tls', 'dgram']);

function files(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && pattern.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Every module specifier a file imports, requires or re-exports (static and dynamic). */
function specifiers(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;
  for (const match of source.matchAll(pattern)) found.push(match[1]!);
  return found;
}

/** Why a specifier may not appear in core, or undefined when it may. */
function refused(specifier: string): string | undefined {
  if (specifier.startsWith('.')) return undefined;
  if (specifier === '@opentelemetry/api') return undefined;
  // The build writes built-ins without the `node:` prefix.
  const name = specifier.replace(/^node:/, '');
  if (builtinModules.includes(name))
    return FORBIDDEN_BUILTINS.has(name.split('/')[0]!) ? 'network built-in' : undefined;
  return 'package other than @opentelemetry/api';
}

function violations(paths: string[]): string[] {
  return paths.flatMap((path) =>
    specifiers(readFileSync(path, 'utf8'))
      .map((specifier) => [specifier, refused(specifier)] as const)
      .filter(([, why]) => why !== undefined)
      .map(([specifier, why]) => `${path.slice(root.length)}: ${specifier} (${why})`),
  );
}

describe("core's dependencies", () => {
  it('the scan finds what it looks for', () => {
    expect(specifiers(`import { x } from 'node:http';\nconst t = require("node:tls");\nexport * from './a';`)).toEqual([
      'node:http',
      'node:tls',
      './a',
    ]);
    expect(
      ['node:net', 'http', '@opentelemetry/sdk-metrics', 'node:perf_hooks', 'perf_hooks', './x'].map(refused),
    ).toEqual([
      'network built-in',
      'network built-in',
      'package other than @opentelemetry/api',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('sources import only @opentelemetry/api and non-network built-ins', () => {
    const sources = files(join(root, 'src'), /\.ts$/);
    expect(sources.length).toBeGreaterThan(20);
    expect(violations(sources)).toEqual([]);
  });

  it.skipIf(!existsSync(join(root, 'dist')))(
    'built files import only @opentelemetry/api and non-network built-ins',
    () => {
      const built = files(join(root, 'dist'), /\.(c?js|d\.c?ts)$/);
      expect(built.length).toBeGreaterThan(0);
      expect(violations(built)).toEqual([]);
    },
  );
});

/** The names an entry point exports (values and types), read from its source. */
function exportedNames(entry: string): string[] {
  const source = readFileSync(join(root, 'src', entry), 'utf8');
  const names: string[] = [];
  for (const match of source.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const part of match[1]!.split(',')) {
      const name = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)
        .pop()!
        .trim();
      if (name) names.push(name);
    }
  }
  expect(source).not.toMatch(/export\s+\*/);
  return names.sort();
}

describe("core's public surface", () => {
  it('the main entry is what applications call: 31 names, listed here so a new one is a decision', () => {
    const names = exportedNames('index.ts');
    expect(names).toEqual(
      [
        'ATTR',
        'AlertEvent',
        'AlertListener',
        'DeviceMemoryHandle',
        'HISTOGRAM_BUCKETS',
        'InferSignalConfigError',
        'InstrumentSpec',
        'Level',
        'METRICS',
        'ModelLoadError',
        'ModelLoadErrorInit',
        'ModelReleasedError',
        'Monitor',
        'MonitorOptions',
        'Outcome',
        'QueueFullError',
        'QueueOptions',
        'QueueTracker',
        'RequestEndedError',
        'SPANS',
        'SeriesCopy',
        'Snapshot',
        'StreamHandle',
        'StreamOutcome',
        'Thresholds',
        'ThresholdsInput',
        'Ticket',
        'createMonitor',
        'prometheusLabel',
        'prometheusName',
        'resolveThresholds',
      ].sort(),
    );
  });

  it('the signals entry holds the adapter-authoring API and nothing the main entry has', () => {
    const main = new Set(exportedNames('index.ts'));
    const signals = exportedNames('signals.ts');
    expect(signals).toEqual(expect.arrayContaining(['Signal', 'SignalContext', 'createRequestGate', 'ModelHost']));
    expect(signals.filter((name) => main.has(name))).toEqual([]);
  });
});
