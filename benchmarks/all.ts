/**
 * Every suite, one after another, each in its own process on the same Node
 * (its arguments, `--node 24` included, passed to each):
 *
 *   pnpm bench                 (tsx benchmarks/all.ts; pnpm bench --node 24)
 *
 * Stops at the first suite that fails. install-size runs only on its own
 * command (see LEFT_OUT).
 */
// First: may run this again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CHILD_ENV } from './lib/env';
import { ROOT, SUITES } from './lib/report';

/** Left out: it installs from the npm registry, and has its own command (`pnpm bench:install-size`). */
const LEFT_OUT: readonly string[] = ['install-size'];

for (const suite of SUITES.filter((s) => !LEFT_OUT.includes(s))) {
  console.log(`\n=== ${suite} (Node ${process.versions.node})`);
  const file = fileURLToPath(new URL(`./${suite}.ts`, import.meta.url));
  const result = spawnSync(process.execPath, ['--import', 'tsx', file, ...process.argv.slice(2)], {
    cwd: ROOT,
    stdio: 'inherit',
    env: CHILD_ENV,
  });
  if (result.status !== 0) {
    console.error(`suite ${suite} failed (exit ${result.status ?? result.signal})`);
    process.exit(result.status ?? 1);
  }
}
