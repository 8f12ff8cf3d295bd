import { availableParallelism } from 'node:os';
import { relative } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { sourceAliases } from './test/support/source-aliases.mts';

const alias = sourceAliases();

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
  'packages/rules/test/e2e-fleet.test.ts',
  'packages/node/test/failure.test.ts',
  'test/llama-demo.test.ts',
  'test/demo-exit.test.ts',
  'test/heap-headroom-process.test.ts',
  // The rules CLI as child processes: every documented command, every bad flag.
  'test/rules-docs.test.ts',
  // Every command the docs show: the bench CLI's runs, the soak test, the GGUF generator.
  'test/docs-commands.test.ts',
  'test/bad-inputs.test.ts',
  'test/heap-leak-process.test.ts',
  // llama.cpp's log callback is process-wide: a Llama left by another file in a shared worker would take
  // the log lines that carry a failed load's reason. Each llama file gets a process of its own here.
  'test/llama-example.test.ts',
  'test/llama-protocol.test.ts',
  'test/llama-router.test.ts',
  'packages/llama/test/**/*.test.ts',
];
/**
 * Files whose story is told in real time, in tens of milliseconds: 20 ms
 * handlers ramped past capacity (the order of the alerts and the first
 * failure), event-loop stalls against a 100 ms threshold, a 50 ms gRPC
 * deadline, the demo's run, which measures its server's capacity and
 * then ramps to multiples of it, and the device-memory and GC-pressure fault
 * runs (an alert before the failure, none while healthy), and a fleet's
 * pages timed against its replicas' own warnings. A process paused
 * by its neighbours changes that story, so they run after the rest, two at
 * a time. The most a story then shares the machine with is one other story,
 * about what `under-load`'s busy neighbour per core is, which every one of
 * these files must pass under.
 */
const SERIAL = [
  'test/demo.test.ts',
  'test/capacity-e2e.test.ts',
  'packages/bench/test/open-loop.test.ts',
  'packages/core/test/event-loop.test.ts',
  'packages/grpc/test/grpc.test.ts',
  'test/fidelity.test.ts',
  // Fault scenarios: reload deadlines, stream shares, device memory and GC pauses judged in real time.
  'test/fidelity-faults.test.ts',
  'test/fidelity-device-gc.test.ts',
  // The fleet fidelity suite's short mode: two replicas at 0.6× of the capacity measured on them, one slowed,
  // Prometheus scraping every second, Alertmanager's pages timed against each replica's own WARN.
  'test/fidelity-fleet.test.ts',
];

/** Fastify plugin files that also run on Fastify 4 (project `fastify4`). */
const FASTIFY4 = [
  'packages/fastify/test/fastify.test.ts',
  'packages/fastify/test/shed-response.test.ts',
  'packages/fastify/test/majors.test.ts',
];

// Most test files wait on sockets, timers or child processes part of the
// time, and the longest ones (LONG_FIRST) mostly wait on the wall clock
// (a leak paced in MiB/s, Prometheus scraping every second) at a fraction
// of a core: two workers more than there are cores keep the cores busy
// while two of those wait side by side.
const workers = availableParallelism() + 2;

/**
 * Files that run for tens of seconds, longest first within each project.
 * Vitest runs the files it has timed before longest first; a fresh clone
 * has no such timings, and vitest then runs larger files first, which
 * starts some of these short files last, alone at the end of their phase
 * with the other workers idle. Only files vitest has not timed follow
 * this list; a file not listed runs after the listed ones of its project.
 */
const LONG_FIRST = [
  // serial
  'test/fidelity.test.ts',
  'test/fidelity-device-gc.test.ts',
  'test/fidelity-faults.test.ts',
  'test/demo.test.ts',
  'test/fidelity-fleet.test.ts',
  'test/capacity-e2e.test.ts',
  // e2e
  'test/benchmarks-smoke.test.ts',
  'test/heap-leak-process.test.ts',
  'test/heap-headroom-process.test.ts',
  'test/rules-docs.test.ts',
  'test/reliability/collector.test.ts',
  'test/docs-commands.test.ts',
  'packages/rules/test/e2e-prometheus.test.ts',
  'test/llama-demo.test.ts',
  'test/bad-inputs.test.ts',
  'test/report-browser.test.ts',
  'packages/llama/test/load.test.ts',
  'packages/rules/test/e2e-fleet.test.ts',
  // unit
  'packages/rules/test/e2e-series-at-zero.test.ts',
  'packages/grpc/test/write-stall.test.ts',
  'packages/rules/test/naming-prometheus.test.ts',
  'test/readme-snippets.test.ts',
];

class LongFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const untimed = (spec: TestSpecification) =>
      !this.ctx.cache.getFileTestResults(`${spec.project.name}:${relative(root, spec.moduleId)}`);
    const rank = (spec: TestSpecification) => {
      const at = untimed(spec) ? LONG_FIRST.indexOf(relative(root, spec.moduleId)) : -1;
      return at === -1 ? LONG_FIRST.length : at;
    };
    const at = new Map(sorted.map((spec, index) => [spec, index]));
    // Group order and project stay as vitest sorts them (its pool runs them in that order).
    return [...sorted].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        (a.project.name < b.project.name ? -1 : a.project.name > b.project.name ? 1 : 0) ||
        rank(a) - rank(b) ||
        at.get(a)! - at.get(b)!,
    );
  }
}

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
    sequence: { sequencer: LongFirst },
    projects: [
      { extends: true, test: { name: 'e2e', include: E2E } },
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
          // The SDK 3 leg runs on Node 24 with its own config (`pnpm test:sdk3`).
          exclude: [...configDefaults.exclude, ...E2E, ...SERIAL, 'test/otel-sdk3/**'],
          // In-process tests share worker processes: loading the OTel SDK, the frameworks and the runtimes once
          // per worker instead of once per file halves this project's time. What a file must not leave behind
          // for the next one is checked after each file.
          isolate: false,
          setupFiles: ['test/support/shared-worker.ts'],
        },
      },
      { extends: true, test: { name: 'serial', include: SERIAL, maxWorkers: 2, sequence: { groupOrder: 1 } } },
      {
        // The Fastify plugin's request path on Fastify 4 (the `fastify4` alias of fastify@4): the same files,
        // their `fastify` import resolved to it. The peer range allows both majors.
        extends: true,
        resolve: { alias: [{ find: /^fastify$/, replacement: 'fastify4' }] },
        test: {
          name: 'fastify4',
          include: FASTIFY4,
          provide: { fastifyMajor: 4 },
          isolate: false,
          setupFiles: ['test/support/shared-worker.ts'],
        },
      },
    ],
  },
});
