#!/usr/bin/env node
/**
 * `pnpm test`: lint and build side by side, then vitest, with the
 * typecheck beside all of it at the lowest CPU priority. The build starts
 * with core's declarations alone (every other package waits for them),
 * which leaves a core free for the lint; the unit and end-to-end files keep
 * the cores busy, while the real-time files that run last
 * (vitest.config.mts) leave one of them mostly idle: the typecheck takes
 * the CPU these leave instead of half a minute of its own, and never takes
 * a core from a test that judges time. On a machine whose every core is
 * busy anyway, the lowest priority gets next to nothing: a typecheck still
 * running when vitest ends is started again at normal priority (a process
 * may not raise its own priority back). A failed lint or build stops the
 * run before vitest, as `pnpm lint && pnpm build` would; the lint's output
 * follows the build's. Exits non-zero when any step fails; the typecheck's
 * output follows vitest's, and a last line says how long each step took.
 */
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';

const LOWEST_PRIORITY = 19;

function run(command, args, { quietUntilDone }) {
  const child = spawn(command, args, { stdio: quietUntilDone ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
  let output = '';
  if (quietUntilDone) {
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
  }
  const done = new Promise((resolve) => {
    child.on('error', (error) => resolve({ code: 1, output: `${command}: ${error.message}\n` }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
  return { child, done };
}

const TYPECHECK = ['-p', 'tsconfig.json', '--noEmit'];
const started = performance.now();
const seconds = (from, to = performance.now()) => `${((to - from) / 1000).toFixed(0)} s`;

const lowPriority = run('tsc', TYPECHECK, { quietUntilDone: true });
try {
  setPriority(lowPriority.child.pid, LOWEST_PRIORITY);
} catch {
  // Not permitted here (or no pid after a failed spawn): it runs at normal priority.
}
let lowPriorityEnded = false;
lowPriority.done.then(() => {
  lowPriorityEnded = true;
});

const lint = run('pnpm', ['lint'], { quietUntilDone: true });
const build = run('pnpm', ['build'], { quietUntilDone: false });
const [linted, built] = await Promise.all([lint.done, build.done]);
process.stdout.write(`\nlint (pnpm lint): ${linted.code === 0 ? 'passed' : 'FAILED'}\n${linted.output}`);
if (linted.code !== 0 || built.code !== 0) {
  lowPriority.child.kill();
  await lowPriority.done;
  process.exit(linted.code !== 0 ? linted.code : built.code);
}

const builtAt = performance.now();
const tests = await run('vitest', ['run', ...process.argv.slice(2)], { quietUntilDone: false }).done;
const testedAt = performance.now();
let types;
if (lowPriorityEnded) types = await lowPriority.done;
else {
  lowPriority.child.kill();
  await lowPriority.done;
  process.stdout.write('\ntypecheck: still running after vitest at the lowest priority; again at normal priority\n');
  types = await run('tsc', TYPECHECK, { quietUntilDone: true }).done;
}
process.stdout.write(`\ntypecheck (tsc ${TYPECHECK.join(' ')}): ${types.code === 0 ? 'passed' : 'FAILED'}\n`);
if (types.code !== 0) process.stdout.write(types.output);
// Where the wall time went, for whoever keeps the command under its goal (README, Development).
process.stdout.write(
  `\npnpm test: ${seconds(started)}: lint and build ${seconds(started, builtAt)}, vitest ${seconds(builtAt, testedAt)}, typecheck after vitest ${seconds(testedAt)}\n`,
);
process.exit(tests.code !== 0 ? tests.code : types.code);
