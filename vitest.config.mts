import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Tests run against the packages' sources, so `pnpm test` needs no build
// step to see a change; the build is checked separately by `pnpm build`.
// Each package's index, and each `exports` subpath built from a source of
// its own (`@infersignal/core/signals` → packages/core/src/signals.ts).
const packagesDir = fileURLToPath(new URL('./packages/', import.meta.url));
const alias = readdirSync(packagesDir).flatMap((name) => {
  const dir = `${packagesDir}${name}`;
  const manifest = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8')) as { exports?: Record<string, unknown> };
  const subpaths = Object.keys(manifest.exports ?? {})
    .filter((key) => key !== '.' && existsSync(`${dir}/src/${key.slice(2)}.ts`))
    .map((key) => ({ find: `@infersignal/${name}/${key.slice(2)}`, replacement: `${dir}/src/${key.slice(2)}.ts` }));
  return [...subpaths, { find: new RegExp(`^@infersignal/${name}$`), replacement: `${dir}/src/index.ts` }];
});

/**
 * Files that spend seconds of wall time on real processes or real load.
 * They form their own project so they are handed to workers before the unit
 * files (projects are queued by name) and overlap with them.
 */
const E2E = [
  'test/benchmarks-smoke.test.ts',
  'test/report-browser.test.ts',
  'test/reliability/collector.test.ts',
  'packages/rules/test/e2e-prometheus.test.ts',
  'packages/node/test/failure.test.ts',
];
/**
 * Files whose story is told in real time, in tens of milliseconds: 20 ms
 * handlers ramped past capacity (the order of the alerts and the first
 * failure), event-loop stalls against a 100 ms threshold, a 50 ms gRPC
 * deadline, and the demo, which measures its server's capacity and then
 * ramps to multiples of it. A process paused by its neighbours changes that
 * story, so each runs alone after the rest: then the only contention is the
 * machine's own.
 */
const SERIAL = [
  'test/demo.test.ts',
  'test/capacity-e2e.test.ts',
  'packages/bench/test/open-loop.test.ts',
  'packages/core/test/event-loop.test.ts',
  'packages/grpc/test/grpc.test.ts',
];

// Most test files wait on sockets, timers or child processes part of the
// time: one worker more than there are cores keeps the cores busy.
const workers = availableParallelism() + 1;

/** TensorFlow.js's pure-JS CPU backend greets each process that uses it with a banner about tfjs-node. */
const TFJS_BANNER = 'Hi, looks like you are running TensorFlow.js in Node.js';

export default defineConfig({
  resolve: { alias },
  test: {
    onConsoleLog: (log) => !log.includes(TFJS_BANNER),
    // Time limits catch a test that hangs; no assertion rests on them, so they leave a loaded machine room.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: workers,
    projects: [
      { extends: true, test: { name: 'e2e', include: E2E } },
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [...E2E, ...SERIAL, '**/node_modules/**'],
          // In-process tests share worker processes: loading the OTel SDK, the frameworks and the runtimes once
          // per worker instead of once per file halves this project's time. What a file must not leave behind
          // for the next one is checked after each file.
          isolate: false,
          setupFiles: ['test/support/shared-worker.ts'],
        },
      },
      { extends: true, test: { name: 'serial', include: SERIAL, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
