/**
 * GPU sampling suite: runs benchmarks/gpu-sampling.ts (owned by the GPU
 * package: one NVML sample through koffi against the fake driver vs one
 * nvidia-smi-style fork of a script printing the same CSV) in its own
 * process, prints its output, and records it in docs/benchmarks.md.
 *
 *   pnpm bench:gpu             (tsx benchmarks/gpu.ts; FFI_SAMPLES, FORKS passed through)
 *
 * Goals (checked by gpu-sampling.ts, repeated here as this suite's
 * verdict): FFI sample ≤ 1/1000 of the fork's main-thread cost, and no
 * FFI sample blocks the event loop for more than 1 ms.
 */
// First: may run this suite again on the Node chosen with --node / BENCH_NODE.
import './lib/node-line';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CHILD_ENV, SMOKE } from './lib/env';
import { ROOT, printVerdict, writeSection, type Goal } from './lib/report';

const SCRIPT = fileURLToPath(new URL('./gpu-sampling.ts', import.meta.url));
const env = {
  ...CHILD_ENV,
  ...(SMOKE ? { FFI_SAMPLES: process.env.FFI_SAMPLES ?? '500', FORKS: process.env.FORKS ?? '10' } : {}),
};

const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number }>((resolve) => {
  execFile(
    process.execPath,
    ['--import', 'tsx', SCRIPT],
    { cwd: ROOT, env, maxBuffer: 16 * 2 ** 20, timeout: 300_000 },
    (error, out, err) =>
      resolve({ stdout: out, stderr: err, code: error ? ((error as { code?: number }).code ?? 1) : 0 }),
  );
});
process.stdout.write(stdout);
if (stderr.trim()) process.stderr.write(stderr);
if (code !== 0 && !/^verdict:/m.test(stdout))
  throw new Error(`gpu-sampling.ts failed (exit ${code}): ${stderr.trim().split('\n').slice(-5).join('\n')}`);

const ratioMatch = /ratio FFI \/ fork = 1\/(\d+)/.exec(stdout);
const sampleMatch = /verdict: \w+ — FFI sample ([\d.]+) µs vs fork ([\d.]+) µs/.exec(stdout);
const blockedMatch = /event loop never blocked > 1 ms by the FFI path: (yes|no)/.exec(stdout);
if (!ratioMatch || !sampleMatch || !blockedMatch)
  throw new Error('gpu-sampling.ts output changed: could not find its ratio and verdict lines');
const inverse = Number(ratioMatch[1]);
const goals: Goal[] = [
  {
    text: `NVML FFI sample ${sampleMatch[1]} µs vs nvidia-smi fork ${sampleMatch[2]} µs of main thread = 1/${inverse}`,
    goal: '≤ 1/1000',
    met: inverse >= 1000,
  },
  {
    text: `event loop blocked > 1 ms by an FFI sample: ${blockedMatch[1] === 'yes' ? 'never' : 'yes'}`,
    goal: 'never',
    met: blockedMatch[1] === 'yes',
  },
];
const verdict = printVerdict('gpu', goals);

// The script's own table and lines, without its header and verdict (ours follows).
const body = stdout
  .split('\n')
  .filter((line) => !line.startsWith('verdict:'))
  .join('\n')
  .trim();
writeSection('gpu', {
  title: 'GPU sampling: one NVML sample (FFI) vs one nvidia-smi fork',
  command: 'pnpm bench:gpu',
  packages: ['koffi', '@infersignal/gpu'],
  method: `Runs \`benchmarks/gpu-sampling.ts\` (see its header for the method): the fake \`libnvidia-ml.so.1\` compiled from \`packages/gpu/test/fake-nvml\` on the FFI side, so the FFI figure is koffi + the sampler without a driver's ioctl time; a fake \`nvidia-smi\` script on the fork side, so the fork figure is the fork/exec and pipe handling alone (the real nvidia-smi adds tens of ms of NVML start-up, in the child).`,
  results: `Its output:

${body}`,
  verdict,
});
